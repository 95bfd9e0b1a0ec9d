// Guided json_object decoding on a small synthetic vocabulary: the mask admits exactly the tokens
// that keep the output a prefix of a JSON object, EOS only once it is complete, and sampled
// sequences that end are JSON objects (nlohmann's parser as the oracle).
#include "sampling/guided_json.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "sampling/gbnf.h"
#include "sampling/guided_grammar.h"
#include "sampling/guided_regex.h"
#include "sampling/json_matcher.h"
#include "sampling/sampler.h"

namespace xinfer {
namespace {

constexpr int32_t kGuidedEos = 12;

std::shared_ptr<const TokenVocabulary> Vocabulary() {
  return std::make_shared<const TokenVocabulary>(
      std::vector<std::string>{"{", "}", "\"a\"", ":", "1", " ", "x", "\"", "[", "]", ",",
                               "{\"b\":", "" /* EOS */, "\"k\": 2}", "\n\n"});
}

std::set<int32_t> Allowed(const Guide& g, std::vector<int32_t> ends = {kGuidedEos}) {
  std::vector<float> logits(Vocabulary()->size(), 0.0f);
  g.Mask(logits, ends);
  std::set<int32_t> allowed;
  for (size_t i = 0; i < logits.size(); ++i)
    if (!std::isinf(logits[i])) allowed.insert(static_cast<int32_t>(i));
  return allowed;
}

TEST(GuidedJsonObjectTest, MaskAdmitsWhatContinuesAnObjectAndEndsOnlyWhenComplete) {
  auto g = NewJsonObjectGuide(Vocabulary());
  EXPECT_EQ(Allowed(*g), (std::set<int32_t>{0, 5, 11, 14}));  // '{', whitespace, '{"b":'
  std::vector<int32_t> out = {0};
  ASSERT_TRUE(g->CatchUp(out).ok());
  EXPECT_EQ(Allowed(*g), (std::set<int32_t>{1, 2, 5, 7, 13, 14}));  // '}', a key, whitespace
  out.push_back(1);
  ASSERT_TRUE(g->CatchUp(out).ok());
  EXPECT_TRUE(g->complete());
  EXPECT_EQ(Allowed(*g), (std::set<int32_t>{5, 12, 14}));  // trailing whitespace or the end
  // A token the mask refused is an error, not a corrupted state.
  out.push_back(0);
  EXPECT_EQ(g->CatchUp(out).code(), StatusCode::kInvalidArgument);
}

// vLLM's disable_any_whitespace: no whitespace token anywhere between tokens (the object and the
// schema guides alike), and "k": 2} whose space is between tokens refused too; strings keep theirs.
TEST(GuidedJsonObjectTest, NoWhitespaceWhenDisallowed) {
  auto g = NewJsonObjectGuide(Vocabulary(), /*whitespace=*/false);
  EXPECT_EQ(Allowed(*g), (std::set<int32_t>{0, 11}));  // '{', '{"b":'
  std::vector<int32_t> out = {0};
  ASSERT_TRUE(g->CatchUp(out).ok());
  EXPECT_EQ(Allowed(*g), (std::set<int32_t>{1, 2, 7}));  // '}', a key, a quote
  out.push_back(1);
  ASSERT_TRUE(g->CatchUp(out).ok());
  EXPECT_EQ(Allowed(*g), (std::set<int32_t>{kGuidedEos}));  // the end only
  auto schema = CompileJsonSchema(
      nlohmann::ordered_json::parse(R"({"type":"object","properties":{"k":{"type":"integer"}}})"),
      "schema");
  ASSERT_TRUE(schema.ok());
  auto s = NewJsonSchemaGuide(Vocabulary(), *schema, /*whitespace=*/false);
  EXPECT_EQ(Allowed(*s), (std::set<int32_t>{0}));
  ASSERT_TRUE(s->CatchUp(std::vector<int32_t>{0}).ok());
  EXPECT_EQ(Allowed(*s), (std::set<int32_t>{1, 7}));  // no '"k": 2}' (its space), no whitespace
  EXPECT_TRUE(Allowed(*NewJsonSchemaGuide(Vocabulary(), *schema), {kGuidedEos}).count(5));
}

// Guides cache each state's token set by the state's key: along sampled outputs, the mask of a
// guide that has seen many states equals, at every step, the mask of a new guide fed the same
// output (which computes it afresh). A key that left out part of the state would differ.
TEST(GuidedJsonObjectTest, CachedMasksEqualFreshOnesAlongSampledOutputs) {
  const auto v = std::make_shared<const TokenVocabulary>(std::vector<std::string>{
      "{", "}",    "\"",   "a", ":", "1", " ",   "[",  "]",    ",", "\"a\":", "" /* EOS */, "\\",
      "n", "\xC3", "\xA9", "-", ".", "e", "tru", "e}", "null", "0", "12",     "\"x\"",      "\n"});
  constexpr int32_t kEos = 11;
  auto schema = CompileJsonSchema(nlohmann::ordered_json::parse(R"({"type":"object",
      "properties":{"a":{"type":"array","items":{"anyOf":[{"type":"string","maxLength":3},
      {"type":"integer","minimum":-5,"maximum":120},{"type":"null"}]}},
      "b":{"type":"string","pattern":"^[a\\u00e9]+$"}},"required":["a"]})"),
                                  "schema");
  ASSERT_TRUE(schema.ok()) << schema.status().ToString();
  auto regex = RegexDfa::FromPattern("(a|1|é)+(\\.e)?", "guided_regex");
  ASSERT_TRUE(regex.ok());
  auto grammar = ParseGbnf(R"g(root ::= "[" (item ("," item)*)? "]"
      item ::= "1" | "-" [0-9]+ | "\"" [a\u00e9\\n]* "\"" | root)g",
                           "guided_grammar");
  ASSERT_TRUE(grammar.ok()) << grammar.status().ToString();
  const std::vector<std::function<std::unique_ptr<Guide>()>> kinds = {
      [&] { return NewJsonObjectGuide(v); }, [&] { return NewJsonSchemaGuide(v, *schema); },
      [&] { return NewRegexGuide(v, *regex); }, [&] { return NewGrammarGuide(v, *grammar); }};
  std::mt19937 rng(21);
  for (size_t k = 0; k < kinds.size(); ++k) {
    int steps = 0;
    for (int run = 0; run < 40; ++run) {
      auto cached = kinds[k]();
      std::vector<int32_t> out;
      for (int step = 0; step < 30; ++step) {
        ASSERT_TRUE(cached->CatchUp(out).ok());
        auto fresh = kinds[k]();
        ASSERT_TRUE(fresh->CatchUp(out).ok());
        std::vector<float> a(v->size(), 0.f), b(v->size(), 0.f);
        const std::vector<int32_t> ends = {kEos};
        cached->Mask(a, ends);
        fresh->Mask(b, ends);
        ASSERT_EQ(a, b) << "guide " << k << " step " << step;
        ++steps;
        std::vector<int32_t> allowed;
        for (size_t id = 0; id < a.size(); ++id)
          if (!std::isinf(a[id])) allowed.push_back(static_cast<int32_t>(id));
        // A dead end of this small vocabulary ("n" with no "u" to go on): this run is over.
        if (allowed.empty()) break;
        const int32_t next = allowed[rng() % allowed.size()];
        if (next == kEos) break;
        out.push_back(next);
      }
    }
    EXPECT_GT(steps, 100) << k;
  }
}

TEST(GuidedJsonObjectTest, StopTokenIdsThatAreTextCannotEndAnIncompleteObject) {
  auto g = NewJsonObjectGuide(Vocabulary());
  const std::vector<int32_t> out = {0, 7};  // {"  : inside a key, where 'x' is text
  ASSERT_TRUE(g->CatchUp(out).ok());
  EXPECT_TRUE(Allowed(*g, {kGuidedEos}).count(6));
  EXPECT_FALSE(Allowed(*g, {kGuidedEos, 6}).count(6));
}

TEST(GuidedJsonObjectTest, SampledSequencesStayObjectPrefixesAndEndAsObjects) {
  SamplingParams p;
  p.guided = GuidedDecoding::kJsonObject;
  p.temperature = 1.5f;
  ASSERT_TRUE(p.Validate(15).ok());
  const auto vocabulary = Vocabulary();
  std::mt19937 rng(3);
  std::normal_distribution<float> noise(0.0f, 2.0f);
  int ended = 0;
  for (uint64_t seed = 0; seed < 300; ++seed) {
    Sampler s(p, {kGuidedEos}, seed, vocabulary);
    std::vector<int32_t> out;
    std::string text;
    bool eos = false;
    for (int step = 0; step < 60 && !eos; ++step) {
      std::vector<float> logits(vocabulary->size());
      for (float& l : logits) l = noise(rng);
      auto r = s.Sample(logits, {}, out);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      out.push_back(r->token);
      eos = r->token == kGuidedEos;
      if (!eos) text += vocabulary->bytes(static_cast<size_t>(r->token));
      JsonMatcher m;
      ASSERT_TRUE(m.Advance(text)) << text;
    }
    if (eos) {
      ++ended;
      ASSERT_TRUE(nlohmann::json::accept(text)) << text;
      EXPECT_TRUE(nlohmann::json::parse(text).is_object()) << text;
    }
  }
  EXPECT_GT(ended, 50);
}

// Plain string text (accepted inside a string without a byte-by-byte try): whole characters,
// no quote, backslash or control character. The rest is tried byte by byte, so inside a key a
// partial character, a closing quote (`a"`, `{"`: the key ends) and an escape are allowed, a raw
// newline is not.
TEST(GuidedJsonObjectTest, PlainStringTextIsWholeCharactersWithoutQuotesOrEscapes) {
  auto v = std::make_shared<const TokenVocabulary>(std::vector<std::string>{
      "abc", " x y", "caf\xc3\xa9", "\xc3", "a\"", "\\n", "\n", "", "}", "{\""});
  const std::vector<bool> plain = {true,  true,  true,  false, false,
                                   false, false, false, true,  false};
  for (size_t id = 0; id < v->size(); ++id) EXPECT_EQ(v->plain_string_text(id), plain[id]) << id;
  EXPECT_EQ(v->first_byte(7), 0);
  auto g = NewJsonObjectGuide(v);
  ASSERT_TRUE(g->CatchUp(std::vector<int32_t>{9}).ok());
  std::vector<float> logits(v->size(), 0.0f);
  g->Mask(logits, {});
  std::vector<bool> allowed;
  for (float l : logits) allowed.push_back(!std::isinf(l));
  EXPECT_EQ(allowed,
            (std::vector<bool>{true, true, true, true, true, true, false, false, true, true}));
}

// A vocabulary that cannot write '{' cannot begin an object: whitespace alone does not count.
TEST(GuidedJsonObjectTest, CanBeginNeedsATokenThatStartsTheValue) {
  EXPECT_TRUE(NewJsonObjectGuide(Vocabulary())->CanBegin());
  auto braceless = std::make_shared<const TokenVocabulary>(
      std::vector<std::string>{"a", " ", "\n\n", "}", "", "\"x\""});
  EXPECT_FALSE(NewJsonObjectGuide(braceless)->CanBegin());
  // " {" (sentencepiece's "▁{") begins one.
  auto spaced = std::make_shared<const TokenVocabulary>(std::vector<std::string>{"a", " {"});
  EXPECT_TRUE(NewJsonObjectGuide(spaced)->CanBegin());
  EXPECT_EQ(NewGuide(SamplingParams{}, spaced), nullptr);
}

TEST(GuidedJsonObjectTest, IgnoreEosIsRefused) {
  SamplingParams p;
  p.guided = GuidedDecoding::kJsonObject;
  p.ignore_eos = true;
  EXPECT_NE(p.Validate(15).message().find("ignore_eos cannot be combined"), std::string::npos);
}

}  // namespace
}  // namespace xinfer
