// `--dtype bfloat16` loads dense F16 / F32 weights as BF16 (ModelLoadOptions::bf16_weights), as
// vLLM loads unquantized weights in the model dtype: the conversion itself (rounding, what is
// left alone, tied tensors), and whole models through it.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "backend/cpu/cpu_kernels.h"
#include "formats/safetensors.h"
#include "formats/safetensors_writer.h"
#include "golden_util.h"
#include "model/awq.h"
#include "model/causal_lm.h"
#include "model/layers/decoder.h"
#include "test_util.h"

namespace xinfer {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

Tensor F32Tensor(Shape shape, const std::vector<float>& values) {
  Tensor t = NewHostTensor(DType::kF32, std::move(shape));
  std::memcpy(t.data<float>(), values.data(), values.size() * 4);
  return t;
}

TEST(ConvertDenseWeightsToBf16Test, RoundsToNearestEvenAndLeavesTheRestAlone) {
  auto backend = CreateCpuBackend();
  // BF16 steps by 2^-7 above 1: 1 + 2^-8 and 1 + 3 x 2^-8 are ties, rounded to the even
  // neighbour (1 and 1 + 2^-6), not truncated.
  const std::vector<float> f32 = {
      1.0f + 1.0f / 256, 1.0f + 3.0f / 256, -2.5f, 1e-3f, 65504.0f, -0.0f, 3.14159f, 7.0f};
  Tensor embed = F32Tensor({2, 4}, f32);
  Tensor q = NewHostTensor(DType::kF16, {2, 4});
  for (int i = 0; i < 8; ++i) q.data<uint16_t>()[i] = F32ToF16(f32[i] * 0.5f);
  Tensor v = NewHostTensor(DType::kBF16, {2, 4});
  Tensor norm = F32Tensor({4}, {1, 2, 3, 4});

  DecoderWeights w;
  w.embed_tokens = Weight(embed);
  w.lm_head = Weight(embed);  // tied
  w.final_norm = norm;
  w.layers.resize(1);
  w.layers[0].q_proj = Weight(q);
  w.layers[0].v_proj = Weight(v);
  w.layers[0].input_norm = norm;

  EXPECT_EQ(ConvertDenseWeightsToBf16(w, *backend), 32u + 16u);  // the table once, q_proj
  ASSERT_EQ(w.embed_tokens.dense().dtype(), DType::kBF16);
  EXPECT_EQ(w.embed_tokens.dense().shape(), (Shape{2, 4}));
  EXPECT_TRUE(w.lm_head.SameStorage(w.embed_tokens)) << "the tied lm_head came apart";
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(w.embed_tokens.dense().data<uint16_t>()[i], F32ToBf16(f32[i])) << i;
    EXPECT_EQ(w.layers[0].q_proj.dense().data<uint16_t>()[i],
              F32ToBf16(F16ToF32(F32ToF16(f32[i] * 0.5f))))
        << i;
  }
  EXPECT_EQ(Bf16ToF32(w.embed_tokens.dense().data<uint16_t>()[0]), 1.0f);  // tie to even
  EXPECT_EQ(Bf16ToF32(w.embed_tokens.dense().data<uint16_t>()[1]), 1.0f + 4.0f / 256);
  // Already BF16, norms, and absent projections: untouched.
  EXPECT_EQ(w.layers[0].v_proj.dense().raw(), v.raw());
  EXPECT_EQ(w.final_norm.raw(), norm.raw());
  EXPECT_EQ(w.final_norm.dtype(), DType::kF32);
  EXPECT_EQ(w.layers[0].input_norm.raw(), norm.raw());
  EXPECT_TRUE(w.layers[0].k_proj.empty());
  // Nothing left to convert.
  EXPECT_EQ(ConvertDenseWeightsToBf16(w, *backend), 0u);
}

// Norm weights and biases become F32 at load whatever the checkpoint stored (the kernels read them
// as F32; converting them per call cost ~4 us per AWQ q/k/v projection): exact values, F32 ones
// and the projections untouched, absent ones still absent.
TEST(WidenVectorsToF32Test, NormsAndBiasesBecomeExactF32Copies) {
  const std::vector<float> values = {1.0f + 1.0f / 1024, -2.5f, 6.1e-5f, 65504.0f, -0.0f, 0.3f};
  Tensor f16 = NewHostTensor(DType::kF16, {6});
  Tensor bf16 = NewHostTensor(DType::kBF16, {6});
  for (int i = 0; i < 6; ++i) {
    f16.data<uint16_t>()[i] = F32ToF16(values[i]);
    bf16.data<uint16_t>()[i] = F32ToBf16(values[i]);
  }
  Tensor f32 = F32Tensor({6}, values);
  Tensor q = NewHostTensor(DType::kBF16, {6, 4});

  DecoderWeights w;
  w.final_norm = bf16;
  w.layers.resize(2);
  w.layers[0].input_norm = bf16;
  w.layers[0].q_bias = f16;
  w.layers[0].k_bias = f16;
  w.layers[0].post_attention_norm = f32;
  w.layers[0].q_proj = Weight(q);
  w.layers[1].v_bias = f16;
  w.layers[1].q_norm = bf16;

  EXPECT_EQ(WidenVectorsToF32(w), 6u * 6u);
  auto expect_f32 = [&](const Tensor& t, bool from_f16, const char* what) {
    ASSERT_EQ(t.dtype(), DType::kF32) << what;
    ASSERT_EQ(t.shape(), (Shape{6})) << what;
    for (int i = 0; i < 6; ++i) {
      const float want = from_f16 ? F16ToF32(F32ToF16(values[i])) : Bf16ToF32(F32ToBf16(values[i]));
      EXPECT_EQ(std::memcmp(&t.data<float>()[i], &want, 4), 0) << what << " " << i;
    }
  };
  expect_f32(w.final_norm, false, "final_norm");
  expect_f32(w.layers[0].input_norm, false, "input_norm");
  expect_f32(w.layers[0].q_bias, true, "q_bias");
  expect_f32(w.layers[0].k_bias, true, "k_bias");
  expect_f32(w.layers[1].v_bias, true, "v_bias");
  expect_f32(w.layers[1].q_norm, false, "q_norm");
  EXPECT_EQ(w.layers[0].post_attention_norm.raw(), f32.raw()) << "an F32 tensor was copied";
  EXPECT_EQ(w.layers[0].q_proj.dense().raw(), q.raw()) << "a projection was touched";
  EXPECT_EQ(w.layers[0].q_proj.dense().dtype(), DType::kBF16);
  EXPECT_TRUE(w.layers[0].o_bias.empty());
  EXPECT_TRUE(w.layers[1].input_norm.empty());
  EXPECT_EQ(WidenVectorsToF32(w), 0u);  // nothing left
}

// Large enough that the conversion is split into chunks over the host threads.
TEST(ConvertDenseWeightsToBf16Test, ChunkedConversionCoversEveryElement) {
  auto backend = CreateCpuBackend();
  const int64_t rows = 3, cols = (int64_t{1} << 20) / 2 + 7;  // 1.5 chunks and a tail
  Tensor t = NewHostTensor(DType::kF32, {rows, cols});
  for (int64_t i = 0; i < rows * cols; ++i) t.data<float>()[i] = static_cast<float>(i) * 1.001f;
  DecoderWeights w;
  w.layers.resize(1);
  w.layers[0].down_proj = Weight(t);
  EXPECT_EQ(ConvertDenseWeightsToBf16(w, *backend), static_cast<size_t>(rows * cols * 4));
  const uint16_t* out = w.layers[0].down_proj.dense().data<uint16_t>();
  int64_t wrong = 0;
  for (int64_t i = 0; i < rows * cols; ++i) wrong += out[i] != F32ToBf16(t.data<float>()[i]);
  EXPECT_EQ(wrong, 0);
}

// tiny-qwen3 (BF16) written out as F32: under --dtype bfloat16 its weights are converted back to
// exactly the BF16 checkpoint's, so the logits are the BF16 model's bit for bit, in half the
// memory of the F32 weights; without the conversion they are not (F32 weights run the FP32
// kernels on unrounded activations).
TEST(Bf16WeightsTest, F32CopyOfABf16ModelRunsAsTheBf16Model) {
  XI_REQUIRE_SHARED("models/tiny-qwen3");
  const std::string src = testing::SharedDir() + "/models/tiny-qwen3";
  const std::string dir = ::testing::TempDir() + "/tiny-qwen3-f32";
  fs::remove_all(dir);
  fs::create_directories(dir);
  auto store = WeightStore::OpenDir(src);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  std::vector<TensorSpec> specs;
  for (const std::string& name : (*store)->Names()) {
    auto t = (*store)->Get(name);
    ASSERT_TRUE(t.ok());
    ASSERT_EQ(t->dtype(), DType::kBF16) << name;
    specs.push_back({name, DType::kF32, t->shape()});
  }
  Status st = WriteSafetensors(
      dir, specs,
      [&](const TensorSpec& spec, int64_t first, int64_t count, uint8_t* out) {
        const uint16_t* in = (*(*store)->Get(spec.name)).data<uint16_t>() + first;
        for (int64_t i = 0; i < count; ++i) {
          const float f = Bf16ToF32(in[i]);
          std::memcpy(out + 4 * i, &f, 4);
        }
      },
      1ull << 40);
  ASSERT_TRUE(st.ok()) << st.ToString();
  json config = testing::ReadJson(src + "/config.json");
  config["torch_dtype"] = "float32";
  std::ofstream(dir + "/config.json") << config.dump();

  auto backend = CreateCpuBackend({.bf16_activations = true});
  auto bf16 = LoadCausalLM(src, *backend, {.bf16_weights = true});
  auto converted = LoadCausalLM(dir, *backend, {.bf16_weights = true});
  auto f32 = LoadCausalLM(dir, *backend);
  ASSERT_TRUE(bf16.ok() && converted.ok() && f32.ok());
  const std::vector<int32_t> ids = {9707, 11, 1879, 0, 3555, 374, 279, 6722};
  const auto want = testing::LastLogits(**bf16, *backend, ids);
  const auto got = testing::LastLogits(**converted, *backend, ids);
  ASSERT_EQ(got.size(), want.size());
  EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * 4), 0)
      << "max |diff| " << testing::MaxAbsDiff(got, want);
  // Where vdpbf16ps runs BF16 weights (activations rounded to BF16), F32 ones run on F32 x; on
  // other CPUs both are F32 FMAs over the same values.
  const auto unconverted = testing::LastLogits(**f32, *backend, ids);
  if (cpu::DetectCpuFeatures().avx512_bf16) {
    EXPECT_GT(testing::MaxAbsDiff(unconverted, want), 0) << "F32 weights ran as BF16 unasked";
  }
  EXPECT_LT(testing::MaxAbsDiff(unconverted, want), 0.1);

  // Held bytes: the matrices at 2 bytes per element; only the F32 norms stay larger.
  EXPECT_LT((*converted)->weight_bytes(), (*f32)->weight_bytes() * 51 / 100);
  EXPECT_LE((*bf16)->weight_bytes(), (*converted)->weight_bytes());
  EXPECT_EQ((*converted)->num_parameters(), (*f32)->num_parameters());
  fs::remove_all(dir);
}

// AWQ: the F16 embedding table and its tied lm_head become one BF16 table (still tied: the held
// bytes do not grow); the 4-bit projections are kept; the logits stay within the BF16-weights
// tolerance of the reference.
TEST(Bf16WeightsTest, AwqKeepsItsCodesAndItsTiedTable) {
  XI_REQUIRE_SHARED("models/tinystories-656k-awq");
  XI_REQUIRE_SHARED("golden/logits/tinystories-656k-awq/golden.json");
  const std::string path = testing::SharedDir() + "/models/tinystories-656k-awq";
  auto backend = CreateCpuBackend({.bf16_activations = true});
  auto model = LoadCausalLM(path, *backend, {.bf16_weights = true});
  auto stored = LoadCausalLM(path, *backend);
  ASSERT_TRUE(model.ok() && stored.ok());
  EXPECT_EQ((*model)->weight_bytes(), (*stored)->weight_bytes());
  const double diff = testing::ExpectMatchesGolden(
      **model, *backend, testing::SharedDir() + "/golden/logits/tinystories-656k-awq",
      testing::kBf16ActivationLogitTolerance, testing::kBf16ActivationGapThreshold,
      testing::kBf16WeightsRelativeTolerance, DType::kBF16);
  // The table's F16 values are nearly all BF16 values already: what changes is the lm_head's
  // kernel, vdpbf16ps on BF16 x where the CPU has it.
  const std::vector<int32_t> ids = {1, 415, 1471, 316, 264, 1107};
  if (cpu::DetectCpuFeatures().avx512_bf16) {
    EXPECT_GT(testing::MaxAbsDiff(testing::LastLogits(**model, *backend, ids),
                                  testing::LastLogits(**stored, *backend, ids)),
              0)
        << "the F16 table was not converted";
  }
  std::printf("tinystories-656k-awq, BF16 weights and activations: max |logit - ref| %.4f\n", diff);
}

}  // namespace
}  // namespace xinfer
