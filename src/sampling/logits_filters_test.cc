#include "sampling/logits_filters.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "sampling/test_values.h"

namespace xinfer {
namespace {

using testing::kInf;

std::vector<Candidate> FromLogits(const std::vector<float>& logits, float temperature = 1.0f) {
  std::vector<Candidate> c;
  CollectCandidates(logits, c);
  ComputeWeights(c, temperature);
  return c;
}

std::vector<int32_t> SortedIds(const std::vector<Candidate>& c) {
  std::vector<int32_t> ids;
  for (const auto& x : c) ids.push_back(x.id);
  std::sort(ids.begin(), ids.end());
  return ids;
}

// Logits whose softmax is exactly-ish the given probabilities.
std::vector<float> LogitsOf(const std::vector<double>& probs) {
  std::vector<float> l;
  for (double p : probs) l.push_back(static_cast<float>(std::log(p)));
  return l;
}

TEST(LogitsFiltersTest, CollectSkipsMaskedTokens) {
  std::vector<Candidate> c;
  CollectCandidates(std::vector<float>{1.0f, -kInf, 2.0f}, c);
  EXPECT_EQ(SortedIds(c), (std::vector<int32_t>{0, 2}));
}

TEST(LogitsFiltersTest, CollectKeepsOnlyPositiveInfinity) {
  std::vector<Candidate> c;
  CollectCandidates(std::vector<float>{1.0f, kInf, 2.0f, kInf}, c);
  EXPECT_EQ(SortedIds(c), (std::vector<int32_t>{1, 3}));
  for (const auto& x : c) EXPECT_EQ(x.logit, 0.0f);
}

// CollectTopK against CollectCandidates + ApplyTopK: the same candidates (ids and logits), sorted
// by logit with ties to the lower id, over vocabularies with many ties, -inf, NaN and +inf, k
// from 1 to past the vocabulary, and sizes that are not multiples of the vector width.
TEST(LogitsFiltersTest, CollectTopKIsCollectThenTopKSorted) {
  std::mt19937 rng(7);
  const float kNaN = std::numeric_limits<float>::quiet_NaN();
  for (int trial = 0; trial < 400; ++trial) {
    const size_t n = std::uniform_int_distribution<size_t>(1, 3000)(rng);
    // Few distinct values so that ties cross the list's cut-backs; some trials with wide values.
    const int distinct = trial % 3 == 0 ? 1 << 20 : 1 + trial % 40;
    std::vector<float> logits(n);
    for (float& x : logits) {
      const int r = std::uniform_int_distribution<int>(0, 99)(rng);
      x = r < 5 ? -kInf
          : r < 7
              ? kNaN
              : static_cast<float>(std::uniform_int_distribution<int>(0, distinct)(rng)) * 0.25f;
    }
    if (trial % 50 == 7) logits[n / 2] = kInf;
    if (trial % 50 == 8) logits[n - 1] = kInf;
    // Increasing logits: every one beats the bar, so the list is cut back many times.
    if (trial % 25 == 3)
      for (size_t i = 0; i < n; ++i) logits[i] = static_cast<float>(i);
    for (int32_t k : {1, 2, 5, 20, 63, 64, 65, 200, static_cast<int>(n) - 1, static_cast<int>(n),
                      static_cast<int>(n) + 3, 0, -1}) {
      std::vector<Candidate> want, got;
      CollectCandidates(logits, want);
      ApplyTopK(want, k);
      if (k > 0 && static_cast<size_t>(k) < n) {
        std::sort(want.begin(), want.end(), [](const Candidate& a, const Candidate& b) {
          return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
        });
      }
      CollectTopK(logits, k, got);
      ASSERT_EQ(got.size(), want.size()) << "trial " << trial << " n " << n << " k " << k;
      for (size_t i = 0; i < want.size(); ++i) {
        ASSERT_EQ(got[i].id, want[i].id) << "trial " << trial << " k " << k << " at " << i;
        ASSERT_EQ(got[i].logit, want[i].logit);
      }
    }
  }
}

// DrawUnfiltered against the candidate path it replaces: the same token for every u, over
// vocabularies with -inf, NaN and +inf, several temperatures and min_p, and u at the edges.
TEST(LogitsFiltersTest, DrawUnfilteredIsCollectWeightsDraw) {
  std::mt19937 rng(5);
  const float kNaN = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> scratch;
  for (int trial = 0; trial < 300; ++trial) {
    const size_t n = std::uniform_int_distribution<size_t>(1, 2000)(rng);
    std::vector<float> logits(n);
    std::normal_distribution<float> logit(0.0f, trial % 2 ? 3.0f : 40.0f);
    for (float& x : logits) {
      const int r = std::uniform_int_distribution<int>(0, 99)(rng);
      x = r < 10 ? -kInf : r < 12 ? kNaN : logit(rng);
    }
    if (trial % 40 == 5) logits[n / 3] = kInf;
    if (trial % 40 == 6)
      for (float& x : logits) x = -kInf;
    for (float t : {0.3f, 1.0f, 1.7f}) {
      for (float min_p : {0.0f, 0.05f, 0.5f, 1.0f}) {
        std::vector<Candidate> c;
        CollectCandidates(logits, c);
        ComputeWeights(c, t);
        ApplyMinP(c, min_p);
        for (double u : {0.0, 1e-9, 0.25, 0.5, 0.9, 0.999999, std::nextafter(1.0, 0.0)}) {
          ASSERT_EQ(DrawUnfiltered(logits, t, min_p, u, scratch), DrawToken(c, u))
              << "trial " << trial << " t " << t << " min_p " << min_p << " u " << u;
        }
      }
    }
  }
}

// DrawNucleus against the candidate path with ApplyTopP: the same token for every u, over
// vocabularies with -inf, NaN and +inf, peaked and flat distributions (nuclei of one token to
// most of the vocabulary), top_p from within the slack of 0 to just under 1.
TEST(LogitsFiltersTest, DrawNucleusIsCollectWeightsTopPDraw) {
  std::mt19937 rng(9);
  const float kNaN = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> weights;
  std::vector<Candidate> nucleus;
  for (int trial = 0; trial < 300; ++trial) {
    const size_t n = std::uniform_int_distribution<size_t>(1, 3000)(rng);
    std::vector<float> logits(n);
    const float spread = trial % 3 == 0 ? 0.01f : trial % 3 == 1 ? 2.0f : 30.0f;
    std::normal_distribution<float> logit(0.0f, spread);
    for (float& x : logits) {
      const int r = std::uniform_int_distribution<int>(0, 99)(rng);
      x = r < 10 ? -kInf : r < 12 ? kNaN : std::round(logit(rng) * 8.0f) / 8.0f;  // ties too
    }
    if (trial % 40 == 5) logits[n / 3] = kInf;
    if (trial % 40 == 6)
      for (float& x : logits) x = -kInf;
    for (float top_p : {1e-7f, 0.1f, 0.5f, 0.8f, 0.95f, 0.999f}) {
      for (float t : {0.5f, 1.0f}) {
        std::vector<Candidate> c;
        CollectCandidates(logits, c);
        ComputeWeights(c, t);
        ApplyTopP(c, top_p);
        for (double u : {0.0, 0.3, 0.7, std::nextafter(1.0, 0.0)}) {
          ASSERT_EQ(DrawNucleus(logits, t, top_p, u, weights, nucleus), DrawToken(c, u))
              << "trial " << trial << " top_p " << top_p << " t " << t << " u " << u;
        }
      }
    }
  }
}

TEST(LogitsFiltersTest, TopKKeepsExactlyKWithTiesToLowerId) {
  auto c = FromLogits({1.0f, 5.0f, 3.0f, 5.0f, 4.0f});
  ApplyTopK(c, 2);
  EXPECT_EQ(SortedIds(c), (std::vector<int32_t>{1, 3}));
  auto d = FromLogits({2.0f, 2.0f, 2.0f, 1.0f});
  ApplyTopK(d, 2);
  EXPECT_EQ(SortedIds(d), (std::vector<int32_t>{0, 1}));
  auto e = FromLogits({1.0f, 2.0f});
  ApplyTopK(e, 5);
  EXPECT_EQ(e.size(), 2u);
  ApplyTopK(e, 0);
  EXPECT_EQ(e.size(), 2u);
}

TEST(LogitsFiltersTest, TemperatureScalesWeights) {
  auto c = FromLogits({0.0f, 1.0f}, 0.5f);
  std::sort(c.begin(), c.end(), [](auto& a, auto& b) { return a.id < b.id; });
  // Float weights (ComputeWeights): within a few float ulps of the exact value.
  EXPECT_NEAR(c[0].weight, std::exp(-2.0), 4e-7 * std::exp(-2.0));
  EXPECT_DOUBLE_EQ(c[1].weight, 1.0);
}

TEST(LogitsFiltersTest, TopPExactBoundaries) {
  // Four equally likely tokens: cumulative 0.25, 0.5, 0.75, 1 exactly.
  const std::vector<float> flat(4, 0.0f);
  const std::pair<float, std::vector<int32_t>> cases[] = {
      {0.2f, {0}},        {0.25f, {0}},       {0.26f, {0, 1}},       {0.5f, {0, 1}},
      {0.51f, {0, 1, 2}}, {0.75f, {0, 1, 2}}, {0.76f, {0, 1, 2, 3}}, {1.0f, {0, 1, 2, 3}},
  };
  for (const auto& [top_p, want] : cases) {
    auto c = FromLogits(flat);
    ApplyTopP(c, top_p);
    EXPECT_EQ(SortedIds(c), want) << "top_p=" << top_p;
  }
}

TEST(LogitsFiltersTest, TopPDecimalBoundaryIsNotPushedOverByFloatRounding) {
  // 0.5 + 0.3 reaches 0.8 even though 0.8f > 0.8 and the weights carry rounding error.
  auto c = FromLogits(LogitsOf({0.2, 0.5, 0.3}));
  ApplyTopP(c, 0.8f);
  EXPECT_EQ(SortedIds(c), (std::vector<int32_t>{1, 2}));
  auto d = FromLogits(LogitsOf({0.2, 0.5, 0.3}));
  ApplyTopP(d, 0.81f);
  EXPECT_EQ(SortedIds(d), (std::vector<int32_t>{0, 1, 2}));
}

TEST(LogitsFiltersTest, TopPAlwaysKeepsTheMostLikelyToken) {
  auto c = FromLogits({0.0f, 3.0f, 1.0f});
  ApplyTopP(c, 1e-6f);
  EXPECT_EQ(SortedIds(c), (std::vector<int32_t>{1}));
}

TEST(LogitsFiltersTest, TopPWithALargeNucleus) {
  // 1000 equal tokens and top_p 0.5 need exactly 500 of them, chosen by the id tie-break.
  auto c = FromLogits(std::vector<float>(1000, 1.0f));
  ApplyTopP(c, 0.5f);
  ASSERT_EQ(c.size(), 500u);
  const auto ids = SortedIds(c);
  EXPECT_EQ(ids.front(), 0);
  EXPECT_EQ(ids.back(), 499);  // ties → lower ids
}

TEST(LogitsFiltersTest, TopPMatchesAFullSortReference) {
  std::mt19937 gen(5);
  for (int trial = 0; trial < 60; ++trial) {
    // Flat to peaky distributions, with repeated values (ties) in some trials.
    const float scale = std::array{0.01f, 0.5f, 3.0f, 20.0f}[trial % 4];
    const size_t n = std::array<size_t, 3>{3, 200, 5000}[trial % 3];
    std::normal_distribution<float> dist(0.0f, scale);
    std::vector<float> logits(n);
    for (auto& x : logits) x = trial % 5 == 0 ? std::round(dist(gen)) : dist(gen);
    const float top_p = std::uniform_real_distribution<float>(0.05f, 0.999f)(gen);

    auto c = FromLogits(logits);
    auto ref = c;
    std::sort(ref.begin(), ref.end(), [](const Candidate& a, const Candidate& b) {
      return a.weight > b.weight || (a.weight == b.weight && a.id < b.id);
    });
    double total = 0.0;
    for (const auto& x : ref) total += x.weight;
    double cum = 0.0;
    size_t m = 0;
    while (m < ref.size() && cum < (top_p - 1e-6) * total) cum += ref[m++].weight;
    ref.resize(std::max<size_t>(m, 1));

    ApplyTopP(c, top_p);
    ASSERT_EQ(SortedIds(c), SortedIds(ref)) << "trial " << trial << " top_p " << top_p;
  }
}

TEST(LogitsFiltersTest, MinPIsRelativeToTheMostLikelyToken) {
  // probs 0.5, 0.25, 0.15, 0.1 → relative 1, 0.5, 0.3, 0.2.
  const auto logits = LogitsOf({0.5, 0.25, 0.15, 0.1});
  auto c = FromLogits(logits);
  ApplyMinP(c, 0.3f - 1e-4f);
  EXPECT_EQ(SortedIds(c), (std::vector<int32_t>{0, 1, 2}));
  auto d = FromLogits(logits);
  ApplyMinP(d, 0.5f - 1e-4f);
  EXPECT_EQ(SortedIds(d), (std::vector<int32_t>{0, 1}));
  auto e = FromLogits(logits);
  ApplyMinP(e, 1.0f);
  EXPECT_EQ(SortedIds(e), (std::vector<int32_t>{0}));
  auto f = FromLogits(logits);
  ApplyMinP(f, 0.0f);
  EXPECT_EQ(f.size(), 4u);
}

TEST(LogitsFiltersTest, DrawIsInverseCdf) {
  const std::vector<Candidate> c = {{7, 0, 1.0}, {3, 0, 0.0}, {9, 0, 3.0}};
  EXPECT_EQ(DrawToken(c, 0.0), 7);
  EXPECT_EQ(DrawToken(c, 0.2499), 7);
  EXPECT_EQ(DrawToken(c, 0.25), 9);  // zero-weight 3 is skipped
  EXPECT_EQ(DrawToken(c, std::nextafter(1.0, 0.0)), 9);
  const std::vector<Candidate> only_zero_then_live = {{1, 0, 0.0}, {2, 0, 1.0}};
  EXPECT_EQ(DrawToken(only_zero_then_live, 0.0), 2);
  EXPECT_EQ(DrawToken(std::vector<Candidate>{}, 0.5), -1);
}

}  // namespace
}  // namespace xinfer
