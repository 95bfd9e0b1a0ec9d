// The roofline model `bench offline` and `doctor --measure` divide by: which compute peak a model
// runs at (F32 FMA, BF16 dot, INT8 dot) and the rooflines that peak gives.
#include "cli/perf_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "backend/cpu/cpu_kernels.h"
#include "formats/gguf.h"
#include "formats/gguf_writer.h"
#include "formats/safetensors_writer.h"

namespace xinfer {
namespace {

ModelCost CostOf(const std::string& dtype) {
  ModelCost c;
  c.dtype = dtype;
  c.decode_read_bytes = 300'000'000;
  c.linear_flops = 0.7e9;
  c.lm_head_flops = 0.3e9;
  return c;
}

TEST(PerfModelTest, Int8ActivationsRunQuantizedWeightsAtTheInt8Peak) {
  const cpu::CpuFeatures& f = cpu::DetectCpuFeatures();
  const bool vnni = f.avx512 && f.avx512_vnni;
  for (const char* dtype :
       {"Q4_0", "Q5_0", "Q4_1", "Q5_1", "Q8_0", "Q4_K", "Q5_K", "Q6_K", "AWQ4"}) {
    EXPECT_EQ(ComputePeakFor(CostOf(dtype), false, true),
              vnni ? ComputePeak::kInt8Dot : ComputePeakFor(CostOf(dtype), false, false))
        << dtype;
  }
  // Dense weights and formats without an int8 kernel keep their peak.
  for (const char* dtype : {"F32", "F16", "BF16", "Q2_K"})
    EXPECT_EQ(ComputePeakFor(CostOf(dtype), false, true),
              ComputePeakFor(CostOf(dtype), false, false))
        << dtype;
  EXPECT_EQ(ComputePeakFor(CostOf("F32"), false, false), ComputePeak::kF32Fma);
}

TEST(PerfModelTest, RooflinesUseThePeakAsked) {
  MachineLimits m;
  m.read_gb_s = 30;
  m.f32_gflop_s = 200;
  m.bf16_gflop_s = 400;
  m.int8_gop_s = 800;
  const ModelCost c = CostOf("Q4_0");
  const Roofline f32 = ComputeRoofline(c, m, 0, ComputePeak::kF32Fma);
  const Roofline int8 = ComputeRoofline(c, m, 0, ComputePeak::kInt8Dot);
  EXPECT_STREQ(f32.peak_name, "f32-fma");
  EXPECT_STREQ(int8.peak_name, "int8-dot");
  EXPECT_DOUBLE_EQ(f32.prefill_tok_s, 200e9 / 0.7e9);
  EXPECT_DOUBLE_EQ(int8.prefill_tok_s, 800e9 / 0.7e9);
  EXPECT_DOUBLE_EQ(int8.decode_tok_s_per_seq, 100.0);  // 30 GB/s / 300 MB
  // Batched decode: min(memory bound, compute bound over the projections and the lm_head).
  EXPECT_DOUBLE_EQ(BatchedDecodeRoofline(c, m, 64, 0, ComputePeak::kInt8Dot), 800.0);
  EXPECT_DOUBLE_EQ(BatchedDecodeRoofline(c, m, 4, 0, ComputePeak::kInt8Dot), 400.0);
  // No INT8 peak measured (a CPU without VNNI): the F32 one.
  m.int8_gop_s = 0;
  EXPECT_STREQ(ComputeRoofline(c, m, 0, ComputePeak::kInt8Dot).peak_name, "f32-fma");
}

// A model folder of `specs` (all zero) with `config` as its config.json.
void WriteZeroModel(const std::string& dir, const std::vector<TensorSpec>& specs,
                    const std::string& config) {
  ASSERT_TRUE(WriteSafetensors(
                  dir, specs,
                  [](const TensorSpec& spec, int64_t, int64_t count, uint8_t* out) {
                    std::memset(out, 0, count * DTypeSize(spec.dtype));
                  },
                  1ull << 30)
                  .ok());
  std::ofstream(dir + "/config.json") << config;
}

// `--dtype bfloat16` holds dense F16 / F32 matrices (and the embedding table, a tied lm_head) as
// BF16: 2 bytes per element in what is held and what decode reads. Norm weights and biases are
// held in F32 either way (WidenVectorsToF32): 4 bytes per element, whatever the file stores.
TEST(PerfModelTest, Bf16WeightsCountTwoBytesPerConvertedElement) {
  const std::string dir = ::testing::TempDir() + "/perf_model_bf16";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::vector<TensorSpec> specs = {
      {"model.embed_tokens.weight", DType::kF32, {16, 8}},
      {"model.layers.0.self_attn.q_proj.weight", DType::kF16, {8, 8}},
      {"model.layers.0.mlp.down_proj.weight", DType::kF32, {8, 8}},
      {"model.norm.weight", DType::kF32, {8}},
      {"model.layers.0.input_layernorm.weight", DType::kBF16, {8}},
      {"model.layers.0.self_attn.q_proj.bias", DType::kF16, {8}}};
  ASSERT_NO_FATAL_FAILURE(
      WriteZeroModel(dir, specs,
                     R"({"hidden_size": 8, "vocab_size": 16, "num_hidden_layers": 1,
             "num_attention_heads": 2})"));
  auto stored = ComputeModelCost(dir);
  auto held = ComputeModelCost(dir, DType::kF32, /*bf16_weights=*/true);
  ASSERT_TRUE(stored.ok() && held.ok()) << stored.status().ToString();
  EXPECT_EQ(stored->weight_bytes, 512u + 128u + 256u + 3 * 32u);
  EXPECT_EQ(held->weight_bytes, 256u + 128u + 128u + 3 * 32u);
  // Tied: the table is read as the lm_head.
  EXPECT_EQ(stored->decode_read_bytes, stored->weight_bytes);
  EXPECT_EQ(held->decode_read_bytes, held->weight_bytes);
  EXPECT_EQ(held->dtype, "BF16");
  EXPECT_NE(stored->dtype, "BF16");
  EXPECT_DOUBLE_EQ(held->linear_flops, stored->linear_flops);
  std::filesystem::remove_all(dir);
}

// A mixture-of-experts model holds every expert but a token reads (and multiplies by) only the
// ones it is routed to: 2 of 8 here.
TEST(PerfModelTest, ExpertsCountTheRoutedShareOfWhatDecodeReads) {
  const std::string dir = ::testing::TempDir() + "/perf_model_moe";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::vector<TensorSpec> specs = {{"model.embed_tokens.weight", DType::kBF16, {16, 8}},
                                   {"model.layers.0.self_attn.q_proj.weight", DType::kBF16, {8, 8}},
                                   {"model.layers.0.mlp.gate.weight", DType::kBF16, {8, 8}}};
  for (int e = 0; e < 8; ++e)
    specs.push_back({"model.layers.0.mlp.experts." + std::to_string(e) + ".down_proj.weight",
                     DType::kBF16,
                     {8, 4}});
  ASSERT_NO_FATAL_FAILURE(
      WriteZeroModel(dir, specs,
                     R"({"hidden_size": 8, "vocab_size": 16, "num_hidden_layers": 1,
             "num_attention_heads": 2, "num_experts": 8, "num_experts_per_tok": 2})"));
  auto cost = ComputeModelCost(dir);
  ASSERT_TRUE(cost.ok()) << cost.status().ToString();
  // Held: table 256, q_proj 128, router 128, experts 8 x 64.
  EXPECT_EQ(cost->weight_bytes, 256u + 128u + 128u + 8 * 64u);
  // Read per token: the same but 2 of the 8 experts.
  EXPECT_EQ(cost->decode_read_bytes, 256u + 128u + 128u + 2 * 64u);
  EXPECT_DOUBLE_EQ(cost->linear_flops, 2.0 * 64 + 2 * 2.0 * 32);
  EXPECT_EQ(cost->expert_bytes, 8 * 64u);
  // A batch of 4 reads each expert that any of its tokens picks: 1 - (3/4)^4 of them expected.
  MachineLimits m;
  m.read_gb_s = 1;
  m.f32_gflop_s = 1e9;  // memory bound
  const double expected = 4 * 1e9 / (512 + 8 * 64 * (1 - std::pow(0.75, 4)));
  EXPECT_NEAR(BatchedDecodeRoofline(*cost, m, 4, 0, ComputePeak::kF32Fma), expected,
              1e-6 * expected);
  std::filesystem::remove_all(dir);

  // The same model as a llama.cpp qwen3moe file: the experts stacked into one 3-D tensor, the
  // router F32 (and, being a Linear there too, counted in the flops).
  GgufWriter w;
  w.SetString("general.architecture", "qwen3moe");
  w.SetU32("qwen3moe.embedding_length", 8);
  w.SetU32("qwen3moe.block_count", 1);
  w.SetU32("qwen3moe.attention.head_count", 2);
  w.SetU32("qwen3moe.expert_count", 8);
  w.SetU32("qwen3moe.expert_used_count", 2);
  w.AddTensor("token_embd.weight", ggml::kBF16, {8, 16}, std::string(256, '\0'));
  w.AddTensor("blk.0.attn_q.weight", ggml::kBF16, {8, 8}, std::string(128, '\0'));
  w.AddTensor("blk.0.ffn_gate_inp.weight", ggml::kF32, {8, 8}, std::string(256, '\0'));
  w.AddTensor("blk.0.ffn_down_exps.weight", ggml::kBF16, {4, 8, 8}, std::string(512, '\0'));
  const std::string gguf = ::testing::TempDir() + "/perf_model_moe.gguf";
  ASSERT_TRUE(w.WriteFile(gguf).ok());
  cost = ComputeModelCost(gguf);
  ASSERT_TRUE(cost.ok()) << cost.status().ToString();
  EXPECT_EQ(cost->weight_bytes, 256u + 128u + 256u + 8 * 64u);
  EXPECT_EQ(cost->decode_read_bytes, 256u + 128u + 256u + 2 * 64u);
  EXPECT_DOUBLE_EQ(cost->linear_flops, 2.0 * 64 + 2.0 * 64 + 2 * 2.0 * 32);
  EXPECT_EQ(cost->expert_bytes, 8 * 64u);
  EXPECT_DOUBLE_EQ(cost->routed_share, 0.25);
  EXPECT_EQ(cost->dtype, "BF16");
  std::filesystem::remove(gguf);
}

}  // namespace
}  // namespace xinfer
