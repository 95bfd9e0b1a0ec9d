#include "sampling/sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "sampling/test_values.h"

namespace xinfer {
namespace {

using testing::kInf;
using testing::kNaN;
constexpr int32_t kSamplerEos = 9;

SamplingParams Params() {
  SamplingParams p;
  p.seed = 1234;
  return p;
}

// Samples with a fresh copy of `logits` (Sample uses its input as scratch).
SampleResult SampleOnce(Sampler& s, std::vector<float> logits, std::span<const int32_t> prompt = {},
                        std::span<const int32_t> output = {}) {
  auto r = s.Sample(logits, prompt, output);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : SampleResult{};
}

// Token frequencies over `draws` consecutive steps of one seeded sampler (step t = output length
// t, so each draw uses a fresh uniform; no penalties, so the output contents do not matter).
std::vector<double> Frequencies(const SamplingParams& p, const std::vector<float>& logits,
                                int draws) {
  Sampler s(p, {kSamplerEos}, 0);
  const std::vector<int32_t> zeros(static_cast<size_t>(draws), 0);
  std::vector<int> counts(logits.size(), 0);
  for (int t = 0; t < draws; ++t) {
    const auto r = SampleOnce(s, logits, {}, std::span(zeros).first(static_cast<size_t>(t)));
    ++counts[static_cast<size_t>(r.token)];
  }
  std::vector<double> freq;
  for (int c : counts) freq.push_back(static_cast<double>(c) / draws);  // exactly 1 if always
  return freq;
}

std::vector<double> Softmax(const std::vector<float>& logits, double temperature) {
  std::vector<double> p;
  double z = 0.0;
  for (float x : logits) z += std::exp(x / temperature);
  for (float x : logits) p.push_back(std::exp(x / temperature) / z);
  return p;
}

TEST(SamplerTest, GreedyIsArgmaxWithTiesToLowestIdAndIgnoresTheSeed) {
  SamplingParams p = Params();
  p.temperature = 0.0f;
  for (uint64_t seed : {1u, 2u, 3u}) {
    p.seed = seed;
    Sampler s(p, {kSamplerEos}, 0);
    EXPECT_EQ(SampleOnce(s, {0.5f, 2.0f, 1.0f, 2.0f}).token, 1);
  }
}

TEST(SamplerTest, GreedySeesPenalties) {
  SamplingParams p = Params();
  p.temperature = 0.0f;
  p.repetition_penalty = 2.0f;
  Sampler s(p, {kSamplerEos}, 0);
  const std::vector<int32_t> prompt = {0};
  // Token 0 (3.0) is in the prompt → 1.5, below token 1 (2.0).
  EXPECT_EQ(SampleOnce(s, {3.0f, 2.0f, 0.0f}, prompt).token, 1);
}

TEST(SamplerTest, EmpiricalFrequenciesMatchSoftmaxWithTemperature) {
  const std::vector<float> logits = {0.0f, 1.0f, 2.0f, 0.5f};
  constexpr int kDraws = 20000;  // std error of a frequency <= 0.0036
  for (float t : {1.0f, 0.5f, 2.0f}) {
    SamplingParams p = Params();
    p.temperature = t;
    const auto freq = Frequencies(p, logits, kDraws);
    const auto want = Softmax(logits, t);
    for (size_t i = 0; i < logits.size(); ++i) {
      EXPECT_NEAR(freq[i], want[i], 0.015) << "T=" << t << " token " << i;
    }
  }
  // And the temperature really matters: T=0.5 vs T=2 differ far beyond the tolerance.
  EXPECT_GT(Softmax(logits, 0.5)[2] - Softmax(logits, 2.0)[2], 0.2);
}

TEST(SamplerTest, TopKNeverYieldsATokenOutsideTheTopK) {
  SamplingParams p = Params();
  p.top_k = 2;
  const auto freq = Frequencies(p, {1.0f, 3.0f, 2.9f, 2.8f, 0.0f}, 3000);
  EXPECT_GT(freq[1], 0.4);
  EXPECT_GT(freq[2], 0.4);
  EXPECT_EQ(freq[0] + freq[3] + freq[4], 0.0);
  // Renormalized over the two survivors.
  EXPECT_NEAR(freq[1], 1.0 / (1.0 + std::exp(-0.1)), 0.03);
}

TEST(SamplerTest, TopKOneIsGreedyAndMinusOneIsDisabled) {
  SamplingParams p = Params();
  p.top_k = 1;
  const auto freq = Frequencies(p, {1.0f, 1.2f, 1.1f}, 500);
  EXPECT_EQ(freq[1], 1.0);
  p.top_k = -1;
  const auto all = Frequencies(p, {1.0f, 1.2f, 1.1f}, 2000);
  for (double f : all) EXPECT_GT(f, 0.2);
}

TEST(SamplerTest, TopPRestrictsToTheNucleus) {
  SamplingParams p = Params();
  p.top_p = 0.5f;  // four equal tokens: exactly the first two (ties → lower id)
  const auto freq = Frequencies(p, {1.0f, 1.0f, 1.0f, 1.0f}, 2000);
  EXPECT_NEAR(freq[0], 0.5, 0.05);
  EXPECT_NEAR(freq[1], 0.5, 0.05);
  EXPECT_EQ(freq[2] + freq[3], 0.0);
  p.top_p = 0.51f;
  const auto three = Frequencies(p, {1.0f, 1.0f, 1.0f, 1.0f}, 2000);
  EXPECT_GT(three[2], 0.2);
  EXPECT_EQ(three[3], 0.0);
}

TEST(SamplerTest, TopPIsAppliedAfterTemperature) {
  // probs at T=1: 0.731 / 0.269, so top_p=0.7 keeps only token 0. At T=4 they are 0.562 / 0.438
  // and both are needed.
  SamplingParams p = Params();
  p.top_p = 0.7f;
  EXPECT_EQ(Frequencies(p, {1.0f, 0.0f}, 500)[1], 0.0);
  p.temperature = 4.0f;
  EXPECT_GT(Frequencies(p, {1.0f, 0.0f}, 2000)[1], 0.3);
}

TEST(SamplerTest, MinPDropsUnlikelyTokens) {
  SamplingParams p = Params();
  p.min_p = 0.25f;  // relative probs 1, 0.5, 0.2, 0.1
  const std::vector<float> logits = {0.0f, std::log(0.5f), std::log(0.2f), std::log(0.1f)};
  const auto freq = Frequencies(p, logits, 3000);
  EXPECT_NEAR(freq[0], 2.0 / 3.0, 0.03);
  EXPECT_NEAR(freq[1], 1.0 / 3.0, 0.03);
  EXPECT_EQ(freq[2] + freq[3], 0.0);
  p.min_p = 0.0f;
  EXPECT_GT(Frequencies(p, logits, 3000)[3], 0.03);
}

TEST(SamplerTest, TopPRunsBeforeMinP) {
  // probs 0.4, 0.3, 0.2, 0.1. top_p 0.75 first keeps {0,1,2} (0.7 < 0.75); min_p 0.45 then
  // keeps all three (0.2 >= 0.45 * 0.4). The other order would renormalize {0,1,2} to
  // 0.44/0.33/0.22 and top_p would drop token 2.
  SamplingParams p = Params();
  p.top_p = 0.75f;
  p.min_p = 0.45f;
  const std::vector<float> logits = {std::log(0.4f), std::log(0.3f), std::log(0.2f),
                                     std::log(0.1f)};
  const auto freq = Frequencies(p, logits, 3000);
  EXPECT_GT(freq[2], 0.15);
  EXPECT_EQ(freq[3], 0.0);
}

TEST(SamplerTest, LogitBiasForcesAndBansTokens) {
  SamplingParams p = Params();
  p.logit_bias = {{3, 100.0f}};
  EXPECT_EQ(Frequencies(p, {5.0f, 4.0f, 3.0f, -5.0f}, 200)[3], 1.0);
  p.logit_bias = {{0, -100.0f}};
  EXPECT_EQ(Frequencies(p, {50.0f, 0.0f, 0.0f, 0.0f}, 500)[0], 0.0);
}

// vLLM's allowed_token_ids: nothing outside the list is ever sampled, however likely, and greedy
// decoding takes the best of the list; logprobs stay those of the raw logits.
TEST(SamplerTest, AllowedTokenIdsRestrictTheChoice) {
  SamplingParams p = Params();
  p.allowed_token_ids = {1, 3, 3};  // repeats are harmless
  const auto freq = Frequencies(p, {9.0f, 1.0f, 8.0f, 1.5f, 7.0f}, 2000);
  EXPECT_EQ(freq[0] + freq[2] + freq[4], 0.0);
  EXPECT_GT(freq[1], 0.2);
  EXPECT_GT(freq[3], 0.4);

  SamplingParams g = Params();
  g.temperature = 0.0f;
  g.logprobs = 1;
  g.allowed_token_ids = {4, 2};
  Sampler s(g, {kSamplerEos}, 0);
  const SampleResult r = SampleOnce(s, {9.0f, 1.0f, 7.0f, 1.5f, 8.0f});
  EXPECT_EQ(r.token, 4);
  ASSERT_EQ(r.top_logprobs.size(), 1u);
  EXPECT_EQ(r.top_logprobs[0].id, 0);  // raw: the banned token is still the most likely

  SamplingParams bad = Params();
  bad.allowed_token_ids = {5};
  EXPECT_NE(bad.Validate(5).message().find("allowed_token_ids entry 5 is out of range [0, 5)"),
            std::string::npos);
  EXPECT_TRUE(bad.Validate(6).ok());
  Sampler sb(bad, {kSamplerEos}, 0);
  std::vector<float> logits(5, 0.0f);
  EXPECT_EQ(sb.Sample(logits, {}, {}).status().code(), StatusCode::kInvalidArgument);
}

// vLLM's bad_words: a one-token word is never sampled; a longer word's last token only where the
// output ends with the rest of it.
TEST(SamplerTest, BadWordsMaskTheTokenThatWouldCompleteAWord) {
  SamplingParams p = Params();
  p.temperature = 0.0f;
  p.bad_words_token_ids = {{4}, {1, 2, 3}};
  Sampler s(p, {kSamplerEos}, 0);
  const std::vector<float> logits = {0.0f, 1.0f, 2.0f, 8.0f, 9.0f};
  const std::vector<int32_t> none, after_1_2 = {7, 1, 2}, after_2 = {1, 1, 2, 2}, after_1 = {2, 1};
  EXPECT_EQ(SampleOnce(s, logits, {}, none).token, 3);       // 4 banned everywhere
  EXPECT_EQ(SampleOnce(s, logits, {}, after_1_2).token, 2);  // 1 2 → 3 would complete it
  EXPECT_EQ(SampleOnce(s, logits, {}, after_2).token, 3);
  EXPECT_EQ(SampleOnce(s, logits, {}, after_1).token, 3);
  // The prompt is not part of the output: a word it ends with is not completed.
  const std::vector<int32_t> prompt = {1, 2};
  EXPECT_EQ(SampleOnce(s, logits, prompt, none).token, 3);
  SamplingParams bad = Params();
  bad.bad_words_token_ids = {{1, 5}};
  EXPECT_NE(bad.Validate(5).message().find("bad_words: token id 5 is out of range"),
            std::string::npos);
  bad.bad_words_token_ids = {{}};
  EXPECT_FALSE(bad.Validate(5).ok());
}

TEST(SamplerTest, RepetitionPenaltyAppliesToPromptAndOutputOnce) {
  SamplingParams p = Params();
  p.repetition_penalty = 2.0f;
  Sampler s(p, {kSamplerEos}, 0);
  std::vector<float> l = {4.0f, -4.0f, 4.0f, -4.0f, 4.0f};
  const std::vector<int32_t> prompt = {0, 0, 1};
  const std::vector<int32_t> output = {2, 1, 2};
  ASSERT_TRUE(s.ProcessLogits(l, prompt, output).ok());
  // 0: prompt (twice, penalized once); 1: prompt and output (once); 2: output; 3, 4: unseen.
  EXPECT_EQ(l, (std::vector<float>{2.0f, -8.0f, 2.0f, -4.0f, 4.0f}));
}

TEST(SamplerTest, PresenceAndFrequencyPenaltiesUseOutputOnly) {
  const std::vector<int32_t> prompt = {0, 0, 0};
  const std::vector<int32_t> output = {1, 1, 1, 2};
  SamplingParams p = Params();
  p.presence_penalty = 0.5f;
  {
    Sampler s(p, {kSamplerEos}, 0);
    std::vector<float> l(4, 1.0f);
    ASSERT_TRUE(s.ProcessLogits(l, prompt, output).ok());
    EXPECT_EQ(l, (std::vector<float>{1.0f, 0.5f, 0.5f, 1.0f}));  // presence: count-independent
  }
  p.presence_penalty = 0.0f;
  p.frequency_penalty = 0.5f;
  {
    Sampler s(p, {kSamplerEos}, 0);
    std::vector<float> l(4, 1.0f);
    ASSERT_TRUE(s.ProcessLogits(l, prompt, output).ok());
    EXPECT_EQ(l, (std::vector<float>{1.0f, -0.5f, 0.5f, 1.0f}));  // frequency: times count
    // Incremental: one more token 2 next step.
    std::vector<int32_t> longer = output;
    longer.push_back(2);
    std::vector<float> m(4, 1.0f);
    ASSERT_TRUE(s.ProcessLogits(m, prompt, longer).ok());
    EXPECT_EQ(m, (std::vector<float>{1.0f, -0.5f, 0.0f, 1.0f}));
  }
}

TEST(SamplerTest, NegativePenaltiesEncourageRepetition) {
  SamplingParams p = Params();
  p.temperature = 0.0f;
  p.presence_penalty = -2.0f;
  Sampler s(p, {kSamplerEos}, 0);
  const std::vector<int32_t> output = {2};
  EXPECT_EQ(SampleOnce(s, {1.0f, 2.0f, 0.5f}, {}, output).token, 2);
}

TEST(SamplerTest, MinTokensMasksEosAndStopIdsUntilReached) {
  SamplingParams p = Params();
  p.temperature = 0.0f;
  p.min_tokens = 2;
  p.stop_token_ids = {5};
  Sampler s(p, {kSamplerEos}, 0);
  std::vector<float> logits(10, 0.0f);
  logits[kSamplerEos] = 10.0f;
  logits[5] = 9.0f;
  logits[3] = 1.0f;
  const std::vector<int32_t> out = {3, 3};
  EXPECT_EQ(SampleOnce(s, logits, {}, std::span(out).first(0)).token, 3);
  EXPECT_EQ(SampleOnce(s, logits, {}, std::span(out).first(1)).token, 3);
  EXPECT_EQ(SampleOnce(s, logits, {}, out).token, kSamplerEos);  // 2 tokens exist: allowed now
}

TEST(SamplerTest, MinTokensLeavesEosAloneWithIgnoreEos) {
  SamplingParams p = Params();
  p.temperature = 0.0f;
  p.min_tokens = 3;
  p.ignore_eos = true;
  p.stop_token_ids = {5};
  Sampler s(p, {kSamplerEos}, 0);
  std::vector<float> logits(10, 0.0f);
  logits[kSamplerEos] = 10.0f;
  logits[5] = 11.0f;
  EXPECT_EQ(SampleOnce(s, logits).token, kSamplerEos);  // stop id still masked, EOS is not
}

TEST(SamplerTest, SameSeedSameTokensRegardlessOfInterleaving) {
  std::mt19937 gen(7);
  std::uniform_real_distribution<float> dist(-3.0f, 3.0f);
  std::vector<std::vector<float>> steps(40, std::vector<float>(50));
  for (auto& l : steps)
    for (auto& x : l) x = dist(gen);

  SamplingParams p = Params();
  p.seed = 99;
  p.top_k = 20;
  p.top_p = 0.9f;
  auto run = [&](bool interleave) {
    Sampler s(p, {kSamplerEos}, 0);
    SamplingParams other_params = Params();
    other_params.seed = 5;
    Sampler other(other_params, {kSamplerEos}, 0);
    std::vector<int32_t> out, other_out;
    for (const auto& l : steps) {
      if (interleave) {  // another request in the batch, sampled first, twice
        other_out.push_back(SampleOnce(other, l, {}, other_out).token);
        other_out.push_back(SampleOnce(other, l, {}, other_out).token);
      }
      out.push_back(SampleOnce(s, l, {}, out).token);
    }
    return out;
  };
  const auto alone = run(false);
  EXPECT_EQ(alone, run(true));
  // Another Sampler with the same seed, and the fallback seed being ignored when a seed is set.
  Sampler again(p, {kSamplerEos}, /*fallback_seed=*/12345);
  std::vector<int32_t> out;
  for (const auto& l : steps) out.push_back(SampleOnce(again, l, {}, out).token);
  EXPECT_EQ(alone, out);
}

TEST(SamplerTest, DifferentSeedsGiveDifferentSequences) {
  const std::vector<float> flat(100, 0.0f);
  auto run = [&](std::optional<uint64_t> seed, uint64_t fallback) {
    SamplingParams p = Params();
    p.seed = seed;
    Sampler s(p, {kSamplerEos}, fallback);
    std::vector<int32_t> out;
    for (int i = 0; i < 20; ++i) out.push_back(SampleOnce(s, flat, {}, out).token);
    return out;
  };
  EXPECT_NE(run(1, 0), run(2, 0));
  EXPECT_NE(run(std::nullopt, 1), run(std::nullopt, 2));  // the fallback seed is used
  EXPECT_EQ(run(std::nullopt, 3), run(3, 777));           // ...exactly like an explicit seed
  EXPECT_EQ(run(1, 0).size(), 20u);
}

TEST(SamplerTest, LogprobsAreRawLogSoftmaxWithSortedTopN) {
  SamplingParams p = Params();
  p.logprobs = 2;
  p.temperature = 0.3f;          // none of the processing below may affect raw logprobs
  p.logit_bias = {{0, 100.0f}};  // forces token 0, the least likely under raw logits
  p.repetition_penalty = 1.5f;
  Sampler s(p, {kSamplerEos}, 0);
  const std::vector<float> logits = {0.0f, 2.0f, 1.0f, 2.0f};
  const std::vector<int32_t> prompt = {1};
  const auto r = SampleOnce(s, logits, prompt);
  const double z = std::log(1.0 + 2.0 * std::exp(2.0) + std::exp(1.0));
  EXPECT_EQ(r.token, 0);
  EXPECT_NEAR(r.logprob, 0.0 - z, 1e-5);
  ASSERT_EQ(r.top_logprobs.size(), 2u);
  EXPECT_EQ(r.top_logprobs[0].id, 1);  // tie with 3 → lower id first
  EXPECT_EQ(r.top_logprobs[1].id, 3);
  EXPECT_NEAR(r.top_logprobs[0].logprob, 2.0 - z, 1e-5);
  EXPECT_NEAR(r.top_logprobs[1].logprob, 2.0 - z, 1e-5);
}

TEST(SamplerTest, LogprobsZeroAndAbsent) {
  SamplingParams p = Params();
  p.temperature = 0.0f;
  p.logprobs = 0;
  Sampler with(p, {kSamplerEos}, 0);
  const auto r = SampleOnce(with, {0.0f, 0.0f});
  EXPECT_TRUE(r.top_logprobs.empty());
  EXPECT_NEAR(r.logprob, std::log(0.5), 1e-6);
  p.logprobs = -1;
  Sampler without(p, {kSamplerEos}, 0);
  const auto q = SampleOnce(without, {0.0f, 0.0f});
  EXPECT_TRUE(q.top_logprobs.empty());
  EXPECT_EQ(q.logprob, 0.0f);
}

TEST(SamplerTest, NaNLogitsAreNeverChosen) {
  SamplingParams p = Params();
  p.logprobs = 3;
  const std::vector<float> logits = {kNaN, 0.0f, kNaN, 0.0f};
  const auto freq = Frequencies(p, logits, 500);
  EXPECT_EQ(freq[0] + freq[2], 0.0);
  Sampler s(p, {kSamplerEos}, 0);
  const auto r = SampleOnce(s, logits);
  EXPECT_NEAR(r.logprob, std::log(0.5), 1e-6);
  ASSERT_EQ(r.top_logprobs.size(), 3u);
  EXPECT_EQ(r.top_logprobs[2].logprob, -kInf);
  p.temperature = 0.0f;
  Sampler g(p, {kSamplerEos}, 0);
  EXPECT_EQ(SampleOnce(g, {kNaN, -1.0f, kNaN}).token, 1);
}

TEST(SamplerTest, PositiveInfinityLogitsShareTheProbability) {
  SamplingParams p = Params();
  const auto freq = Frequencies(p, {100.0f, kInf, 0.0f, kInf}, 1000);
  EXPECT_EQ(freq[0] + freq[2], 0.0);
  EXPECT_NEAR(freq[1], 0.5, 0.07);
}

TEST(SamplerTest, NothingSampleableIsAnErrorNotACrash) {
  for (float t : {0.0f, 1.0f}) {
    SamplingParams p = Params();
    p.temperature = t;
    p.logprobs = 1;
    Sampler s(p, {kSamplerEos}, 0);
    std::vector<float> logits = {kNaN, kNaN, -kInf};
    const auto r = s.Sample(logits, {}, {});
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInternal);
  }
  Sampler s(Params(), {kSamplerEos}, 0);
  EXPECT_FALSE(s.Sample({}, {}, {}).ok());
}

TEST(SamplerTest, OutOfRangeIdsAreErrors) {
  SamplingParams p = Params();
  p.repetition_penalty = 1.2f;
  Sampler s(p, {kSamplerEos}, 0);
  std::vector<float> logits(4, 0.0f);
  const std::vector<int32_t> bad_prompt = {1, 4};
  auto r = s.Sample(logits, bad_prompt, {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("prompt token id 4"), std::string::npos);
  const std::vector<int32_t> bad_output = {-1};
  r = s.Sample(logits, {}, bad_output);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("output token id -1"), std::string::npos);

  SamplingParams b = Params();
  b.logit_bias = {{10, 1.0f}};  // validated against a larger vocab than these logits
  Sampler sb(b, {kSamplerEos}, 0);
  r = sb.Sample(logits, {}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
}

TEST(SamplerTest, FullVocabWithTopPAndNoTopK) {
  // Realistic size: exercises the partial-selection top-p path on 151,936 logits.
  constexpr size_t kVocab = 151936;
  std::mt19937 gen(3);
  std::normal_distribution<float> dist(0.0f, 2.0f);
  std::vector<float> logits(kVocab);
  for (auto& x : logits) x = dist(gen);
  logits[42] = 30.0f;  // dominant: top_p 0.9 must pick it alone
  SamplingParams p = Params();
  p.top_p = 0.9f;
  p.logprobs = 5;
  Sampler s(p, {kSamplerEos}, 0);
  const auto r = SampleOnce(s, logits);
  EXPECT_EQ(r.token, 42);
  EXPECT_EQ(r.top_logprobs[0].id, 42);
  EXPECT_GT(r.logprob, -0.01f);
}

}  // namespace
}  // namespace xinfer
