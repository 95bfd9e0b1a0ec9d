// Malformed model folders: each must fail to load with a Status that names the problem.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <tuple>

#include "formats/gguf.h"
#include "formats/gguf_writer.h"
#include "model/causal_lm.h"
#include "model/gguf_config.h"
#include "test_util.h"

namespace xinfer {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Writes a tiny Llama-shaped checkpoint (hidden 8, 1 layer, vocab 16) that tests then break.
class ModelErrorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("xinfer_model_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    config_ = {{"architectures", {"LlamaForCausalLM"}},
               {"model_type", "llama"},
               {"vocab_size", 16},
               {"hidden_size", 8},
               {"intermediate_size", 12},
               {"num_hidden_layers", 1},
               {"num_attention_heads", 2},
               {"num_key_value_heads", 1},
               {"tie_word_embeddings", true},
               {"rms_norm_eps", 1e-6},
               {"torch_dtype", "float32"}};
    const int h = 8, kv = 4, i = 12;
    tensors_ = {{"model.embed_tokens.weight", {16, h}},
                {"model.norm.weight", {h}},
                {"model.layers.0.input_layernorm.weight", {h}},
                {"model.layers.0.post_attention_layernorm.weight", {h}},
                {"model.layers.0.self_attn.q_proj.weight", {h, h}},
                {"model.layers.0.self_attn.k_proj.weight", {kv, h}},
                {"model.layers.0.self_attn.v_proj.weight", {kv, h}},
                {"model.layers.0.self_attn.o_proj.weight", {h, h}},
                {"model.layers.0.mlp.gate_proj.weight", {i, h}},
                {"model.layers.0.mlp.up_proj.weight", {i, h}},
                {"model.layers.0.mlp.down_proj.weight", {h, i}}};
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Writes config.json and model.safetensors (F32 unless `dtype` given; `truncate` drops bytes).
  void WriteModel(const std::string& dtype = "F32", size_t truncate = 0) {
    std::ofstream(dir_ / "config.json") << config_.dump();
    json header = json::object();
    size_t offset = 0, elem = dtype == "F32" || dtype == "I32" ? 4 : 2;
    for (const auto& [name, shape] : tensors_) {
      size_t n = 1;
      for (auto d : shape) n *= d;
      header[name] = {
          {"dtype", dtype}, {"shape", shape}, {"data_offsets", {offset, offset + n * elem}}};
      offset += n * elem;
    }
    std::string h = header.dump();
    std::ofstream out(dir_ / "model.safetensors", std::ios::binary);
    uint64_t len = h.size();
    out.write(reinterpret_cast<const char*>(&len), 8);
    out << h;
    std::string data(offset - truncate, '\0');
    out << data;
  }

  std::string LoadError() {
    auto backend = CreateCpuBackend();
    auto model = LoadCausalLM(dir_.string(), *backend);
    EXPECT_FALSE(model.ok());
    return model.ok() ? "" : model.status().ToString();
  }

  fs::path dir_;
  json config_;
  std::map<std::string, std::vector<int64_t>> tensors_;
};

TEST_F(ModelErrorsTest, ValidModelLoadsAndRejectsBadIds) {
  WriteModel();
  auto backend = CreateCpuBackend();
  auto model = LoadCausalLM(dir_.string(), *backend);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  EXPECT_EQ((*model)->num_parameters(), 16 * 8 + 8 + 8 + 8 + 64 + 32 + 32 + 64 + 96 * 3);
  SingleSequence seq(**model, *backend, 4);
  std::vector<float> logits(16);
  std::vector<int32_t> bad = {3, 16};
  auto s = seq.Append(bad, logits);
  EXPECT_NE(s.message().find("token id 16 is outside the vocabulary"), std::string::npos);
  EXPECT_EQ(seq.length(), 0);
  std::vector<int32_t> too_long = {1, 2, 3, 4, 5};
  EXPECT_EQ(seq.Append(too_long, logits).code(), StatusCode::kOutOfRange);
  std::vector<int32_t> ok = {1, 2};
  EXPECT_TRUE(seq.Append(ok, logits).ok());
  EXPECT_EQ(seq.length(), 2);
  for (float x : logits) EXPECT_TRUE(std::isfinite(x));
}

TEST_F(ModelErrorsTest, MissingFolderAndConfig) {
  auto backend = CreateCpuBackend();
  auto m = LoadCausalLM((dir_ / "absent").string(), *backend);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kNotFound);
  EXPECT_NE(LoadError().find("config.json"), std::string::npos);
}

TEST_F(ModelErrorsTest, UnsupportedArchitecture) {
  config_["architectures"] = {"MambaForCausalLM"};
  WriteModel();
  std::string err = LoadError();
  EXPECT_NE(err.find("unsupported architecture 'MambaForCausalLM'"), std::string::npos) << err;
  EXPECT_NE(err.find("Qwen3ForCausalLM"), std::string::npos) << err;
}

TEST_F(ModelErrorsTest, MissingTensor) {
  tensors_.erase("model.layers.0.mlp.up_proj.weight");
  WriteModel();
  std::string err = LoadError();
  EXPECT_NE(err.find("tensor 'model.layers.0.mlp.up_proj.weight' is missing"), std::string::npos)
      << err;
}

TEST_F(ModelErrorsTest, UntiedNeedsLmHead) {
  config_["tie_word_embeddings"] = false;
  WriteModel();
  EXPECT_NE(LoadError().find("'lm_head.weight' is missing"), std::string::npos);
}

TEST_F(ModelErrorsTest, WrongShape) {
  tensors_["model.layers.0.self_attn.k_proj.weight"] = {8, 8};
  WriteModel();
  std::string err = LoadError();
  EXPECT_NE(err.find("k_proj.weight' has shape [8, 8] but the config implies [4, 8]"),
            std::string::npos)
      << err;
}

TEST_F(ModelErrorsTest, AbsurdLayerCountFailsOnTheFirstMissingLayer) {
  // Before: the loader sized its layer table from the config first, and 2^30 layers aborted the
  // process with std::bad_alloc.
  config_["num_hidden_layers"] = 1 << 30;
  WriteModel();
  std::string err = LoadError();
  EXPECT_NE(err.find("tensor 'model.layers.1.input_layernorm.weight' is missing"),
            std::string::npos)
      << err;
}

TEST_F(ModelErrorsTest, UnsupportedWeightDtype) {
  WriteModel("I32");
  EXPECT_NE(LoadError().find("only F32, BF16 and F16 weights are supported"), std::string::npos);
}

TEST_F(ModelErrorsTest, TruncatedWeights) {
  WriteModel("F32", 100);
  std::string err = LoadError();
  EXPECT_NE(err.find("DataLoss"), std::string::npos) << err;
  EXPECT_NE(err.find("truncated"), std::string::npos) << err;
}

TEST_F(ModelErrorsTest, QuantizedNotYetSupported) {
  config_["quantization_config"] = {{"quant_method", "gptq"}, {"bits", 4}};
  WriteModel();
  EXPECT_NE(LoadError().find("quantization 'gptq' is not supported"), std::string::npos);
}

// A GGUF whose rope base or RMS epsilon is zero, negative or NaN loaded, and then every logit
// was NaN: each request ended in "sampling failed". It is a load error, as in config.json.
TEST(GgufModelErrorsTest, NonPositiveRopeBaseOrEpsilonIsALoadError) {
  const float kNaN = std::nanf("");
  for (const auto& [key, value] : std::vector<std::pair<std::string, float>>{
           {"qwen3.rope.freq_base", 0.0f},
           {"qwen3.rope.freq_base", -1.0f},
           {"qwen3.rope.freq_base", kNaN},
           {"qwen3.attention.layer_norm_rms_epsilon", 0.0f},
           {"qwen3.attention.layer_norm_rms_epsilon", -1e-6f},
           {"qwen3.attention.layer_norm_rms_epsilon", kNaN}}) {
    GgufWriter w;
    w.SetString("general.architecture", "qwen3");
    w.SetU32("qwen3.embedding_length", 8);
    w.SetU32("qwen3.feed_forward_length", 12);
    w.SetU32("qwen3.block_count", 1);
    w.SetU32("qwen3.attention.head_count", 2);
    std::map<std::string, float> floats = {{"qwen3.attention.layer_norm_rms_epsilon", 1e-6f},
                                           {"qwen3.rope.freq_base", 1e6f}};
    floats[key] = value;
    for (const auto& [k, v] : floats) w.SetF32(k, v);
    const std::string path = ::testing::TempDir() + "/bad_rope.gguf";
    ASSERT_TRUE(w.WriteFile(path).ok());
    auto f = GgufFile::Open(path);
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    auto c = GgufModelConfig(**f);
    ASSERT_FALSE(c.ok()) << key << " = " << value;
    EXPECT_NE(c.status().message().find(key), std::string::npos) << c.status().ToString();
    fs::remove(path);
  }
}

// The config GgufModelConfig reads from a file of `arch` holding these integer keys (-1: left
// out), an epsilon, a token_embd of [16, 8] and, unless 0, expert_weights_scale.
StatusOr<ModelConfig> MoeKeysConfig(const std::map<std::string, int64_t>& ints,
                                    const std::string& arch, float weights_scale = 0) {
  GgufWriter w;
  w.SetString("general.architecture", arch);
  for (const auto& [k, v] : ints)
    if (v >= 0) w.SetU32(arch + "." + k, static_cast<uint32_t>(v));
  w.SetF32(arch + ".attention.layer_norm_rms_epsilon", 1e-6f);
  if (weights_scale != 0) w.SetF32(arch + ".expert_weights_scale", weights_scale);
  w.AddTensor("token_embd.weight", ggml::kF32, {8, 16}, std::string(8 * 16 * 4, '\0'));
  const std::string path = ::testing::TempDir() + "/moe_keys.gguf";
  EXPECT_TRUE(w.WriteFile(path).ok());
  auto f = GgufFile::Open(path);
  EXPECT_TRUE(f.ok()) << f.status().ToString();
  auto c = GgufModelConfig(**f);
  fs::remove(path);
  return c;
}

// qwen3moe's expert keys, read as llama.cpp reads them; what our decoder cannot compute (shared
// experts, another gating function) or a count that makes no sense is a load error naming the key.
TEST(GgufModelErrorsTest, Qwen3MoeExpertKeys) {
  auto config = [](const std::map<std::string, int64_t>& ints, const std::string& arch = "qwen3moe",
                   float weights_scale = 0) { return MoeKeysConfig(ints, arch, weights_scale); };
  std::map<std::string, int64_t> ints = {
      {"embedding_length", 8},           {"feed_forward_length", 48}, {"block_count", 1},
      {"attention.head_count", 2},       {"expert_count", 8},         {"expert_used_count", 2},
      {"expert_feed_forward_length", 12}};
  auto c = config(ints);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->architecture, "Qwen3MoeForCausalLM");
  EXPECT_EQ(c->num_experts, 8);
  EXPECT_EQ(c->num_experts_per_tok, 2);
  EXPECT_EQ(c->moe_intermediate_size, 12);
  EXPECT_TRUE(c->norm_topk_prob);
  EXPECT_TRUE(c->IsSparseLayer(0));
  // llama.cpp's default for the experts' width: feed_forward_length / expert_used_count.
  auto no_width = ints;
  no_width["expert_feed_forward_length"] = -1;
  c = config(no_width);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->moe_intermediate_size, 24);
  // feed_forward_length is optional for a MoE file.
  auto no_ff = ints;
  no_ff["feed_forward_length"] = -1;
  c = config(no_ff);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->moe_intermediate_size, 12);

  for (const auto& [key, value, want] : std::vector<std::tuple<std::string, int64_t, std::string>>{
           {"expert_count", -1, "qwen3moe.expert_count"},
           {"expert_used_count", 9, "exceeds 'qwen3moe.expert_count' = 8"},
           {"expert_used_count", 0, "qwen3moe.expert_used_count"},
           {"expert_shared_count", 1, "qwen3moe.expert_shared_count = 1"},
           {"expert_gating_func", 2, "expert gating function 2"}}) {
    auto bad = ints;
    bad[key] = value;
    c = config(bad);
    ASSERT_FALSE(c.ok()) << key << " = " << value;
    EXPECT_NE(c.status().message().find(want), std::string::npos) << c.status().ToString();
  }
  auto neither = ints;
  neither["feed_forward_length"] = neither["expert_feed_forward_length"] = -1;
  c = config(neither);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("expert_feed_forward_length"), std::string::npos)
      << c.status().ToString();
  c = config(ints, "qwen3moe", 2.5f);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("expert_weights_scale = 2.5"), std::string::npos)
      << c.status().ToString();
  ASSERT_TRUE(config(ints, "qwen3moe", 1.f).ok());
}

// qwen2moe: the same keys, the weights not renormalized, and one shared expert whose width is
// expert_shared_feed_forward_length, else feed_forward_length (llama.cpp's loader).
TEST(GgufModelErrorsTest, Qwen2MoeSharedExpertKeys) {
  auto config = [](const std::map<std::string, int64_t>& ints) {
    return MoeKeysConfig(ints, "qwen2moe");
  };
  std::map<std::string, int64_t> ints = {{"embedding_length", 8},
                                         {"feed_forward_length", 48},
                                         {"block_count", 1},
                                         {"attention.head_count", 2},
                                         {"expert_count", 8},
                                         {"expert_used_count", 2},
                                         {"expert_feed_forward_length", 12},
                                         {"expert_shared_feed_forward_length", 20}};
  auto c = config(ints);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->architecture, "Qwen2MoeForCausalLM");
  EXPECT_EQ(c->moe_intermediate_size, 12);
  EXPECT_EQ(c->shared_expert_intermediate_size, 20);
  EXPECT_FALSE(c->norm_topk_prob);
  EXPECT_TRUE(c->IsSparseLayer(0));
  auto one_shared = ints;
  one_shared["expert_shared_count"] = 1;
  ASSERT_TRUE(config(one_shared).ok());
  auto default_width = ints;
  default_width["expert_shared_feed_forward_length"] = -1;
  c = config(default_width);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->shared_expert_intermediate_size, 48);
  default_width["feed_forward_length"] = -1;
  c = config(default_width);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("expert_shared_feed_forward_length"), std::string::npos)
      << c.status().ToString();
  auto two_shared = ints;
  two_shared["expert_shared_count"] = 2;
  c = config(two_shared);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("qwen2moe.expert_shared_count = 2"), std::string::npos)
      << c.status().ToString();
}

}  // namespace
}  // namespace xinfer
