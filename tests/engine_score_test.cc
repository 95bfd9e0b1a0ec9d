// A reranker kept as a causal LM (vLLM's recipe for the original Qwen3-Reranker: the
// architecture overridden to Qwen3ForSequenceClassification, classifier_from_token ["no", "yes"]):
// each prompt's score is softmax over those two tokens' logits at its last position, the "yes"
// share. Checked against the independent reference's logits on the tiny Qwen3.
#include <gtest/gtest.h>

#include <cmath>

#include "engine_test_util.h"
#include "golden_util.h"
#include "test_util.h"

namespace xinfer {
namespace {

constexpr const char* kReranker =
    R"({"architectures": ["Qwen3ForSequenceClassification"],
        "classifier_from_token": ["no", "yes"], "is_original_qwen3_reranker": true})";

class EngineScoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    XI_REQUIRE_SHARED("models/tiny-qwen3");
    config_.model = testing::SharedDir() + "/models/tiny-qwen3";
    config_.kv_cache_memory = 64 << 20;
    config_.max_model_len = 2048;
    config_.hf_overrides = kReranker;
  }
  // The scores of `prompts` (all at once, through continuous batching).
  std::vector<float> Score(const EngineConfig& c,
                           const std::vector<std::vector<int32_t>>& prompts) {
    auto engine = LLMEngine::Create(c);
    EXPECT_TRUE(engine.ok()) << engine.status().ToString();
    if (!engine.ok()) return {};
    EXPECT_TRUE((*engine)->config().scores());
    SamplingParams p;
    p.max_tokens = 1;
    for (size_t i = 0; i < prompts.size(); ++i)
      EXPECT_TRUE((*engine)->AddRequest(std::to_string(i), {prompts[i], p}).ok());
    auto done = testing::RunToCompletion(**engine);
    std::vector<float> out;
    for (size_t i = 0; i < prompts.size(); ++i) {
      const testing::Completed& r = done[std::to_string(i) + "/0"];
      EXPECT_EQ(r.finish_reason, "stop");
      EXPECT_TRUE(r.token_ids.empty());
      EXPECT_TRUE(r.embedding.empty());
      EXPECT_TRUE(r.score.has_value());
      out.push_back(r.score.value_or(-1));
    }
    return out;
  }
  EngineConfig config_;
};

TEST_F(EngineScoreTest, ScoresAreTheReferencesYesShareOfNoAndYes) {
  XI_REQUIRE_SHARED("golden/logits/tiny-qwen3/golden.json");
  const auto golden = testing::ReadLogitsGolden(testing::SharedDir() + "/golden/logits/tiny-qwen3");
  auto tokenizer = Tokenizer::FromDir(config_.model);
  ASSERT_TRUE(tokenizer.ok());
  const int32_t no = (*tokenizer)->TokenToId("no").value(),
                yes = (*tokenizer)->TokenToId("yes").value();
  std::vector<std::vector<int32_t>> prompts;
  for (const auto& g : golden) prompts.push_back(g.ids);
  const std::vector<float> scores = Score(config_, prompts);
  ASSERT_EQ(scores.size(), golden.size());
  for (size_t p = 0; p < golden.size(); ++p) {
    SCOPED_TRACE(golden[p].name);
    // The score's log-odds is the logit margin yes - no: within twice the logits' tolerance.
    const double margin = static_cast<double>(golden[p].logits[yes]) - golden[p].logits[no];
    ASSERT_GT(scores[p], 0);
    ASSERT_LT(scores[p], 1);
    EXPECT_NEAR(std::log(scores[p] / (1 - scores[p])), margin, 2 * testing::kGoldenLogitTolerance);
    EXPECT_NEAR(scores[p], 1 / (1 + std::exp(-margin)), 1e-2);
  }
}

TEST_F(EngineScoreTest, ChunksPrefixCacheBatchingAndRanksChangeNothing) {
  // Rerank-shaped prompts: one long shared query prefix, different documents.
  std::vector<int32_t> query(150, 1879);
  std::vector<std::vector<int32_t>> prompts;
  for (int32_t doc : {358, 1079, 9707, 11}) {
    prompts.push_back(query);
    prompts.back().insert(prompts.back().end(), {doc, doc, 0});
  }
  const std::vector<float> together = Score(config_, prompts);
  ASSERT_EQ(together.size(), prompts.size());
  EXPECT_NE(together[0], together[1]);
  EngineConfig small = config_;
  small.max_num_batched_tokens = 64;
  small.max_num_seqs = 1;
  small.enable_prefix_caching = false;
  EngineConfig tp = config_;
  tp.tensor_parallel_size = 2;
  tp.threads = 2;
  for (const EngineConfig* c : {&small, &tp}) {
    const std::vector<float> other = Score(*c, prompts);
    ASSERT_EQ(other.size(), together.size());
    for (size_t i = 0; i < other.size(); ++i) EXPECT_NEAR(other[i], together[i], 1e-5) << i;
  }
}

TEST_F(EngineScoreTest, WhatCannotScoreIsRefusedAtStartup) {
  EngineConfig generate = config_;
  generate.task = "generate";
  EXPECT_NE(LLMEngine::Create(generate).status().message().find("task 'generate' is not available"),
            std::string::npos);
  EngineConfig plain = config_;
  plain.hf_overrides.clear();
  plain.task = "score";
  EXPECT_NE(LLMEngine::Create(plain).status().message().find(
                "task 'score' needs a sequence classification model"),
            std::string::npos);
  EngineConfig runner_pooling = config_;  // --runner pooling: a classifier scores
  runner_pooling.task = "embed";
  auto pooled = LLMEngine::Create(runner_pooling);
  ASSERT_TRUE(pooled.ok()) << pooled.status().ToString();
  EXPECT_TRUE((*pooled)->config().scores());
  for (const auto& [overrides, needle] : std::vector<std::pair<std::string, std::string>>{
           {R"({"architectures": ["Qwen3ForSequenceClassification"],
                "classifier_from_token": ["no", "not-a-token-here"]})",
            "classifier_from_token 'not-a-token-here' is not a token of the vocabulary"},
           {R"({"architectures": ["Qwen3ForSequenceClassification"],
                "classifier_from_token": ["no", "yes", "maybe"]})",
            "must list two tokens"},
           {R"({"architectures": ["Qwen3ForSequenceClassification"]})",
            "with its own score head is not supported"}}) {
    EngineConfig c = config_;
    c.hf_overrides = overrides;
    auto e = LLMEngine::Create(c);
    ASSERT_FALSE(e.ok()) << overrides;
    EXPECT_NE(e.status().message().find(needle), std::string::npos) << e.status().ToString();
  }
}

}  // namespace
}  // namespace xinfer
