// Cost of guided decoding per sequence per step: Guide::Mask (json_object, json_schema, regex /
// choice, GBNF grammar) over the Qwen3 vocabulary (151,669 tokens, from
// ../shared/models/tiny-qwen3) in the states that bound it — before the object, inside a string
// (nearly every token continues it: the worst case), after a value; a regex state's first visit and
// its cached visits — next to the unguided Sampler::Sample it adds to.
//   build/bin/sampling_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only
#include <benchmark/benchmark.h>

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "sampling/gbnf.h"
#include "sampling/guided_grammar.h"
#include "sampling/guided_json.h"
#include "sampling/guided_regex.h"
#include "sampling/sampler.h"
#include "tokenizer/tokenizer.h"

namespace xinfer {
namespace {

constexpr int kLogits = 151936;  // Qwen3's lm_head rows

std::shared_ptr<const TokenVocabulary> QwenVocabulary() {
  static std::shared_ptr<const TokenVocabulary> vocabulary = [] {
    auto tok = Tokenizer::FromDir(XINFER_SHARED_DIR "/models/tiny-qwen3");
    std::vector<std::string> bytes;
    if (!tok.ok()) {
      std::fprintf(stderr, "sampling_bench: %s\n", tok.status().ToString().c_str());
    } else {
      for (int32_t id = 0; id < (*tok)->vocab_size(); ++id) bytes.push_back((*tok)->TokenBytes(id));
    }
    return std::make_shared<const TokenVocabulary>(std::move(bytes));
  }();
  return vocabulary;
}

std::vector<float> RandomLogits() {
  std::vector<float> logits(kLogits);
  std::mt19937 rng(1);
  std::normal_distribution<float> d(0.0f, 3.0f);
  for (float& l : logits) l = d(rng);
  return logits;
}

// Feeds `prefix` to a guide from `new_guide` through single-byte tokens of the vocabulary, then
// times Mask: with `first_visit`, on a new guide each time (the state's token set computed: every
// token tried), else on one guide (the set cached after the first call).
template <class NewGuideFn>
void TimeMask(benchmark::State& state, NewGuideFn new_guide, const std::string& prefix,
              bool first_visit) {
  const auto vocabulary = QwenVocabulary();
  std::vector<int32_t> out;
  for (char c : prefix)
    for (size_t id = 0; id < vocabulary->size(); ++id)
      if (vocabulary->bytes(id) == std::string(1, c)) {
        out.push_back(static_cast<int32_t>(id));
        break;
      }
  std::unique_ptr<Guide> guide = new_guide();
  if (!guide->CatchUp(out).ok()) return state.SkipWithError("prefix not accepted");
  const std::vector<float> logits = RandomLogits();
  const std::vector<int32_t> ends = {151643, 151645};
  std::vector<float> scratch;
  for (auto _ : state) {
    if (first_visit) {
      state.PauseTiming();
      guide = new_guide();
      (void)guide->CatchUp(out);
      state.ResumeTiming();
    }
    scratch = logits;
    guide->Mask(scratch, ends);
    benchmark::DoNotOptimize(scratch.data());
  }
  state.SetLabel(first_visit ? "first visit" : "cached");
}

// response_format json_object; state.range(0) picks the output so far.
void BM_GuidedJsonMask(benchmark::State& state) {
  if (QwenVocabulary()->size() == 0)
    return state.SkipWithError("../shared/models/tiny-qwen3 absent");
  static const char* kPrefixes[] = {"", "{\"name\": \"Ali", "{\"a\": [1, 2], \"b\": true"};
  TimeMask(
      state, [] { return NewJsonObjectGuide(QwenVocabulary()); }, kPrefixes[state.range(0)],
      state.range(1) == 1);
}
// range(0): before the object, inside a string, after a value; range(1): first visit or cached.
BENCHMARK(BM_GuidedJsonMask)->ArgsProduct({{0, 1, 2}, {0, 1}})->Unit(benchmark::kMicrosecond);

// response_format json_schema (an object of a string, an integer and an enum).
void BM_GuidedSchemaMask(benchmark::State& state) {
  if (QwenVocabulary()->size() == 0)
    return state.SkipWithError("../shared/models/tiny-qwen3 absent");
  auto schema = CompileJsonSchema(nlohmann::ordered_json::parse(R"({"type": "object",
      "properties": {"name": {"type": "string"}, "age": {"type": "integer"},
                     "city": {"enum": ["Beijing", "Shanghai", "Shenzhen"]}},
      "required": ["name", "age", "city"]})"),
                                  "bench");
  if (!schema.ok()) return state.SkipWithError("schema");
  static const char* kPrefixes[] = {"", "{\"name\": \"Ali", "{\"name\": \"A\", \"age\": 3",
                                    "{\"name\": \"A\", \"age\": 3, \"city\": \"Sh"};
  const std::shared_ptr<const JsonSchema> compiled = *schema;
  TimeMask(
      state, [&] { return NewJsonSchemaGuide(QwenVocabulary(), compiled); },
      kPrefixes[state.range(0)], state.range(1) == 1);
}
// range(0): before the object, inside a string, inside an integer, inside an enum; range(1): first
// visit or cached.
BENCHMARK(BM_GuidedSchemaMask)->ArgsProduct({{0, 1, 2, 3}, {0, 1}})->Unit(benchmark::kMicrosecond);

// guided_regex / guided_choice. state.range(0): the expression; range(1): first visit or cached.
void BM_GuidedRegexMask(benchmark::State& state) {
  if (QwenVocabulary()->size() == 0)
    return state.SkipWithError("../shared/models/tiny-qwen3 absent");
  static const char* kPatterns[] = {".{0,200}", "[0-9]{3}-[a-z]+", "(Positive|Negative|Neutral)"};
  auto dfa = RegexDfa::FromPattern(kPatterns[state.range(0)], "bench");
  if (!dfa.ok()) return state.SkipWithError("regex");
  const std::shared_ptr<const RegexDfa> compiled = *dfa;
  TimeMask(
      state, [&] { return NewRegexGuide(QwenVocabulary(), compiled); }, "", state.range(1) == 1);
}
BENCHMARK(BM_GuidedRegexMask)->ArgsProduct({{0, 1, 2}, {0, 1}})->Unit(benchmark::kMicrosecond);

// guided_grammar (GBNF): a JSON grammar (nested rules, strings with escapes) and a SQL-like one.
// state.range(0): the grammar and the output so far; range(1): first visit or cached.
void BM_GuidedGrammarMask(benchmark::State& state) {
  if (QwenVocabulary()->size() == 0)
    return state.SkipWithError("../shared/models/tiny-qwen3 absent");
  static const char* kJson = R"g(
    root   ::= object
    value  ::= object | array | string | number | "true" | "false" | "null"
    object ::= "{" ws (member ("," ws member)*)? "}" ws
    member ::= string ":" ws value
    array  ::= "[" ws (value ("," ws value)*)? "]" ws
    string ::= "\"" ([^"\\\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4}))* "\"" ws
    number ::= "-"? ("0" | [1-9] [0-9]*) ("." [0-9]+)? ([eE] [-+]? [0-9]+)? ws
    ws     ::= [ \t\n]{0,8}
  )g";
  static const char* kSql = R"g(
    root ::= "SELECT " cols " FROM " name (" WHERE " name " = " value)? ";"
    cols ::= "*" | name (", " name)*
    name ::= [a-z_] [a-z_0-9]{0,15}
    value ::= [0-9]+ | "'" [^'\n]* "'"
  )g";
  static const std::pair<const char*, const char*> kCases[] = {
      {kJson, ""},
      {kJson, "{\"name\": \"Ali"},
      {kJson, "{\"a\": [1, {\"b\": [true, \"x"},
      {kSql, ""},
      {kSql, "SELECT * FROM t WHERE x = 'ab"}};
  const auto& [text, prefix] = kCases[state.range(0)];
  auto grammar = ParseGbnf(text, "bench");
  if (!grammar.ok()) return state.SkipWithError(grammar.status().ToString().c_str());
  const std::shared_ptr<const Grammar> compiled = *grammar;
  TimeMask(
      state, [&] { return NewGrammarGuide(QwenVocabulary(), compiled); }, prefix,
      state.range(1) == 1);
}
BENCHMARK(BM_GuidedGrammarMask)
    ->ArgsProduct({{0, 1, 2, 3, 4}, {0, 1}})
    ->Unit(benchmark::kMicrosecond);

// The vocabulary's trie (built once per engine, on its first guided request).
void BM_TokenTrieBuild(benchmark::State& state) {
  if (QwenVocabulary()->size() == 0)
    return state.SkipWithError("../shared/models/tiny-qwen3 absent");
  std::vector<std::string> bytes;
  for (size_t id = 0; id < QwenVocabulary()->size(); ++id)
    bytes.push_back(QwenVocabulary()->bytes(id));
  for (auto _ : state) {
    TokenTrie trie(bytes);
    benchmark::DoNotOptimize(trie.size());
    state.counters["nodes"] = trie.size();
  }
}
BENCHMARK(BM_TokenTrieBuild)->Unit(benchmark::kMillisecond);

// The unguided step the mask adds to: temperature 1, top-p 0.9.
void BM_Sample(benchmark::State& state) {
  SamplingParams p;
  p.top_p = 0.9f;
  p.seed = 1;
  Sampler sampler(p, {151645}, 0);
  const std::vector<float> logits = RandomLogits();
  std::vector<float> scratch;
  const std::vector<int32_t> out = {1};
  for (auto _ : state) {
    scratch = logits;
    auto r = sampler.Sample(scratch, {}, out);
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_Sample)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace xinfer

BENCHMARK_MAIN();
