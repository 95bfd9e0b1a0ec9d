// Each per-request parameter, through the whole engine on the trained TinyStories model: every
// test fails if the engine ignored the parameter.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "engine_test_util.h"
#include "golden_util.h"
#include "test_util.h"

namespace xinfer {
namespace {

using testing::RunToCompletion;

class EngineParamsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    XI_REQUIRE_SHARED("models/tinystories-656k");
    EngineConfig c;
    c.model = testing::SharedDir() + "/models/tinystories-656k";
    c.kv_cache_memory = 32 << 20;
    auto e = LLMEngine::Create(c);
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    engine_ = std::move(*e);
    std::ifstream f(testing::SharedDir() + "/golden/logits/tinystories-656k/golden.json");
    golden_ = nlohmann::json::parse(f)["prompts"][0]["greedy"].get<std::vector<int32_t>>();
  }

  SamplingParams Params(int max_tokens = 24) {
    SamplingParams p;
    p.temperature = 0;
    p.max_tokens = max_tokens;
    return p;
  }

  testing::Completed Run(const SamplingParams& p, std::vector<int32_t> prompt = {1}) {
    EXPECT_TRUE(engine_->AddRequest("x", {prompt, p}).ok());
    return RunToCompletion(*engine_)["x/0"];
  }

  std::vector<int32_t> GoldenPrefix(size_t n) {
    return std::vector<int32_t>(golden_.begin(), golden_.begin() + n);
  }

  std::unique_ptr<LLMEngine> engine_;
  std::vector<int32_t> golden_;
};

TEST_F(EngineParamsTest, GreedyMatchesGoldenAndMaxTokens) {
  auto r = Run(Params(24));
  EXPECT_EQ(r.token_ids, GoldenPrefix(24));
  EXPECT_EQ(r.finish_reason, "length");
  EXPECT_EQ(r.completion_tokens, 24);
  EXPECT_EQ(r.prompt_tokens, 1);
  EXPECT_EQ(Run(Params(3)).token_ids, GoldenPrefix(3));
}

TEST_F(EngineParamsTest, StopStringEndsBeforeMatch) {
  const std::string full = Run(Params(40)).text;
  const size_t at = full.find("Lily", 1);
  ASSERT_NE(at, std::string::npos) << full;
  SamplingParams p = Params(40);
  p.stop = {"Lily"};
  auto r = Run(p);
  EXPECT_EQ(r.finish_reason, "stop");
  EXPECT_EQ(r.stop_reason, "Lily");
  EXPECT_EQ(r.text, full.substr(0, at));
  p.include_stop_str_in_output = true;
  EXPECT_EQ(Run(p).text, full.substr(0, at + 4));
}

TEST_F(EngineParamsTest, StopTokenIds) {
  SamplingParams p = Params(40);
  p.stop_token_ids = {golden_[5]};
  auto r = Run(p);
  EXPECT_EQ(r.finish_reason, "stop");
  EXPECT_EQ(r.stop_reason, std::to_string(golden_[5]));
  EXPECT_EQ(r.token_ids, GoldenPrefix(6));
}

TEST_F(EngineParamsTest, EosIgnoreEosAndMinTokens) {
  SamplingParams p = Params(10);
  p.logit_bias = {{2, 100.f}};  // force EOS (id 2)
  auto eos = Run(p);
  EXPECT_EQ(eos.finish_reason, "stop");
  EXPECT_EQ(eos.token_ids, std::vector<int32_t>{2});
  EXPECT_EQ(eos.text, "");
  p.ignore_eos = true;
  auto ignored = Run(p);
  EXPECT_EQ(ignored.finish_reason, "length");
  EXPECT_EQ(ignored.token_ids.size(), 10u);
  p.ignore_eos = false;
  p.min_tokens = 5;
  auto min5 = Run(p);
  EXPECT_EQ(min5.finish_reason, "stop");
  EXPECT_EQ(min5.token_ids.size(), 6u);  // five non-EOS tokens, then EOS
  EXPECT_EQ(min5.token_ids.back(), 2);
}

TEST_F(EngineParamsTest, LogitBiasForcesToken) {
  SamplingParams p = Params(5);
  p.logit_bias = {{500, 100.f}};
  EXPECT_EQ(Run(p).token_ids, std::vector<int32_t>(5, 500));
}

TEST_F(EngineParamsTest, TopKTopPMinPNarrowSamplingToGreedy) {
  // At temperature 1 with a fixed seed the draw differs from greedy...
  SamplingParams p = Params(24);
  p.temperature = 1.0f;
  p.seed = 11;
  ASSERT_NE(Run(p).token_ids, GoldenPrefix(24));
  // ...unless a filter leaves only the top token.
  SamplingParams k = p;
  k.top_k = 1;
  EXPECT_EQ(Run(k).token_ids, GoldenPrefix(24));
  SamplingParams tp = p;
  tp.top_p = 1e-6f;
  EXPECT_EQ(Run(tp).token_ids, GoldenPrefix(24));
  SamplingParams mp = p;
  mp.min_p = 1.0f;
  EXPECT_EQ(Run(mp).token_ids, GoldenPrefix(24));
}

int Repeats(const std::vector<int32_t>& ids) {
  return static_cast<int>(ids.size() - std::set<int32_t>(ids.begin(), ids.end()).size());
}

TEST_F(EngineParamsTest, PenaltiesReduceRepetition) {
  const auto base = GoldenPrefix(40);
  ASSERT_GT(Repeats(base), 3);
  for (int which = 0; which < 3; ++which) {
    SCOPED_TRACE(which);
    SamplingParams p = Params(40);
    if (which == 0) p.repetition_penalty = 3.0f;
    if (which == 1) p.presence_penalty = 2.0f;
    if (which == 2) p.frequency_penalty = 2.0f;
    auto r = Run(p);
    EXPECT_NE(r.token_ids, base);
    EXPECT_LT(Repeats(r.token_ids), Repeats(base));
  }
}

TEST_F(EngineParamsTest, NChoicesDifferAndAreSeeded) {
  SamplingParams p = Params(16);
  p.temperature = 1.0f;
  p.seed = 3;
  p.n = 3;
  p.ignore_eos = true;
  ASSERT_TRUE(engine_->AddRequest("n", {{1}, p}).ok());
  auto a = RunToCompletion(*engine_);
  ASSERT_EQ(a.size(), 3u);
  EXPECT_NE(a["n/0"].token_ids, a["n/1"].token_ids);
  EXPECT_NE(a["n/1"].token_ids, a["n/2"].token_ids);
  ASSERT_TRUE(engine_->AddRequest("n", {{1}, p}).ok());
  auto b = RunToCompletion(*engine_);
  for (const char* k : {"n/0", "n/1", "n/2"}) EXPECT_EQ(a[k].token_ids, b[k].token_ids) << k;
}

TEST_F(EngineParamsTest, Logprobs) {
  SamplingParams p = Params(6);
  p.logprobs = 3;
  auto r = Run(p);
  ASSERT_EQ(r.logprobs.size(), 6u);
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(r.logprobs[i].token, r.token_ids[i]);
    ASSERT_EQ(r.logprobs[i].top.size(), 3u);
    EXPECT_EQ(r.logprobs[i].top[0].id, r.token_ids[i]);  // greedy picks the most likely
    EXPECT_FLOAT_EQ(r.logprobs[i].top[0].logprob, r.logprobs[i].logprob);
    EXPECT_LE(r.logprobs[i].logprob, 0.f);
  }
  EXPECT_TRUE(Run(Params(6)).logprobs.empty());
}

// The golden story fed back as a prompt: each of its tokens scored where the model wrote it,
// the same logprob the greedy run reported for it, the most likely wherever the reference's top-2
// gap tells; the first against the reference's own logits.
TEST_F(EngineParamsTest, PromptLogprobsScoreTheGoldenStoryAsTheModelWroteIt) {
  SamplingParams greedy = Params(48);
  greedy.logprobs = 0;
  const testing::Completed written = Run(greedy);
  ASSERT_EQ(written.token_ids, GoldenPrefix(48));
  std::vector<int32_t> prompt = {1};
  for (int32_t t : GoldenPrefix(48)) prompt.push_back(t);
  SamplingParams p = Params(1);
  p.prompt_logprobs = 2;
  const testing::Completed scored = Run(p, prompt);
  ASSERT_EQ(scored.prompt_logprobs.size(), 48u);
  const auto golden =
      testing::ReadLogitsGolden(testing::SharedDir() + "/golden/logits/tinystories-656k");
  ASSERT_EQ(golden[0].ids, std::vector<int32_t>{1});
  for (size_t i = 0; i < 48; ++i) {
    const TokenLogprobs& lp = scored.prompt_logprobs[i];
    EXPECT_EQ(lp.token, golden_[i]);
    EXPECT_NEAR(lp.logprob, written.logprobs[i].logprob, 1e-4) << i;
    ASSERT_EQ(lp.top.size(), 2u);
    EXPECT_GE(lp.top[0].logprob, lp.top[1].logprob);
    if (golden[0].greedy_top2_gap[i] > testing::kGoldenGapThreshold) {
      EXPECT_EQ(lp.rank, 1) << i;
      EXPECT_EQ(lp.top[0].id, lp.token) << i;
    }
  }
  // log_softmax of the reference's logits after BOS, at the story's first token.
  const std::vector<float>& ref = golden[0].logits;
  double max = ref[0], sum = 0;
  for (float x : ref) max = std::max<double>(max, x);
  for (float x : ref) sum += std::exp(x - max);
  EXPECT_NEAR(scored.prompt_logprobs[0].logprob, ref[golden_[0]] - max - std::log(sum), 2e-2);
  // Not asked: none.
  EXPECT_TRUE(Run(Params(1), prompt).prompt_logprobs.empty());
}

TEST_F(EngineParamsTest, AbortFreesBlocksAndReportsAbort) {
  const int blocks = engine_->stats().num_blocks;
  ASSERT_TRUE(engine_->AddRequest("a", {std::vector<int32_t>(100, 5), Params(50)}).ok());
  ASSERT_TRUE(engine_->Step().ok());
  EXPECT_LT(engine_->stats().num_free_blocks, blocks);
  ASSERT_TRUE(engine_->Abort("a").ok());
  EXPECT_EQ(engine_->stats().num_free_blocks, blocks);
  auto out = engine_->Step();
  ASSERT_TRUE(out.ok());
  ASSERT_EQ(out->size(), 1u);
  EXPECT_TRUE((*out)[0].finished);
  EXPECT_EQ((*out)[0].finish_reason, "abort");
  EXPECT_FALSE(engine_->HasUnfinishedRequests());
  EXPECT_EQ(engine_->Abort("a").code(), StatusCode::kNotFound);
}

TEST_F(EngineParamsTest, BadRequestsAreRejectedAndChangeNothing) {
  auto expect = [&](EngineRequest r, const std::string& needle) {
    Status s = engine_->AddRequest("bad", std::move(r));
    ASSERT_FALSE(s.ok()) << needle;
    EXPECT_NE(s.message().find(needle), std::string::npos) << s.ToString();
    EXPECT_FALSE(engine_->HasUnfinishedRequests());
  };
  expect({{}, Params()}, "prompt must not be empty");
  expect({{1, 5000}, Params()}, "outside the vocabulary");
  SamplingParams long_gen = Params(600);
  expect({{1}, long_gen}, "exceeds the maximum context length of 512");
  SamplingParams bad_p = Params();
  bad_p.top_p = 0;
  expect({{1}, bad_p}, "top_p");
  ASSERT_TRUE(engine_->AddRequest("dup", {{1}, Params(2)}).ok());
  Status dup = engine_->AddRequest("dup", {{1}, Params(2)});
  EXPECT_NE(dup.message().find("already in use"), std::string::npos);
  RunToCompletion(*engine_);
  EXPECT_EQ(engine_->stats().num_free_blocks, engine_->stats().num_blocks);
}

}  // namespace
}  // namespace xinfer
