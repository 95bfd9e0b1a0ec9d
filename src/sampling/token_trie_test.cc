// The trie holds every non-empty token once, in depth-first order, and a walk reaches exactly the
// tokens a token-by-token check accepts (random vocabularies and random byte predicates, prefixes
// shared, repeated and nested).
#include "sampling/token_trie.h"

#include <gtest/gtest.h>

#include <random>
#include <set>

namespace xinfer {
namespace {

std::vector<std::string> RandomVocabulary(std::mt19937& rng, size_t n) {
  std::vector<std::string> v;
  std::uniform_int_distribution<int> len(0, 6);
  std::uniform_int_distribution<int> byte(0, 3);  // few distinct bytes: many shared prefixes
  for (size_t i = 0; i < n; ++i) {
    std::string s;
    for (int k = len(rng); k > 0; --k)
      s.push_back(static_cast<char>(byte(rng) == 3 ? 0xC3 : 'a' + byte(rng)));
    v.push_back(s);
  }
  return v;
}

TEST(TokenTrieTest, LaysOutEveryTokenDepthFirst) {
  const TokenTrie trie({"ab", "", "a", "b", "abc", "ab"});
  // root, a, ab, abc, b
  ASSERT_EQ(trie.size(), 5u);
  EXPECT_EQ(trie.byte(1), 'a');
  EXPECT_EQ(trie.byte(2), 'b');
  EXPECT_EQ(trie.depth(3), 3u);
  EXPECT_EQ(trie.subtree_end(1), 4u);
  EXPECT_EQ(trie.subtree_end(4), 5u);
  EXPECT_EQ(trie.subtree_end(0), 5u);
  EXPECT_EQ(std::set<int32_t>(trie.tokens(2).begin(), trie.tokens(2).end()),
            (std::set<int32_t>{0, 5}));
  EXPECT_TRUE(trie.tokens(0).empty());  // the empty token is left out
  EXPECT_EQ(trie.max_depth(), 3u);
}

TEST(TokenTrieTest, WalkReachesExactlyTheTokensEachByteAllows) {
  std::mt19937 rng(7);
  for (int round = 0; round < 200; ++round) {
    const std::vector<std::string> vocab = RandomVocabulary(rng, 1 + rng() % 60);
    const TokenTrie trie(vocab);
    // A predicate on (state, byte): the state is the number of bytes so far plus a hash of them,
    // so that the walk must carry state from parent to child.
    const uint32_t salt = static_cast<uint32_t>(rng());
    auto allows = [&](uint32_t state, uint8_t byte) {
      return ((state * 31 + byte) ^ salt) % 5 != 0;
    };
    auto step = [&](uint32_t state, uint8_t byte, uint32_t depth, uint32_t* next) {
      EXPECT_GE(depth, 1u);
      if (!allows(state, byte)) return false;
      *next = state * 31 + byte;
      return true;
    };
    std::multiset<int32_t> walked;
    trie.Walk(uint32_t{1}, step, [&](int32_t id) {
      walked.insert(id);
      return false;
    });
    std::multiset<int32_t> expected;
    for (size_t id = 0; id < vocab.size(); ++id) {
      if (vocab[id].empty()) continue;
      uint32_t state = 1;
      bool ok = true;
      for (char c : vocab[id]) {
        if (!allows(state, static_cast<uint8_t>(c))) {
          ok = false;
          break;
        }
        state = state * 31 + static_cast<uint8_t>(c);
      }
      if (ok) expected.insert(static_cast<int32_t>(id));
    }
    ASSERT_EQ(walked, expected) << "round " << round;
    // Early stop: the first token ends the walk.
    int calls = 0;
    const bool stopped = trie.Walk(uint32_t{1}, step, [&](int32_t) { return ++calls == 1; });
    EXPECT_EQ(stopped, !expected.empty());
    EXPECT_EQ(calls, expected.empty() ? 0 : 1);
  }
}

}  // namespace
}  // namespace xinfer
