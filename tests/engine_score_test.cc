// A reranker kept as a causal LM (vLLM's recipe for the original Qwen3-Reranker: the
// architecture overridden to Qwen3ForSequenceClassification, classifier_from_token ["no", "yes"]):
// each prompt's score is softmax over those two tokens' logits at its last position, the "yes"
// share. Checked against the independent reference's logits on the tiny Qwen3.
// And a classifier with its own head (score.weight, as the converted "-seq-cls" rerankers): the
// tiny Qwen3 with the head "yes" row - "no" row of its lm_head must score as the recipe does.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine_test_util.h"
#include "formats/safetensors.h"
#include "formats/safetensors_writer.h"
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
            "needs its classification head 'score.weight'"},
           {R"({"architectures": ["Qwen3ForSequenceClassification"], "id2label": {"1": "x"}})",
            "'id2label' must map the indices 0..0 to names once each"}}) {
    EngineConfig c = config_;
    c.hf_overrides = overrides;
    auto e = LLMEngine::Create(c);
    ASSERT_FALSE(e.ok()) << overrides;
    EXPECT_NE(e.status().message().find(needle), std::string::npos) << e.status().ToString();
  }
}

// The tiny Qwen3 as transformers saves a Qwen3ForSequenceClassification: its tensors (through an
// index naming the shared file) plus `score.weight` [labels, 64] F32 in a shard of its own.
// `rows`: each label's head row as a function of the embedding table's rows.
std::filesystem::path WriteSeqClsModel(const std::string& name, const nlohmann::json& id2label,
                                       const std::vector<std::vector<float>>& rows) {
  namespace fs = std::filesystem;
  const fs::path src = testing::SharedDir() + "/models/tiny-qwen3";
  const fs::path dir =
      fs::temp_directory_path() / fmt::format("xinfer-seqcls-{}-{}", name, getpid());
  fs::remove_all(dir);
  fs::create_directories(dir / "head");
  for (const char* f : {"tokenizer.json", "tokenizer_config.json", "model.safetensors"})
    fs::create_symlink(src / f, dir / f);
  nlohmann::json config = nlohmann::json::parse(std::ifstream(src / "config.json"));
  config["architectures"] = {"Qwen3ForSequenceClassification"};
  config["id2label"] = id2label;
  std::ofstream(dir / "config.json") << config.dump();
  const int64_t labels = static_cast<int64_t>(rows.size()), hidden = 64;
  EXPECT_TRUE(WriteSafetensors((dir / "head").string(),
                               {{"score.weight", DType::kF32, {labels, hidden}}},
                               [&](const TensorSpec&, int64_t first, int64_t count, uint8_t* out) {
                                 for (int64_t i = 0; i < count; ++i) {
                                   const float v = rows[(first + i) / hidden][(first + i) % hidden];
                                   std::memcpy(out + 4 * i, &v, 4);
                                 }
                               },
                               uint64_t{1} << 30)
                  .ok());
  fs::rename(dir / "head" / "model.safetensors", dir / "score.safetensors");
  fs::remove_all(dir / "head");
  auto store = WeightStore::OpenDir(src.string());
  EXPECT_TRUE(store.ok());
  nlohmann::json index = {{"metadata", nlohmann::json::object()}, {"weight_map", {}}};
  for (const std::string& t : (*store)->Names()) index["weight_map"][t] = "model.safetensors";
  index["weight_map"]["score.weight"] = "score.safetensors";
  std::ofstream(dir / "model.safetensors.index.json") << index.dump();
  return dir;
}

// A row of the tiny Qwen3's (tied) embedding table, widened to F32.
std::vector<float> TableRow(int32_t id) {
  auto store = WeightStore::OpenDir(testing::SharedDir() + "/models/tiny-qwen3");
  Tensor t = (*store)->Get("model.embed_tokens.weight").value();
  std::vector<float> row(64);
  for (int j = 0; j < 64; ++j) row[j] = Bf16ToF32(t.data<uint16_t>()[id * 64 + j]);
  return row;
}

// One label: sigmoid(h . (yes - no)) is what the recipe computes from the two logits, so the two
// servers' scores agree to float rounding; the converted model skips the vocabulary's lm_head.
TEST_F(EngineScoreTest, OwnHeadScoresAsTheTwoTokenRecipe) {
  auto tokenizer = Tokenizer::FromDir(config_.model);
  ASSERT_TRUE(tokenizer.ok());
  const std::vector<float> no = TableRow((*tokenizer)->TokenToId("no").value()),
                           yes = TableRow((*tokenizer)->TokenToId("yes").value());
  std::vector<float> diff(64);
  for (int j = 0; j < 64; ++j) diff[j] = yes[j] - no[j];
  const auto dir = WriteSeqClsModel("one", {{"0", "LABEL_0"}}, {diff});
  EngineConfig head = config_;
  head.model = dir.string();
  head.hf_overrides.clear();
  const std::vector<std::vector<int32_t>> prompts = {
      {9707, 11, 1879}, {785, 6722, 315, 5616, 374, 26549, 13}, std::vector<int32_t>(200, 1879)};
  const std::vector<float> want = Score(config_, prompts);
  const std::vector<float> got = Score(head, prompts);
  ASSERT_EQ(got.size(), want.size());
  for (size_t p = 0; p < want.size(); ++p) {
    EXPECT_NEAR(std::log(got[p] / (1 - got[p])), std::log(want[p] / (1 - want[p])), 1e-4) << p;
    EXPECT_NE(got[p], 0.5f);
  }
  std::filesystem::remove_all(dir);
}

// Several labels: each prompt's probabilities are the softmax of the head's logits, which for
// rows copied from the table are the lm_head's logits of those tokens: their softmax over them.
TEST_F(EngineScoreTest, OwnHeadOfSeveralLabelsGivesTheirSoftmax) {
  XI_REQUIRE_SHARED("golden/logits/tiny-qwen3/golden.json");
  const auto golden = testing::ReadLogitsGolden(testing::SharedDir() + "/golden/logits/tiny-qwen3");
  const std::vector<int32_t> ids = {2152, 9693, 13, 0};
  std::vector<std::vector<float>> rows;
  for (int32_t id : ids) rows.push_back(TableRow(id));
  const auto dir =
      WriteSeqClsModel("four", {{"0", "no"}, {"1", "yes"}, {"2", "dot"}, {"3", "bang"}}, rows);
  EngineConfig c = config_;
  c.model = dir.string();
  c.hf_overrides.clear();
  auto engine = LLMEngine::Create(c);
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  EXPECT_TRUE((*engine)->config().scores());
  SamplingParams p;
  p.max_tokens = 1;
  for (size_t i = 0; i < golden.size(); ++i)
    ASSERT_TRUE((*engine)->AddRequest(std::to_string(i), {golden[i].ids, p}).ok());
  auto done = testing::RunToCompletion(**engine);
  for (size_t i = 0; i < golden.size(); ++i) {
    SCOPED_TRACE(golden[i].name);
    const testing::Completed& r = done[std::to_string(i) + "/0"];
    EXPECT_FALSE(r.score.has_value());
    ASSERT_EQ(r.probs.size(), ids.size());
    double max = -1e30, total = 0;
    for (int32_t id : ids) max = std::max<double>(max, golden[i].logits[id]);
    for (int32_t id : ids) total += std::exp(golden[i].logits[id] - max);
    for (size_t l = 0; l < ids.size(); ++l)
      EXPECT_NEAR(r.probs[l], std::exp(golden[i].logits[ids[l]] - max) / total, 1e-2);
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace xinfer
