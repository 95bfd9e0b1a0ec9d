// LoRA adapters (model/lora.h) on the shared tiny models: an adapter run per sequence gives the
// logits of the model with the adapter merged into its weights (W + s B A, merged in double by
// the test), whatever else shares its batch; bad adapters are refused naming the culprit.
#include "model/lora.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "golden_util.h"
#include "lora_model_util.h"
#include "model/causal_lm.h"
#include "test_util.h"

namespace xinfer {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct Seq {
  std::vector<int32_t> ids;
  const LoraAdapter* lora = nullptr;
};

// One Forward over all `seqs` from position 0, each in blocks of its own: each one's last logits.
std::vector<std::vector<float>> RunBatch(CausalLM& model, const std::vector<Seq>& seqs) {
  constexpr int32_t kBlock = 16, kBlocksPerSeq = 4;
  PagedKvCache cache =
      model.NewKvCache(kBlocksPerSeq * static_cast<int32_t>(seqs.size()), kBlock, DType::kF32);
  ForwardBatch b;
  b.max_blocks_per_seq = kBlocksPerSeq;
  b.query_start.push_back(0);
  for (size_t s = 0; s < seqs.size(); ++s) {
    for (size_t p = 0; p < seqs[s].ids.size(); ++p) {
      b.token_ids.push_back(seqs[s].ids[p]);
      b.positions.push_back(static_cast<int32_t>(p));
      b.slot_mapping.push_back(static_cast<int32_t>(s * kBlocksPerSeq * kBlock + p));
    }
    b.query_start.push_back(static_cast<int32_t>(b.token_ids.size()));
    b.logits_rows.push_back(b.query_start.back() - 1);
    for (int32_t k = 0; k < kBlocksPerSeq; ++k)
      b.block_tables.push_back(static_cast<int32_t>(s) * kBlocksPerSeq + k);
    b.loras.push_back(seqs[s].lora);
  }
  const int64_t vocab = model.config().vocab_size;
  Tensor logits = NewHostTensor(DType::kF32, {static_cast<int64_t>(seqs.size()), vocab});
  Status st = model.Forward(b, cache, logits);
  EXPECT_TRUE(st.ok()) << st.ToString();
  std::vector<std::vector<float>> out;
  for (size_t s = 0; s < seqs.size(); ++s)
    out.emplace_back(logits.data<float>() + s * vocab, logits.data<float>() + (s + 1) * vocab);
  return out;
}

TEST(LoraTest, AdapterGivesTheMergedModelsLogitsWhateverShareItsBatch) {
  XI_REQUIRE_SHARED("models/tiny-qwen3");
  auto all = testing::WriteLoraAdapter("tiny-qwen3", {}, "all");
  auto some = testing::WriteLoraAdapter("tiny-qwen3",
                                        {.rank = 8,
                                         .alpha = 4,
                                         .rslora = true,
                                         .targets = {"q_proj", "v_proj", "down_proj"},
                                         .seed = 2},
                                        "some");
  auto backend = CreateCpuBackend();
  auto model = LoadCausalLM(testing::SharedDir() + "/models/tiny-qwen3", *backend);
  auto merged_all = LoadCausalLM(all.merged.string(), *backend);
  auto merged_some = LoadCausalLM(some.merged.string(), *backend);
  ASSERT_TRUE(model.ok() && merged_all.ok() && merged_some.ok());
  auto lora_all = LoadLoraAdapter(all.adapter.string(), (*model)->config(), 16, *backend);
  auto lora_some = LoadLoraAdapter(some.adapter.string(), (*model)->config(), 16, *backend);
  ASSERT_TRUE(lora_all.ok()) << lora_all.status().ToString();
  ASSERT_TRUE(lora_some.ok()) << lora_some.status().ToString();
  EXPECT_EQ((*lora_all)->rank, 4);
  EXPECT_EQ((*lora_some)->rank, 8);

  const std::vector<int32_t> a = {9707, 11, 1879, 0, 3555, 374, 279}, b = {785, 3974, 13876},
                             c = {40, 1079, 264, 1273, 11};
  const auto want_base = testing::LastLogits(**model, *backend, a);
  const auto want_all = testing::LastLogits(**merged_all, *backend, b);
  const auto want_some = testing::LastLogits(**merged_some, *backend, c);
  // The adapters move the logits well beyond the tolerance below.
  EXPECT_GT(testing::MaxAbsDiff(testing::LastLogits(**model, *backend, b), want_all), 0.05);
  EXPECT_GT(testing::MaxAbsDiff(testing::LastLogits(**model, *backend, c), want_some), 0.05);

  // Base, one adapter and the other in one batch (gathered rows), in two orders.
  auto got = RunBatch(**model, {{a}, {b, lora_all->get()}, {c, lora_some->get()}});
  EXPECT_LT(testing::MaxAbsDiff(got[0], want_base), 1e-5);
  EXPECT_LT(testing::MaxAbsDiff(got[1], want_all), 2e-3);
  EXPECT_LT(testing::MaxAbsDiff(got[2], want_some), 2e-3);
  got = RunBatch(**model, {{c, lora_some->get()}, {a}, {b, lora_all->get()}, {a}});
  EXPECT_LT(testing::MaxAbsDiff(got[0], want_some), 2e-3);
  EXPECT_LT(testing::MaxAbsDiff(got[1], want_base), 1e-5);
  EXPECT_LT(testing::MaxAbsDiff(got[2], want_all), 2e-3);
  EXPECT_LT(testing::MaxAbsDiff(got[3], want_base), 1e-5);
  // Every row with one adapter (no gather) and an adapter of B = 0 (the base exactly).
  got = RunBatch(**model, {{b, lora_all->get()}, {b, lora_all->get()}});
  EXPECT_LT(testing::MaxAbsDiff(got[0], want_all), 2e-3);
  EXPECT_EQ(got[0], got[1]);
  auto zero = testing::WriteLoraAdapter("tiny-qwen3", {.zero_b = true}, "zero");
  auto lora_zero = LoadLoraAdapter(zero.adapter.string(), (*model)->config(), 16, *backend);
  ASSERT_TRUE(lora_zero.ok());
  got = RunBatch(**model, {{a, lora_zero->get()}});
  EXPECT_EQ(got[0], want_base);
  for (const auto& f : {all, some, zero}) fs::remove_all(f.adapter.parent_path());
}

// Qwen2 (q/k/v biases: the delta adds to the biased projection) through the same check.
TEST(LoraTest, Qwen2AdapterGivesTheMergedModelsLogits) {
  XI_REQUIRE_SHARED("models/tiny-qwen2");
  auto f = testing::WriteLoraAdapter("tiny-qwen2", {.rank = 2, .alpha = 16}, "qwen2");
  auto backend = CreateCpuBackend();
  auto model = LoadCausalLM(testing::SharedDir() + "/models/tiny-qwen2", *backend);
  auto merged = LoadCausalLM(f.merged.string(), *backend);
  ASSERT_TRUE(model.ok() && merged.ok());
  auto lora = LoadLoraAdapter(f.adapter.string(), (*model)->config(), 16, *backend);
  ASSERT_TRUE(lora.ok()) << lora.status().ToString();
  const std::vector<int32_t> ids = {9707, 11, 1879, 0, 3555};
  const auto want = testing::LastLogits(**merged, *backend, ids);
  EXPECT_GT(testing::MaxAbsDiff(testing::LastLogits(**model, *backend, ids), want), 0.05);
  auto got = RunBatch(**model, {{ids}, {ids, lora->get()}});
  EXPECT_LT(testing::MaxAbsDiff(got[1], want), 2e-3);
  fs::remove_all(f.adapter.parent_path());
}

// What the adapter math here does not cover is refused, naming the file and what is wrong.
TEST(LoraTest, BadAdaptersAreRefused) {
  XI_REQUIRE_SHARED("models/tiny-qwen3");
  auto backend = CreateCpuBackend();
  auto model = LoadCausalLM(testing::SharedDir() + "/models/tiny-qwen3", *backend);
  ASSERT_TRUE(model.ok());
  const ModelConfig& config = (*model)->config();
  auto load = [&](const fs::path& dir, int max_rank = 16) {
    return LoadLoraAdapter(dir.string(), config, max_rank, *backend).status();
  };
  auto f = testing::WriteLoraAdapter("tiny-qwen3", {.targets = {"q_proj"}}, "bad");
  const fs::path dir = f.adapter;
  ASSERT_TRUE(load(dir).ok());
  Status s = load(dir, 2);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("LoRA rank 4 is greater than max_lora_rank 2"), std::string::npos)
      << s.ToString();
  const json original = json::parse(std::ifstream(dir / "adapter_config.json"));
  for (const auto& [key, value, want] : std::vector<std::tuple<std::string, json, std::string>>{
           {"use_dora", true, "DoRA"},
           {"bias", "all", "trained biases"},
           {"modules_to_save", json::array({"lm_head"}), "modules_to_save"},
           {"rank_pattern", json{{"q_proj", 8}}, "rank_pattern"},
           {"peft_type", "IA3", "peft_type"},
           {"r", 0, "'r' must be a positive integer"},
           {"r", 8, "expected [8, 64]"},
           {"lora_alpha", "x", "lora_alpha"}}) {
    json config_json = original;
    config_json[key] = value;
    std::ofstream(dir / "adapter_config.json") << config_json.dump();
    s = load(dir);
    EXPECT_FALSE(s.ok()) << key;
    EXPECT_NE(s.message().find(want), std::string::npos) << key << ": " << s.ToString();
    EXPECT_NE(s.message().find(dir.string()), std::string::npos) << s.ToString();
  }
  std::ofstream(dir / "adapter_config.json") << original.dump();
  ASSERT_TRUE(load(dir).ok());

  s = load(dir.parent_path() / "nowhere");
  EXPECT_EQ(s.code(), StatusCode::kNotFound) << s.ToString();
  fs::rename(dir / "adapter_model.safetensors", dir / "adapter_model.bin");
  s = load(dir);
  EXPECT_NE(s.message().find("adapter_model.bin"), std::string::npos) << s.ToString();
  fs::remove(dir / "adapter_model.bin");
  s = load(dir);
  EXPECT_EQ(s.code(), StatusCode::kNotFound) << s.ToString();
  fs::remove_all(f.adapter.parent_path());

  // Tensors: an embedding adapter, a missing half, a layer the model lacks.
  auto g = testing::WriteLoraAdapter("tiny-qwen3", {.targets = {"q_proj"}}, "bad-tensors");
  for (const auto& [rename_from, rename_to, want] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"layers.1.self_attn.q_proj.lora_A", "embed_tokens.lora_embedding_A", "is not a LoRA"},
           {"layers.1.self_attn.q_proj.lora_B", "layers.1.self_attn.q_proj.lora_C",
            "is not a LoRA"},
           {"layers.1.self_attn.q_proj.lora_A", "layers.1.self_attn.k_proj.lora_A",
            "q_proj has lora_B but not lora_A"},
           {"layers.1.self_attn.q_proj.lora_A", "layers.9.self_attn.q_proj.lora_A",
            "is for layer 9"}}) {
    // Same-length names keep the header's byte offsets; otherwise rewrite through the JSON.
    std::ifstream in(g.adapter / "adapter_model.safetensors", std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    uint64_t header_len;
    std::memcpy(&header_len, bytes.data(), 8);
    std::string header = bytes.substr(8, header_len);
    const size_t at = header.find(rename_from);
    ASSERT_NE(at, std::string::npos);
    header.replace(at, rename_from.size(), rename_to);
    const fs::path bad = g.adapter.parent_path() / "renamed";
    fs::create_directories(bad);
    fs::copy_file(g.adapter / "adapter_config.json", bad / "adapter_config.json",
                  fs::copy_options::overwrite_existing);
    std::ofstream outf(bad / "adapter_model.safetensors", std::ios::binary | std::ios::trunc);
    const uint64_t new_len = header.size();
    outf.write(reinterpret_cast<const char*>(&new_len), 8);
    outf << header << bytes.substr(8 + header_len);
    outf.close();
    s = load(bad);
    EXPECT_FALSE(s.ok()) << rename_to;
    EXPECT_NE(s.message().find(want), std::string::npos) << rename_to << ": " << s.ToString();
  }
  fs::remove_all(g.adapter.parent_path());
}

}  // namespace
}  // namespace xinfer
