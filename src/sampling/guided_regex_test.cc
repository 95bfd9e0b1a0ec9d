// Guided decoding by regex and by choice on small synthetic vocabularies: the mask admits exactly
// the tokens whose bytes keep the output a prefix of a match, the end only on a whole match, and
// sampled sequences that end are matches (std::regex as the oracle) or one of the choices.
#include "sampling/guided_regex.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <regex>
#include <set>

#include "sampling/guided_test_util.h"
#include "sampling/sampler.h"

namespace xinfer {
namespace {

constexpr int32_t kRegexEos = 9;

std::shared_ptr<const TokenVocabulary> NumberVocabulary() {
  return std::make_shared<const TokenVocabulary>(std::vector<std::string>{
      "1", "2", "12", "-", "a", ".", "5.", " ", "-1", "" /* EOS */, "\xC3", "\xA9", "\xC3\xA9"});
}

std::set<int32_t> AllowedTokens(const Guide& g, size_t vocab, std::vector<int32_t> ends) {
  std::vector<float> logits(vocab, 0.0f);
  g.Mask(logits, ends);
  std::set<int32_t> allowed;
  for (size_t i = 0; i < logits.size(); ++i)
    if (!std::isinf(logits[i])) allowed.insert(static_cast<int32_t>(i));
  return allowed;
}

std::shared_ptr<const RegexDfa> Dfa(const std::string& pattern) {
  auto dfa = RegexDfa::FromPattern(pattern, "guided_regex");
  EXPECT_TRUE(dfa.ok()) << dfa.status().ToString();
  return *dfa;
}

TEST(GuidedRegexTest, MaskAdmitsWhatContinuesAMatchAndEndsOnlyOnAWholeOne) {
  const auto v = NumberVocabulary();
  auto g = NewRegexGuide(v, Dfa("-?\\d+(\\.\\d+)?"));
  EXPECT_FALSE(g->complete());
  EXPECT_EQ(AllowedTokens(*g, v->size(), {kRegexEos}), (std::set<int32_t>{0, 1, 2, 3, 6, 8}));
  std::vector<int32_t> out = {8};  // "-1"
  ASSERT_TRUE(g->CatchUp(out).ok());
  EXPECT_TRUE(g->complete());
  EXPECT_EQ(AllowedTokens(*g, v->size(), {kRegexEos}),
            (std::set<int32_t>{0, 1, 2, 5, 6, kRegexEos}));
  out.push_back(5);  // "-1."
  ASSERT_TRUE(g->CatchUp(out).ok());
  EXPECT_FALSE(g->complete());
  EXPECT_EQ(AllowedTokens(*g, v->size(), {kRegexEos}), (std::set<int32_t>{0, 1, 2}));
  // A token the mask refused is an error, not a crash or a silent pass.
  out.push_back(4);
  EXPECT_FALSE(g->CatchUp(out).ok());
  // Past the vocabulary: masked.
  std::vector<float> longer(v->size() + 3, 0.0f);
  NewRegexGuide(v, Dfa("1"))->Mask(longer, {});
  for (size_t id = v->size(); id < longer.size(); ++id) EXPECT_TRUE(std::isinf(longer[id]));
}

TEST(GuidedRegexTest, ACharacterMaySpanTokensAndEndTokensThatAreTextWaitForTheMatch) {
  const auto v = NumberVocabulary();
  auto g = NewRegexGuide(v, Dfa("é+"));
  // "é" whole or its first byte; not its second byte alone; the end not yet, even for a stop
  // token id that is text ("1").
  EXPECT_EQ(AllowedTokens(*g, v->size(), {kRegexEos, 0}), (std::set<int32_t>{10, 12}));
  ASSERT_TRUE(g->CatchUp(std::vector<int32_t>{10}).ok());
  EXPECT_EQ(AllowedTokens(*g, v->size(), {kRegexEos, 0}), (std::set<int32_t>{11}));
  ASSERT_TRUE(g->CatchUp(std::vector<int32_t>{10, 11}).ok());
  EXPECT_EQ(AllowedTokens(*g, v->size(), {kRegexEos, 0}),
            (std::set<int32_t>{0, 10, 12, kRegexEos}));
}

TEST(GuidedRegexTest, CanBeginNeedsATokenThatStartsAMatch) {
  const auto v = NumberVocabulary();
  EXPECT_TRUE(NewRegexGuide(v, Dfa("\\d+"))->CanBegin());
  EXPECT_FALSE(NewRegexGuide(v, Dfa("[xyz]+"))->CanBegin());
  EXPECT_TRUE(NewRegexGuide(v, Dfa("[xyz]*"))->CanBegin());  // "" is a match: the end can come
}

TEST(GuidedRegexTest, SampledSequencesThatEndAreMatches) {
  const std::string pattern = "-?\\d{1,3}(\\.\\d)?";
  SamplingParams p;
  p.guided = GuidedDecoding::kRegex;
  p.regex = Dfa(pattern);
  p.temperature = 1.5f;
  const auto v = NumberVocabulary();
  ASSERT_TRUE(p.Validate(static_cast<int32_t>(v->size())).ok());
  const std::regex oracle(pattern);
  const std::vector<std::string> ended =
      testing::SampleEndedTexts(p, v, kRegexEos, /*max_steps=*/12, /*rng_seed=*/7);
  for (const std::string& text : ended) EXPECT_TRUE(std::regex_match(text, oracle)) << text;
  EXPECT_GT(ended.size(), 100u);
}

TEST(GuidedRegexTest, ChoicesEndOnExactlyOneOfThem) {
  const auto v = std::make_shared<const TokenVocabulary>(std::vector<std::string>{
      "y", "es", "yes", "n", "o", "no", "ye", "s", "" /* EOS */, "terday", "nope"});
  SamplingParams p;
  p.guided = GuidedDecoding::kRegex;
  auto dfa = RegexDfa::FromChoices({"yes", "no", "yesterday"}, "guided_choice");
  ASSERT_TRUE(dfa.ok());
  p.regex = *dfa;
  p.temperature = 2.0f;
  std::mt19937 rng(11);
  std::normal_distribution<float> noise(0.0f, 2.0f);
  std::set<std::string> seen;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    Sampler s(p, {8}, seed, v);
    std::vector<int32_t> out;
    std::string text;
    for (int step = 0; step < 10; ++step) {
      std::vector<float> logits(v->size());
      for (float& l : logits) l = noise(rng);
      auto r = s.Sample(logits, {}, out);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      out.push_back(r->token);
      if (r->token == 8) break;
      text += v->bytes(static_cast<size_t>(r->token));
    }
    ASSERT_EQ(out.back(), 8) << text;  // every choice ends within 10 tokens
    seen.insert(text);
  }
  EXPECT_EQ(seen, (std::set<std::string>{"yes", "no", "yesterday"}));
}

// min_tokens holds the end back, but a complete match that cannot go on leaves nothing else: the
// match ends there (shorter than min_tokens) instead of the step failing with no token left.
TEST(GuidedRegexTest, ACompleteMatchEndsEvenBeforeMinTokens) {
  const auto v = std::make_shared<const TokenVocabulary>(
      std::vector<std::string>{"n", "o", "no", "" /* EOS */, "x"});
  SamplingParams p;
  p.guided = GuidedDecoding::kRegex;
  p.regex = *RegexDfa::FromChoices({"no", "nox"}, "guided_choice");
  p.temperature = 0.0f;
  p.min_tokens = 6;
  Sampler s(p, {3}, 1, v);
  std::vector<int32_t> out = {2};  // "no": "x" may still follow, so min_tokens keeps the end off
  std::vector<float> logits = {0.f, 0.f, 0.f, 5.f, -1.f};
  auto r = s.Sample(logits, {}, out);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->token, 4);
  out.push_back(4);  // "nox": complete, nothing can follow
  logits = {0.f, 0.f, 0.f, 5.f, -1.f};
  r = s.Sample(logits, {}, out);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->token, 3);
}

}  // namespace
}  // namespace xinfer
