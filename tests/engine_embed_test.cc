// --task embed on the tiny Qwen3 (tied embeddings): a prompt's embedding is its last position's
// hidden state after the final norm, normalized. Checked against the independent reference's
// logits, which are that hidden state times the tied table: the table times the embedding must be
// the reference logits scaled by one positive factor per prompt.
#include <gtest/gtest.h>

#include <cmath>

#include "engine_test_util.h"
#include "formats/safetensors.h"
#include "golden_util.h"
#include "test_util.h"

namespace xinfer {
namespace {

class EngineEmbedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    XI_REQUIRE_SHARED("models/tiny-qwen3");
    config_.model = testing::SharedDir() + "/models/tiny-qwen3";
    config_.kv_cache_memory = 64 << 20;
    config_.max_model_len = 2048;
    config_.task = "embed";
  }
  // The embeddings of `prompts` (all at once, through continuous batching).
  std::vector<std::vector<float>> Embed(const EngineConfig& c,
                                        const std::vector<std::vector<int32_t>>& prompts) {
    auto engine = LLMEngine::Create(c);
    EXPECT_TRUE(engine.ok()) << engine.status().ToString();
    if (!engine.ok()) return {};
    SamplingParams p;
    p.max_tokens = 1;
    for (size_t i = 0; i < prompts.size(); ++i)
      EXPECT_TRUE((*engine)->AddRequest(std::to_string(i), {prompts[i], p}).ok());
    auto done = testing::RunToCompletion(**engine);
    std::vector<std::vector<float>> out;
    for (size_t i = 0; i < prompts.size(); ++i) {
      const testing::Completed& r = done[std::to_string(i) + "/0"];
      EXPECT_EQ(r.finish_reason, "stop");
      EXPECT_TRUE(r.token_ids.empty());
      out.push_back(r.embedding);
    }
    return out;
  }
  EngineConfig config_;
};

TEST_F(EngineEmbedTest, EmbeddingsAreTheNormalizedLastHiddenStateOfTheReference) {
  const auto golden = testing::ReadLogitsGolden(testing::SharedDir() + "/golden/logits/tiny-qwen3");
  std::vector<std::vector<int32_t>> prompts;
  for (const auto& g : golden) prompts.push_back(g.ids);
  const auto embeddings = Embed(config_, prompts);
  ASSERT_EQ(embeddings.size(), golden.size());
  auto weights = WeightStore::OpenDir(config_.model);
  ASSERT_TRUE(weights.ok()) << weights.status().ToString();
  auto table = (*weights)->Get("model.embed_tokens.weight");
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  ASSERT_EQ(table->dtype(), DType::kBF16);
  const int64_t vocab = table->dim(0), hidden = table->dim(1);
  const auto* rows = table->data<uint16_t>();
  for (size_t p = 0; p < golden.size(); ++p) {
    const std::vector<float>& e = embeddings[p];
    ASSERT_EQ(static_cast<int64_t>(e.size()), hidden);
    double norm = 0;
    for (float x : e) norm += static_cast<double>(x) * x;
    EXPECT_NEAR(norm, 1.0, 1e-5) << golden[p].name;
    // E e against the reference logits: one positive scale (the hidden state's norm) maps the
    // first onto the second, to the logits' tolerance.
    std::vector<double> projected(static_cast<size_t>(vocab));
    double dot = 0, sq = 0;
    for (int64_t v = 0; v < vocab; ++v) {
      double s = 0;
      for (int64_t k = 0; k < hidden; ++k) s += Bf16ToF32(rows[v * hidden + k]) * e[k];
      projected[static_cast<size_t>(v)] = s;
      dot += s * golden[p].logits[static_cast<size_t>(v)];
      sq += s * s;
    }
    const double scale = dot / sq;
    EXPECT_GT(scale, 0) << golden[p].name;
    double worst = 0;
    for (int64_t v = 0; v < vocab; ++v)
      worst = std::max(worst, std::abs(scale * projected[static_cast<size_t>(v)] -
                                       golden[p].logits[static_cast<size_t>(v)]));
    EXPECT_LT(worst, testing::kGoldenLogitTolerance) << golden[p].name;
  }
}

void ExpectSame(const std::vector<std::vector<float>>& got,
                const std::vector<std::vector<float>>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t p = 0; p < want.size(); ++p) {
    ASSERT_EQ(got[p].size(), want[p].size()) << p;
    for (size_t k = 0; k < want[p].size(); ++k)
      EXPECT_NEAR(got[p][k], want[p][k], 1e-5) << p << "," << k;
  }
}

TEST_F(EngineEmbedTest, ChunksPrefixCacheBatchingAndRanksChangeNothingNormalizeIsOptional) {
  const std::vector<std::vector<int32_t>> prompts = {
      {9707, 11, 1879, 0}, {9707, 11, 1879, 0, 358, 1079}, std::vector<int32_t>(300, 1879)};
  const auto together = Embed(config_, prompts);
  // One at a time, prompt chunks of 64 tokens, no prefix cache: the same vectors.
  EngineConfig small = config_;
  small.max_num_batched_tokens = 64;
  small.max_num_seqs = 1;
  small.enable_prefix_caching = false;
  ExpectSame(Embed(small, prompts), together);
  // Two tensor-parallel ranks: the first writes the (whole) hidden state.
  EngineConfig tp = config_;
  tp.tensor_parallel_size = 2;
  tp.threads = 2;
  ExpectSame(Embed(tp, prompts), together);
  // normalize false: the same direction, the hidden state's own length.
  EngineConfig raw = config_;
  raw.pooler_config = R"({"pooling_type": "LAST", "normalize": false})";
  const auto unnormalized = Embed(raw, prompts);
  double norm = 0;
  for (float x : unnormalized[0]) norm += static_cast<double>(x) * x;
  norm = std::sqrt(norm);
  EXPECT_GT(std::abs(norm - 1.0), 1e-2);
  for (size_t k = 0; k < together[0].size(); ++k)
    EXPECT_NEAR(unnormalized[0][k] / norm, together[0][k], 1e-5);
  // What the engine cannot pool is refused when it is configured.
  EngineConfig mean = config_;
  mean.pooler_config = R"({"pooling_type": "MEAN"})";
  EXPECT_EQ(LLMEngine::Create(mean).status().code(), StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace xinfer
