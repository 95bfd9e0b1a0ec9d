#include "sampling/logits_processors.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "sampling/counter_rng.h"
#include "sampling/logprobs.h"
#include "sampling/test_values.h"

namespace xinfer {
namespace {

using testing::kInf;
using testing::kNaN;

TEST(LogitsProcessorsTest, SanitizeTurnsNaNIntoNegativeInfinity) {
  std::vector<float> l = {1.0f, kNaN, -kInf, kInf};
  SanitizeLogits(l);
  EXPECT_EQ(l, (std::vector<float>{1.0f, -kInf, -kInf, kInf}));
}

TEST(LogitsProcessorsTest, LogitBiasIsAdded) {
  std::vector<float> l = {1.0f, 2.0f, 3.0f};
  const std::vector<std::pair<int32_t, float>> bias = {{0, 10.0f}, {2, -0.5f}};
  ApplyLogitBias(l, bias);
  EXPECT_EQ(l, (std::vector<float>{11.0f, 2.0f, 2.5f}));
}

TEST(LogitsProcessorsTest, RepetitionPenaltyDividesPositiveAndMultipliesNegative) {
  std::vector<float> l = {4.0f, -4.0f, 0.0f, 4.0f};
  const std::vector<int32_t> ids = {0, 1, 2};
  ApplyRepetitionPenalty(l, ids, 2.0f);
  EXPECT_EQ(l, (std::vector<float>{2.0f, -8.0f, 0.0f, 4.0f}));
  // A penalty < 1 encourages repetition symmetrically.
  std::vector<float> m = {4.0f, -4.0f};
  const std::vector<int32_t> both = {0, 1};
  ApplyRepetitionPenalty(m, both, 0.5f);
  EXPECT_EQ(m, (std::vector<float>{8.0f, -2.0f}));
}

TEST(LogitsProcessorsTest, PresenceAndFrequencyUseCounts) {
  std::vector<float> l(4, 1.0f);
  const std::unordered_map<int32_t, int32_t> counts = {{1, 1}, {2, 3}};
  ApplyPresenceFrequencyPenalties(l, counts, 0.5f, 0.25f);
  EXPECT_FLOAT_EQ(l[0], 1.0f);
  EXPECT_FLOAT_EQ(l[1], 1.0f - 0.5f - 0.25f);
  EXPECT_FLOAT_EQ(l[2], 1.0f - 0.5f - 0.75f);
  EXPECT_FLOAT_EQ(l[3], 1.0f);
}

TEST(LogitsProcessorsTest, MaskTokensSkipsIdsOutsideTheVocab) {
  std::vector<float> l = {1.0f, 2.0f};
  const std::vector<int32_t> ids = {1, 7, -1};
  MaskTokens(l, ids);
  EXPECT_EQ(l[0], 1.0f);
  EXPECT_EQ(l[1], -kInf);
}

TEST(LogitsProcessorsTest, ArgmaxTiesToLowestIdAndIgnoresNaN) {
  EXPECT_EQ(Argmax(std::vector<float>{1.0f, 3.0f, 3.0f, 2.0f}), 1);
  EXPECT_EQ(Argmax(std::vector<float>{kNaN, 0.5f, kNaN}), 1);
  EXPECT_EQ(Argmax(std::vector<float>{-kInf, kInf, kInf}), 1);
  EXPECT_EQ(Argmax(std::vector<float>{-kInf, -kInf}), -1);
  EXPECT_EQ(Argmax(std::vector<float>{kNaN}), -1);
}

// Argmax's block scan against the one-pass definition (strict >, so the lowest id among equal
// maxima; NaN and -inf never chosen), over sizes around the vector width and the block size,
// with maxima at the edges of blocks, in the tail, tied across blocks, and signed zeros.
TEST(LogitsProcessorsTest, ArgmaxMatchesTheOnePassDefinitionOnLargeVocabularies) {
  auto reference = [](const std::vector<float>& l) {
    int32_t best = -1;
    float value = -kInf;
    for (size_t i = 0; i < l.size(); ++i)
      if (l[i] > value) value = l[best = static_cast<int32_t>(i)];
    return best;
  };
  std::mt19937 rng(3);
  for (size_t n : {1u, 15u, 16u, 17u, 1023u, 1024u, 1025u, 2048u, 5000u, 151936u}) {
    for (int trial = 0; trial < 30; ++trial) {
      std::vector<float> l(n);
      for (float& x : l) x = static_cast<float>(std::uniform_int_distribution<int>(-50, 0)(rng));
      const size_t a = std::uniform_int_distribution<size_t>(0, n - 1)(rng);
      const size_t b = std::uniform_int_distribution<size_t>(0, n - 1)(rng);
      switch (trial % 6) {
        case 0:
          l[a] = l[b] = 7.0f;
          break;  // a tie anywhere
        case 1:
          l[n - 1] = 7.0f;
          break;  // the maximum in the tail
        case 2:
          l[a] = kNaN;
          l[b] = kNaN;
          break;  // NaN is never the maximum
        case 3:
          for (float& x : l) x = trial % 12 == 3 ? -kInf : kNaN;
          break;  // nothing valid
        case 4:
          for (float& x : l) x = -50.0f;
          l[a] = 0.0f;
          l[b] = -0.0f;
          break;  // ±0 tie
        default:
          l[a] = kInf;
          break;
      }
      ASSERT_EQ(Argmax(l), reference(l)) << "n " << n << " trial " << trial;
    }
  }
}

TEST(LogitsProcessorsTest, SanitizeFindsNaNAnywhereInALargeVocabulary) {
  for (size_t n : {5u, 16u, 151936u}) {
    for (size_t at : {size_t{0}, n / 2, n - 1}) {
      std::vector<float> l(n, 1.5f);
      l[at] = kNaN;
      SanitizeLogits(l);
      for (size_t i = 0; i < n; ++i) ASSERT_EQ(l[i], i == at ? -kInf : 1.5f) << n << " " << i;
    }
  }
}

TEST(TokenCounterTest, CountsIncrementallyAndRecountsIfShorter) {
  TokenCounter c;
  std::vector<int32_t> ids = {3, 3, 5};
  ASSERT_TRUE(c.Update(ids, 10, "output").ok());
  EXPECT_EQ(c.counts().at(3), 2);
  ids.push_back(3);
  ASSERT_TRUE(c.Update(ids, 10, "output").ok());
  EXPECT_EQ(c.counts().at(3), 3);
  EXPECT_EQ(c.counts().at(5), 1);
  ASSERT_TRUE(c.Update(std::vector<int32_t>{5}, 10, "output").ok());
  EXPECT_EQ(c.counts().count(3), 0u);
  EXPECT_EQ(c.counts().at(5), 1);
}

TEST(TokenCounterTest, OutOfRangeIdIsAnError) {
  TokenCounter c;
  const Status s = c.Update(std::vector<int32_t>{1, 10}, 10, "output");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("output token id 10"), std::string::npos) << s.message();
  EXPECT_TRUE(c.counts().empty());
}

TEST(LogSoftmaxTest, MatchesDirectComputation) {
  const std::vector<float> l = {1.0f, 2.0f, 3.0f, -kInf};
  const LogSoftmax ls(l);
  const double z = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0));
  EXPECT_NEAR(ls.LogProb(1.0f), 1.0 - z, 1e-6);
  EXPECT_NEAR(ls.LogProb(3.0f), 3.0 - z, 1e-6);
  EXPECT_EQ(ls.LogProb(-kInf), -kInf);
}

TEST(LogSoftmaxTest, HugeLogitsDoNotOverflow) {
  const std::vector<float> l = {10000.0f, 10000.0f, 9999.0f};
  const LogSoftmax ls(l);
  const double z = std::log(2.0 + std::exp(-1.0));
  EXPECT_NEAR(ls.LogProb(10000.0f), -z, 1e-5);
  EXPECT_NEAR(ls.LogProb(9999.0f), -1.0 - z, 1e-5);
}

TEST(LogSoftmaxTest, DegenerateInputsAreDefined) {
  const std::vector<float> pos_inf = {kInf, 0.0f, kInf};
  const LogSoftmax a(pos_inf);
  EXPECT_NEAR(a.LogProb(kInf), -std::log(2.0), 1e-6);
  EXPECT_EQ(a.LogProb(0.0f), -kInf);
  const std::vector<float> all_masked = {-kInf, -kInf};
  const LogSoftmax b(all_masked);
  EXPECT_EQ(b.LogProb(-kInf), -kInf);
}

TEST(LogSoftmaxTest, TopLogprobsSortedDescendingWithTiesByLowerId) {
  const std::vector<float> l = {0.0f, 5.0f, 1.0f, 5.0f, 3.0f, -kInf};
  const LogSoftmax ls(l);
  const auto top = TopLogprobs(l, 4, ls);
  ASSERT_EQ(top.size(), 4u);
  EXPECT_EQ(top[0].id, 1);
  EXPECT_EQ(top[1].id, 3);
  EXPECT_EQ(top[2].id, 4);
  EXPECT_EQ(top[3].id, 2);
  EXPECT_FLOAT_EQ(top[0].logprob, ls.LogProb(5.0f));
  EXPECT_FLOAT_EQ(top[3].logprob, ls.LogProb(1.0f));
  EXPECT_TRUE(TopLogprobs(l, 0, ls).empty());
  EXPECT_EQ(TopLogprobs(l, 20, ls).size(), l.size());  // n > vocab: everything
}

// A vocabulary-sized input (the block path: float terms, double sums) against a double-precision
// reference, with masked tokens; and TopLogprobs' skipping scan against a full sort, with ties.
TEST(LogSoftmaxTest, LargeVocabularyMatchesDoubleReferenceAndTopLogprobsASort) {
  std::mt19937 rng(11);
  for (size_t n : {255u, 257u, 151936u}) {
    std::vector<float> l(n);
    std::normal_distribution<float> logit(0.0f, 4.0f);
    for (float& x : l) x = std::round(logit(rng) * 4.0f) / 4.0f;  // many ties
    for (size_t i = 0; i < n; i += 7) l[i] = -kInf;
    l[n - 1] = 30.0f;  // the maximum in the tail
    double max = -kInf, sum = 0.0;
    for (float x : l) max = std::max(max, static_cast<double>(x));
    for (float x : l) sum += std::exp(static_cast<double>(x) - max);
    const double z = max + std::log(sum);
    const LogSoftmax ls(l);
    for (size_t i : {size_t{1}, n / 2 + 1, n - 1})
      EXPECT_NEAR(ls.LogProb(l[i]), l[i] - z, 1e-5) << n << " " << i;
    EXPECT_EQ(ls.LogProb(-kInf), -kInf);

    const auto top = TopLogprobs(l, 20, ls);
    std::vector<int32_t> ids(n);
    for (size_t i = 0; i < n; ++i) ids[i] = static_cast<int32_t>(i);
    std::stable_sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) { return l[a] > l[b]; });
    ASSERT_EQ(top.size(), 20u);
    for (size_t r = 0; r < top.size(); ++r) {
      EXPECT_EQ(top[r].id, ids[r]) << n << " rank " << r;
      EXPECT_EQ(top[r].logprob, ls.LogProb(l[ids[r]]));
    }
  }
}

TEST(CounterRngTest, PureFunctionOfSeedAndStepInUnitInterval) {
  EXPECT_EQ(UniformForStep(7, 3), UniformForStep(7, 3));
  EXPECT_NE(UniformForStep(7, 3), UniformForStep(7, 4));
  EXPECT_NE(UniformForStep(7, 3), UniformForStep(8, 3));
  double sum = 0.0;
  constexpr int kN = 10000;
  for (int i = 0; i < kN; ++i) {
    const double u = UniformForStep(42, static_cast<uint64_t>(i));
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum += u;
  }
  EXPECT_NEAR(sum / kN, 0.5, 0.01);
}

}  // namespace
}  // namespace xinfer
