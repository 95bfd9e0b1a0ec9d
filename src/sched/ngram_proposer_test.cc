#include "sched/ngram_proposer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>

namespace xinfer {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

std::vector<TokenId> Propose(const std::vector<TokenId>& tokens, int min_n, int max_n, int k) {
  std::vector<TokenId> drafts = {-1};  // cleared by the call
  ProposeNgramDrafts(tokens, min_n, max_n, k, drafts);
  return drafts;
}

// The plain statement of the rule, for comparison: the longest n in [min_n, max_n] whose last
// n tokens occur ending earlier, its earliest occurrence, and up to k tokens after it.
std::vector<TokenId> Reference(const std::vector<TokenId>& t, int min_n, int max_n, int k) {
  const int total = static_cast<int>(t.size());
  for (int n = max_n; n >= min_n; --n) {
    if (n >= total) continue;
    for (int start = 0; start + n <= total - 1; ++start) {
      if (!std::equal(t.begin() + start, t.begin() + start + n, t.end() - n)) continue;
      const int begin = start + n;
      return {t.begin() + begin, t.begin() + std::min(total, begin + k)};
    }
  }
  return {};
}

TEST(NgramProposerTest, ProposesWhatFollowedTheEarliestLongestMatch) {
  // ... 1 2 3 occurs twice before the end; the earliest is followed by 4 5.
  EXPECT_THAT(Propose({1, 2, 3, 4, 5, 9, 1, 2, 3, 7, 8, 1, 2, 3}, 1, 3, 2), ElementsAre(4, 5));
  // The longest match wins over an earlier shorter one: "2 3" first occurs before 6, but
  // "1 2 3" only before 4.
  EXPECT_THAT(Propose({2, 3, 6, 1, 2, 3, 4, 1, 2, 3}, 2, 3, 1), ElementsAre(4));
  // max_n caps the match: with 2 the earliest "2 3" is taken.
  EXPECT_THAT(Propose({2, 3, 6, 1, 2, 3, 4, 1, 2, 3}, 1, 2, 1), ElementsAre(6));
  // k caps the drafts, and the history's end caps them too.
  EXPECT_THAT(Propose({7, 8, 9, 7}, 1, 1, 5), ElementsAre(8, 9, 7));
  // A run of one token: the drafts continue it.
  EXPECT_THAT(Propose({4, 4, 4, 4, 4}, 2, 3, 3), ElementsAre(4, 4));
}

TEST(NgramProposerTest, NoDraftsWithoutAMatchOfAtLeastMinN) {
  EXPECT_THAT(Propose({1, 2, 3, 4}, 1, 3, 4), IsEmpty());
  EXPECT_THAT(Propose({1, 2, 9, 2}, 2, 3, 4), IsEmpty());  // only "2" matches
  EXPECT_THAT(Propose({5}, 1, 1, 4), IsEmpty());
  EXPECT_THAT(Propose({}, 1, 1, 4), IsEmpty());
  EXPECT_THAT(Propose({1, 1, 1}, 1, 1, 0), IsEmpty());  // k = 0
}

TEST(NgramProposerTest, MatchesThePlainRuleOnRandomHistories) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 3000; ++trial) {
    std::uniform_int_distribution<int> len(0, 40), alphabet(1, 1 + trial % 6), n(1, 4), k(0, 6);
    std::vector<TokenId> t(static_cast<size_t>(len(rng)));
    for (TokenId& x : t) x = alphabet(rng);
    int min_n = n(rng), max_n = n(rng);
    if (min_n > max_n) std::swap(min_n, max_n);
    const int kk = k(rng);
    EXPECT_EQ(Propose(t, min_n, max_n, kk), Reference(t, min_n, max_n, kk))
        << "trial " << trial << " min " << min_n << " max " << max_n << " k " << kk;
  }
}

}  // namespace
}  // namespace xinfer
