// Guided decoding by a GBNF grammar: the mask admits exactly the tokens whose bytes keep the output
// a live prefix (checked token by token against a matcher, on a small vocabulary and on Qwen3's
// real one), the end only on a whole match, sampled sequences that end are matches, and cached
// masks equal fresh ones.
#include "sampling/guided_grammar.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>

#include "sampling/gbnf.h"
#include "sampling/grammar_matcher.h"
#include "sampling/guided_test_util.h"
#include "sampling/sampler.h"
#include "tokenizer/tokenizer.h"

namespace xinfer {
namespace {

constexpr int32_t kEos = 9;

std::shared_ptr<const TokenVocabulary> SmallVocabulary() {
  return std::make_shared<const TokenVocabulary>(std::vector<std::string>{
      "(", ")", "()", "x", ",", " ", "x,", "((", "\xC3", "" /* EOS */, "\xA9", "\xC3\xA9", ")x"});
}

std::shared_ptr<const Grammar> Gbnf(const std::string& text) {
  auto g = ParseGbnf(text, "guided_grammar");
  EXPECT_TRUE(g.ok()) << g.status().ToString();
  return g.ok() ? *g : nullptr;
}

std::set<int32_t> Allowed(const Guide& g, size_t vocab, const std::vector<int32_t>& ends) {
  std::vector<float> logits(vocab, 0.0f);
  g.Mask(logits, ends);
  std::set<int32_t> allowed;
  for (size_t i = 0; i < logits.size(); ++i)
    if (!std::isinf(logits[i])) allowed.insert(static_cast<int32_t>(i));
  return allowed;
}

// What the mask should be after `text`: each token tried on its own copy of a matcher.
std::set<int32_t> Expected(const Grammar& grammar, const TokenVocabulary& v,
                           const std::string& text, int32_t eos) {
  GrammarMatcher m(&grammar);
  EXPECT_TRUE(m.Advance(text));
  std::set<int32_t> allowed;
  for (size_t id = 0; id < v.size(); ++id) {
    if (v.bytes(id).empty()) continue;
    GrammarMatcher copy = m;
    if (copy.Advance(v.bytes(id))) allowed.insert(static_cast<int32_t>(id));
  }
  if (m.complete()) allowed.insert(eos);
  return allowed;
}

const char* const kListGrammar = R"g(
  root ::= "(" items? ")"
  items ::= item ("," " "? item)*
  item ::= "x" | "é" | root
)g";

TEST(GuidedGrammarTest, MaskAdmitsExactlyTheTokensThatKeepAPrefixAlive) {
  const auto v = SmallVocabulary();
  const auto grammar = Gbnf(kListGrammar);
  ASSERT_NE(grammar, nullptr);
  auto g = NewGrammarGuide(v, grammar);
  EXPECT_EQ(Allowed(*g, v->size(), {kEos}), (std::set<int32_t>{0, 2, 7}));
  // Along one output: "((x, é" then "), ())".
  const std::vector<int32_t> path = {7, 6, 5, 11, 1, 4, 5, 2, 1};
  std::vector<int32_t> out;
  std::string text;
  for (int32_t id : path) {
    ASSERT_EQ(Allowed(*g, v->size(), {kEos}), Expected(*grammar, *v, text, kEos)) << text;
    ASSERT_TRUE(Allowed(*g, v->size(), {kEos}).count(id)) << text << " + " << v->bytes(id);
    out.push_back(id);
    text += v->bytes(static_cast<size_t>(id));
    ASSERT_TRUE(g->CatchUp(out).ok()) << text;
  }
  EXPECT_EQ(text, "((x, é), ())");
  EXPECT_TRUE(g->complete());
  EXPECT_EQ(Allowed(*g, v->size(), {kEos}), (std::set<int32_t>{kEos}));
  // A token the mask refused is an error, not a crash or a silent pass.
  out.push_back(3);
  EXPECT_FALSE(g->CatchUp(out).ok());
}

TEST(GuidedGrammarTest, CanBeginNeedsATokenThatStartsAMatch) {
  const auto v = SmallVocabulary();
  EXPECT_TRUE(NewGrammarGuide(v, Gbnf(kListGrammar))->CanBegin());
  EXPECT_FALSE(NewGrammarGuide(v, Gbnf(R"g(root ::= "[" "x"* "]")g"))->CanBegin());
  EXPECT_TRUE(NewGrammarGuide(v, Gbnf(R"g(root ::= "[" "x"* "]" | "")g"))->CanBegin());
}

TEST(GuidedGrammarTest, SampledSequencesThatEndAreMatches) {
  SamplingParams p;
  p.guided = GuidedDecoding::kGrammar;
  p.grammar = Gbnf(kListGrammar);
  p.temperature = 1.5f;
  const auto v = SmallVocabulary();
  ASSERT_TRUE(p.Validate(static_cast<int32_t>(v->size())).ok());
  const std::vector<std::string> ended =
      testing::SampleEndedTexts(p, v, kEos, /*max_steps=*/16, /*rng_seed=*/7, /*eos_bonus=*/2.0f);
  for (const std::string& text : ended) {
    GrammarMatcher m(p.grammar.get());
    EXPECT_TRUE(m.Advance(text) && m.complete()) << text;
  }
  EXPECT_GT(ended.size(), 50u);
}

TEST(GuidedGrammarTest, CachedMasksEqualFreshOnesAlongSampledOutputs) {
  const auto v = SmallVocabulary();
  const auto grammar = Gbnf(kListGrammar);
  std::mt19937 rng(21);
  int steps = 0;
  for (int run = 0; run < 60; ++run) {
    auto cached = NewGrammarGuide(v, grammar);
    std::vector<int32_t> out;
    for (int step = 0; step < 30; ++step) {
      ASSERT_TRUE(cached->CatchUp(out).ok());
      auto fresh = NewGrammarGuide(v, grammar);
      ASSERT_TRUE(fresh->CatchUp(out).ok());
      const std::set<int32_t> a = Allowed(*cached, v->size(), {kEos});
      ASSERT_EQ(a, Allowed(*fresh, v->size(), {kEos})) << "step " << step;
      ++steps;
      std::vector<int32_t> allowed(a.begin(), a.end());
      if (allowed.empty()) break;
      const int32_t next = allowed[rng() % allowed.size()];
      if (next == kEos) break;
      out.push_back(next);
    }
  }
  EXPECT_GT(steps, 300);
}

// Qwen3's vocabulary (151,669 tokens): the trie walk's mask equals the token-by-token one in the
// states of a small SQL-like grammar, and outputs stay matches.
TEST(GuidedGrammarTest, QwenVocabularyMaskEqualsTokenByTokenCheck) {
  auto tok = Tokenizer::FromDir(XINFER_SHARED_DIR "/models/tiny-qwen3");
  if (!tok.ok()) GTEST_SKIP() << "../shared/models/tiny-qwen3 absent: " << tok.status().ToString();
  std::vector<std::string> bytes;
  for (int32_t id = 0; id < (*tok)->vocab_size(); ++id) bytes.push_back((*tok)->TokenBytes(id));
  const auto v = std::make_shared<const TokenVocabulary>(std::move(bytes));
  const auto grammar = Gbnf(R"g(
    root ::= "SELECT " columns " FROM " name (" WHERE " name " = " value)? ";"
    columns ::= "*" | name (", " name)*
    name ::= [a-z_] [a-z_0-9]{0,15}
    value ::= [0-9]+ | "'" [^'\n]* "'"
  )g");
  ASSERT_NE(grammar, nullptr);
  const int32_t eos = static_cast<int32_t>(v->size());  // outside the vocabulary: never text
  for (const std::string& text :
       {std::string(), std::string("SELECT "), std::string("SELECT id, na"),
        std::string("SELECT * FROM t WHERE x = '"), std::string("SELECT * FROM t WHERE x = 12")}) {
    auto g = NewGrammarGuide(v, grammar);
    // Feed `text` through single-byte tokens.
    std::vector<int32_t> out;
    for (char c : text)
      for (size_t id = 0; id < v->size(); ++id)
        if (v->bytes(id) == std::string(1, c)) {
          out.push_back(static_cast<int32_t>(id));
          break;
        }
    ASSERT_EQ(out.size(), text.size());
    ASSERT_TRUE(g->CatchUp(out).ok()) << text;
    std::set<int32_t> expected = Expected(*grammar, *v, text, eos);
    expected.erase(eos);
    const std::set<int32_t> allowed = Allowed(*g, v->size(), {});
    EXPECT_EQ(allowed, expected) << "after '" << text << "'";
    EXPECT_FALSE(allowed.empty()) << text;
  }
}

}  // namespace
}  // namespace xinfer
