// LoRA adapters through the engine (--enable-lora, --lora-modules): a request naming an adapter
// generates what the model with the adapter merged generates, beside base-model requests in the
// same batches; the prefix cache keeps each adapter's blocks apart; bad settings are refused.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "engine_test_util.h"
#include "lora_model_util.h"
#include "test_util.h"

namespace xinfer {
namespace {

namespace fs = std::filesystem;
using testing::RunToCompletion;

EngineConfig LoraEngineConfig(const std::string& model) {
  EngineConfig c;
  c.model = model;
  c.kv_cache_memory = 64 << 20;
  c.max_model_len = 1024;
  return c;
}

SamplingParams GreedyWithLogprobs(int max_tokens) {
  SamplingParams p = testing::Greedy(max_tokens);
  p.logprobs = 0;
  return p;
}

TEST(EngineLoraTest, AdapterRequestsGenerateAsTheMergedModelBesideBaseRequests) {
  XI_REQUIRE_SHARED("models/tiny-qwen3");
  const std::string base_dir = testing::SharedDir() + "/models/tiny-qwen3";
  auto f = testing::WriteLoraAdapter("tiny-qwen3", {}, "engine");
  EngineConfig c = LoraEngineConfig(base_dir);
  c.enable_lora = true;
  c.lora_modules = {"tuned=" + f.adapter.string()};
  auto engine = LLMEngine::Create(c);
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  ASSERT_EQ((*engine)->lora_adapters().size(), 1u);
  EXPECT_EQ((*engine)->lora_adapters()[0].name, "tuned");
  EXPECT_EQ((*engine)->lora_adapters()[0].rank, 4);
  auto base = LLMEngine::Create(LoraEngineConfig(base_dir));
  auto merged = LLMEngine::Create(LoraEngineConfig(f.merged.string()));
  ASSERT_TRUE(base.ok() && merged.ok());

  std::mt19937 rng(5);
  std::uniform_int_distribution<int32_t> tok(3, 150000);
  std::vector<std::vector<int32_t>> prompts(3);
  for (size_t i = 0; i < prompts.size(); ++i)
    for (size_t j = 0; j < 5 + 7 * i; ++j) prompts[i].push_back(tok(rng));
  for (size_t i = 0; i < prompts.size(); ++i) {
    const std::string n = std::to_string(i);
    EngineRequest tuned{prompts[i], GreedyWithLogprobs(8)};
    tuned.lora_name = "tuned";
    ASSERT_TRUE((*engine)->AddRequest("tuned" + n, tuned).ok());
    ASSERT_TRUE((*engine)->AddRequest("base" + n, {prompts[i], GreedyWithLogprobs(8)}).ok());
    ASSERT_TRUE((*base)->AddRequest("base" + n, {prompts[i], GreedyWithLogprobs(8)}).ok());
    ASSERT_TRUE((*merged)->AddRequest("tuned" + n, {prompts[i], GreedyWithLogprobs(8)}).ok());
  }
  auto got = RunToCompletion(**engine);
  auto want = RunToCompletion(**base);
  auto want_merged = RunToCompletion(**merged);
  for (size_t i = 0; i < prompts.size(); ++i) {
    const std::string n = std::to_string(i) + "/0";
    EXPECT_EQ(got["base" + n].token_ids, want["base" + n].token_ids) << n;
    EXPECT_EQ(got["tuned" + n].token_ids, want_merged["tuned" + n].token_ids) << n;
    EXPECT_NE(got["tuned" + n].token_ids, got["base" + n].token_ids) << n;
    ASSERT_EQ(got["tuned" + n].logprobs.size(), 8u);
    for (size_t t = 0; t < 8; ++t)
      EXPECT_NEAR(got["tuned" + n].logprobs[t].logprob,
                  want_merged["tuned" + n].logprobs[t].logprob, 2e-3);
  }

  // The prefix cache: an adapter's request does not reuse the base model's blocks of the same
  // prompt (their K/V differ), but reuses its own.
  std::vector<int32_t> long_prompt(64);
  for (int32_t& t : long_prompt) t = tok(rng);
  ASSERT_TRUE((*engine)->AddRequest("p-base", {long_prompt, GreedyWithLogprobs(2)}).ok());
  RunToCompletion(**engine);
  EngineRequest tuned{long_prompt, GreedyWithLogprobs(2)};
  tuned.lora_name = "tuned";
  ASSERT_TRUE((*engine)->AddRequest("p-tuned", tuned).ok());
  auto first = RunToCompletion(**engine);
  EXPECT_EQ(first["p-tuned/0"].cached_tokens, 0);
  ASSERT_TRUE((*engine)->AddRequest("p-tuned2", tuned).ok());
  auto second = RunToCompletion(**engine);
  EXPECT_EQ(second["p-tuned2/0"].cached_tokens, 48);
  EXPECT_EQ(second["p-tuned2/0"].token_ids, first["p-tuned/0"].token_ids);

  // An adapter the engine does not have is an error and queues nothing.
  tuned.lora_name = "other";
  Status s = (*engine)->AddRequest("x", tuned);
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "LoRA adapter 'other' is not loaded");
  EXPECT_FALSE((*engine)->HasUnfinishedRequests());
  // Nor can a name be loaded twice, or anything without --enable-lora.
  s = (*engine)->AddLoraAdapter({"tuned", f.adapter.string(), ""});
  EXPECT_NE(s.message().find("already loaded"), std::string::npos) << s.ToString();
  s = (*base)->AddLoraAdapter({"tuned", f.adapter.string(), ""});
  EXPECT_NE(s.message().find("--enable-lora"), std::string::npos) << s.ToString();
  fs::remove_all(f.adapter.parent_path());
}

TEST(EngineLoraTest, BadLoraSettingsAreRefused) {
  XI_REQUIRE_SHARED("models/tiny-qwen3");
  EngineConfig c = LoraEngineConfig(testing::SharedDir() + "/models/tiny-qwen3");
  c.lora_modules = {"a=/nowhere"};
  EXPECT_EQ(c.Validate().message(), "--lora-modules needs --enable-lora");
  c.enable_lora = true;
  auto engine = LLMEngine::Create(c);
  ASSERT_FALSE(engine.ok());
  EXPECT_NE(engine.status().message().find("LoRA adapter 'a'"), std::string::npos)
      << engine.status().ToString();
  EXPECT_NE(engine.status().message().find("/nowhere"), std::string::npos);
  for (const auto& [modules, want] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"a"}, "expected name=path"},
           {{"=x"}, "expected name=path"},
           {{"{\"name\": \"a\"}"}, "\"name\" and \"path\""},
           {{"a=/x", "{\"name\": \"a\", \"path\": \"/y\"}"}, "names 'a' twice"}}) {
    c.lora_modules = modules;
    EXPECT_NE(c.Validate().message().find(want), std::string::npos) << c.Validate().ToString();
  }
  c.lora_modules = {"{\"name\": \"a\", \"path\": \"/y\", \"base_model_name\": \"m\"}"};
  EXPECT_TRUE(c.Validate().ok());
  auto m = ParseLoraModule(c.lora_modules[0]);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->base_model_name, "m");
  c.max_lora_rank = 0;
  EXPECT_EQ(c.Validate().message(), "max_lora_rank must be >= 1, got 0");
  c.max_lora_rank = 16;
  c.max_loras = 0;
  EXPECT_EQ(c.Validate().message(), "max_loras must be >= 1, got 0");
}

// Tensor parallelism: each rank holds its slices of the adapter (B's output rows for q/k/v and
// gate/up, A's input columns for o and down), and the ranks' sum is the one-rank result — with
// 2 ranks (a key-value head each) and 4 (more ranks than key-value heads: each computes the one
// its queries use).
TEST(EngineLoraTest, TensorParallelRanksGiveTheOneRankAdaptersOutputs) {
  XI_REQUIRE_SHARED("models/tiny-qwen3");
  const std::string base_dir = testing::SharedDir() + "/models/tiny-qwen3";
  auto f = testing::WriteLoraAdapter("tiny-qwen3", {}, "engine_tp");
  auto run = [&](int tp) {
    EngineConfig c = LoraEngineConfig(base_dir);
    c.enable_lora = true;
    c.lora_modules = {"tuned=" + f.adapter.string()};
    c.tensor_parallel_size = tp;
    c.threads = std::max(tp, 2);
    c.cpu_threads_bind = "nobind";  // 4 ranks on 2 CPUs
    auto engine = LLMEngine::Create(c);
    EXPECT_TRUE(engine.ok()) << engine.status().ToString();
    if (!engine.ok()) return std::map<std::string, testing::Completed>{};
    for (int i = 0; i < 3; ++i) {
      EngineRequest r{{5, 6, 7, static_cast<int32_t>(100 + 31 * i)}, GreedyWithLogprobs(10)};
      if (i != 1) r.lora_name = "tuned";
      EXPECT_TRUE((*engine)->AddRequest(std::to_string(i), r).ok());
    }
    return RunToCompletion(**engine);
  };
  const auto one = run(1);
  ASSERT_EQ(one.size(), 3u);
  EXPECT_NE(one.at("0/0").token_ids, one.at("1/0").token_ids);
  for (int tp : {2, 4}) {
    const auto split = run(tp);
    ASSERT_EQ(split.size(), 3u) << tp;
    for (const auto& [id, want] : one) {
      const testing::Completed& got = split.at(id);
      EXPECT_EQ(got.token_ids, want.token_ids) << "tp " << tp << " " << id;
      ASSERT_EQ(got.logprobs.size(), want.logprobs.size());
      for (size_t t = 0; t < want.logprobs.size(); ++t)
        EXPECT_NEAR(got.logprobs[t].logprob, want.logprobs[t].logprob, 1e-4)
            << "tp " << tp << " " << id << " " << t;
    }
  }
}

}  // namespace
}  // namespace xinfer
