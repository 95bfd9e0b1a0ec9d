// JSON Schema guided decoding: what CompileJsonSchema takes and refuses, and SchemaMatcher's
// answers on documents that follow a schema, that break it, and on every prefix of them.
#include "sampling/schema_matcher.h"

#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "sampling/guided_json.h"
#include "sampling/sampler.h"

namespace xinfer {
namespace {

using json = nlohmann::ordered_json;

std::shared_ptr<const JsonSchema> Compile(const std::string& text) {
  auto s = CompileJsonSchema(json::parse(text), "schema");
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? *s : nullptr;
}

// -1: every byte accepted and the value complete; -2: accepted but incomplete; else the index of
// the first refused byte.
int Check(const JsonSchema& schema, const std::string& text) {
  SchemaMatcher m(&schema);
  for (size_t i = 0; i < text.size(); ++i)
    if (!m.Advance(static_cast<uint8_t>(text[i]))) return static_cast<int>(i);
  return m.complete() ? -1 : -2;
}

constexpr char kPerson[] = R"({
  "type": "object",
  "properties": {
    "name": {"type": "string", "description": "ignored annotation", "format": "email"},
    "age": {"type": "integer"},
    "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
    "kind": {"enum": ["a", "b", 1, 12, true, null]},
    "nick": {"anyOf": [{"type": "string"}, {"type": "null"}]},
    "score": {"type": ["number", "null"]},
    "child": {"$ref": "#/$defs/node"},
    "extra": {}
  },
  "required": ["name", "age"],
  "$defs": {"node": {"type": "object",
                     "properties": {"v": {"type": "number"},
                                    "next": {"anyOf": [{"$ref": "#/$defs/node"}, {"type": "null"}]}},
                     "required": ["v"]}}
})";

TEST(SchemaMatcherTest, AcceptsWhatFollowsTheSchemaAndEveryPrefix) {
  auto schema = Compile(kPerson);
  ASSERT_NE(schema, nullptr);
  for (const std::string text :
       {R"({"name":"x","age":3})",
        R"( {"name": "Ann \"A\" \u00e9", "age": -12, "tags": ["a", "b"], "kind": 12,)"
        R"( "nick": null, "score": 2.5e-3, "child": {"v": 1.5, "next": {"v": 0, "next": null}},)"
        R"( "extra": {"free": [1, {"x": null}]}} )",
        R"({"name":"x","age":0,"kind":"a"})", R"({"name":"x","age":3,"kind":1,"extra":7})",
        R"({"name":"","age":3,"tags":[],"kind":true,"score":null,"extra":"s"})"}) {
    EXPECT_EQ(Check(*schema, text), -1) << text;
    // Every proper prefix is accepted and incomplete (until the root object closes).
    const size_t close = text.find_last_of('}');
    for (size_t n = 1; n <= close; ++n)
      EXPECT_EQ(Check(*schema, text.substr(0, n)), -2) << text.substr(0, n);
  }
}

TEST(SchemaMatcherTest, NoWhitespaceBetweenTokensWhenDisallowed) {
  auto schema = Compile(kPerson);
  ASSERT_NE(schema, nullptr);
  auto check = [&](const std::string& text) {
    SchemaMatcher m(schema.get());
    m.set_whitespace_allowed(false);
    const SchemaMatcher copy = m;  // copies keep the setting
    m = copy;
    for (size_t i = 0; i < text.size(); ++i)
      if (!m.Advance(static_cast<uint8_t>(text[i]))) return static_cast<int>(i);
    return m.complete() ? -1 : -2;
  };
  EXPECT_EQ(check(R"({"name":"a b","age":3,"extra":{"free":[1,{"x":null}]}})"), -1);
  EXPECT_EQ(check(R"( {"name":"x","age":3})"), 0);
  EXPECT_EQ(check(R"({"name": "x","age":3})"), 8);
  EXPECT_EQ(check(R"({"name":"x","age":3 })"), 19);
  // Inside an any-value leaf too.
  EXPECT_EQ(check(R"({"name":"x","age":3,"extra":{"free": 1}})"), 36);
}

TEST(SchemaMatcherTest, RefusesWhatBreaksTheSchema) {
  auto schema = Compile(kPerson);
  ASSERT_NE(schema, nullptr);
  const std::pair<const char*, int> cases[] = {
      {R"({"name":"x"})", 11},                 // age is required
      {R"({"age":3,"name":"x"})", 2},          // properties come in schema order
      {R"({"name":"x","age":3,"zz":1})", 21},  // no other keys
      {R"({"name":"x","age":3.5})", 19},       // an integer
      {R"({"name":"x","age":1e3})", 19},
      {R"({"name":5})", 8},                                      // a string
      {R"({"name":"x","age":3,"tags":["a","b","c","d"]})", 39},  // maxItems 3
      {R"({"name":"x","age":3,"kind":2})", 27},                  // not in the enum
      {R"({"name":"x","age":3,"kind":123})", 29},
      {R"({"name":"x","age":3,"kind":"c"})", 28},
      {R"({"name":"x","age":3,"nick":5})", 27},
      {R"({"name":"x","age":3,"child":{"next":null}})", 30},  // v is required
      {R"([])", 0},
      {R"({"name":"x","age":3}})", 20},
  };
  for (const auto& [text, at] : cases) EXPECT_EQ(Check(*schema, text), at) << text;
}

TEST(SchemaMatcherTest, ArraysHonourMinAndMaxItems) {
  auto schema = Compile(R"({"type":"array","items":{"type":"boolean"},"minItems":1,"maxItems":2})");
  ASSERT_NE(schema, nullptr);
  EXPECT_EQ(Check(*schema, "[]"), 1);
  EXPECT_EQ(Check(*schema, "[true]"), -1);
  EXPECT_EQ(Check(*schema, "[true, false]"), -1);
  EXPECT_EQ(Check(*schema, "[true,false,true]"), 11);
  EXPECT_EQ(Check(*schema, "[null]"), 1);
}

// Objects told apart by the value of a shared first property (vLLM's schema for tool_choice
// "required": a list of {"name": one tool, "parameters": its arguments}): the arguments follow the
// schema of the tool the name picked.
TEST(SchemaMatcherTest, DiscriminatedUnionOfObjects) {
  auto schema = Compile(R"({"type": "array", "minItems": 1, "items": {"type": "object", "anyOf": [
      {"properties": {"name": {"type": "string", "enum": ["get_weather"]},
                      "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                     "required": ["city"]}},
       "required": ["name", "parameters"]},
      {"properties": {"name": {"enum": ["get_time", "get_date"]},
                      "parameters": {"type": "object", "properties": {"tz": {"enum": ["UTC", "CET"]}},
                                     "required": ["tz"]}},
       "required": ["name", "parameters"]}]}})");
  ASSERT_NE(schema, nullptr);
  EXPECT_EQ(Check(*schema, R"([{"name":"get_weather","parameters":{"city":"x"}}])"), -1);
  EXPECT_EQ(Check(*schema, R"([{"name": "get_time", "parameters": {"tz": "UTC"}},)"
                           R"( {"name": "get_weather", "parameters": {"city": "Rome"}}])"),
            -1);
  EXPECT_EQ(Check(*schema, R"([{"name":"get_date","parameters":{"tz":"CET"}}])"), -1);
  EXPECT_EQ(Check(*schema, R"([{"name":"get_time","parameters":{"city":"x"}}])"), 35);
  EXPECT_EQ(Check(*schema, R"([{"name":"get_weather","parameters":{"tz":"UTC"}}])"), 38);
  EXPECT_EQ(Check(*schema, R"([{"name":"get_other"})"), 14);
  EXPECT_EQ(Check(*schema, R"([{"parameters":{}}])"), 3);
  EXPECT_EQ(Check(*schema, "[]"), 1);
  // Values shared between alternatives cannot tell them apart: refused.
  auto shared = CompileJsonSchema(json::parse(R"({"anyOf": [
      {"type": "object", "properties": {"k": {"const": "a"}}, "required": ["k"]},
      {"type": "object", "properties": {"k": {"enum": ["a", "b"]}}, "required": ["k"]}]})"),
                                  "schema");
  EXPECT_FALSE(shared.ok());
}

// A string's pattern (a search unless anchored, as JSON Schema reads it) and minLength /
// maxLength (characters, an escape being one) hold on the decoded text; characters are spelled raw
// or by their short escapes, and a control character only by its escape.
TEST(SchemaMatcherTest, StringPatternAndLengthAreEnforced) {
  struct Case {
    const char* schema;
    std::vector<std::string> accepted;
    std::vector<std::pair<std::string, int>> refused;  // text, first refused byte (-2: incomplete)
  };
  const Case cases[] = {
      {R"({"type":"string","pattern":"^[a-z]{2,3}-\\d+$"})",
       {R"("ab-1")", R"("xyz-0042")"},
       {{R"("a-1")", 2}, {R"("abcd")", 4}, {R"("ab-")", 4}, {R"("AB-1")", 1}, {R"("ab-1)", -2}}},
      {R"({"type":"string","pattern":"cat"})",  // unanchored: anywhere in the string
       {R"("cat")", R"("a cat!")", R"("concatenate")"},
       {{R"("ca")", 3}, {R"("dog")", 4}}},
      {R"({"type":"string","pattern":"^a\"b\\\\c\n$"})",  // a quote, a backslash, a newline
       {R"("a\"b\\c\n")"},
       {{"\"a\"", 2}, {"\"a\\\"b\\\\c\n", 8}, {R"("a\"b\\c\u000a")", 9}}},
      {R"({"type":"string","pattern":"^é+$"})", {"\"\xC3\xA9\xC3\xA9\""}, {{R"("\u00e9")", 1}}},
      {R"({"type":"string","minLength":2,"maxLength":3})",
       {R"("ab")", R"("abc")", R"("a\nb")", "\"\xC3\xA9\xE4\xB8\xAD\"", R"("\"\\")"},
       {{R"("a")", 2}, {R"("abcd")", 4}, {R"("")", 1}, {"\"a\tb\"", 2}}},
      {R"({"type":"string","maxLength":0})", {R"("")"}, {{R"("a")", 1}}},
      {R"({"type":"string","pattern":"^[a-z\\n]+$","maxLength":3})",  // both: what both allow
       {R"("abc")", R"("a\nb")"},
       {{R"("abcd")", 4}, {R"("")", 1}, {R"("a\nbc")", 5}}},
      {R"({"type":"string","pattern":"x","minLength":3})",
       {R"("axb")", R"("xxx")"},
       {{R"("x")", 2}, {R"("abc")", 4}}},
      {R"({"type":"object","properties":{"id":{"type":"string","pattern":"^[0-9]{4}$"},
           "tag":{"type":["string","null"],"maxLength":2}},"required":["id","tag"]})",
       {R"({"id": "2024", "tag": null})", R"({"id":"0000","tag":"ab"})"},
       {{R"({"id": "20245")", 12}, {R"({"id":"0000","tag":"abc")", 22}}},
  };
  for (const Case& c : cases) {
    auto schema = Compile(c.schema);
    ASSERT_NE(schema, nullptr) << c.schema;
    for (const std::string& text : c.accepted) {
      EXPECT_EQ(Check(*schema, text), -1) << c.schema << " on " << text;
      for (size_t n = 1; n < text.size(); ++n)
        EXPECT_EQ(Check(*schema, text.substr(0, n)), -2) << c.schema << " on " << text.substr(0, n);
    }
    for (const auto& [text, at] : c.refused)
      EXPECT_EQ(Check(*schema, text), at) << c.schema << " on " << text;
  }
}

// An integer's minimum / maximum (and their exclusive forms, draft 4's booleans too) bound the
// digits as they come; the integer ends at the byte after it, which its container takes.
TEST(SchemaMatcherTest, IntegerBoundsAreEnforced) {
  auto age = Compile(R"({"type":"object","properties":{
      "age":{"type":"integer","minimum":0,"maximum":150},
      "delta":{"type":["integer","null"],"exclusiveMinimum":-3,"exclusiveMaximum":2.5},
      "odd":{"type":"integer","minimum":10,"exclusiveMinimum":true}},
      "required":["age","delta","odd"]})");
  ASSERT_NE(age, nullptr);
  for (const std::string text :
       {R"({"age":0,"delta":-2,"odd":11})", R"({"age": 150 , "delta": null, "odd": 99999})",
        R"({"age":37,"delta":2,"odd":12})"}) {
    EXPECT_EQ(Check(*age, text), -1) << text;
    for (size_t n = 1; n < text.size(); ++n)
      EXPECT_EQ(Check(*age, text.substr(0, n)), -2) << text.substr(0, n);
  }
  const std::pair<const char*, int> refused[] = {{R"({"age":151)", 9},
                                                 {R"({"age":-1)", 7},
                                                 {R"({"age":01)", 8},
                                                 {R"({"age":1.5)", 8},
                                                 {R"({"age":3,"delta":-3)", 18},
                                                 {R"({"age":3,"delta":3)", 17},
                                                 {R"({"age":3,"delta":0,"odd":10})", 27},
                                                 {R"({"age":1500)", 10}};
  for (const auto& [text, at] : refused) EXPECT_EQ(Check(*age, text), at) << text;
  // A root integer ends at the whitespace after it.
  auto root = Compile(R"({"type":"integer","maximum":-10})");
  ASSERT_NE(root, nullptr);
  EXPECT_EQ(Check(*root, "-10"), -2);
  EXPECT_EQ(Check(*root, "-10 "), -1);
  EXPECT_EQ(Check(*root, "-9"), -2);  // -90, -91, ... go on
  EXPECT_EQ(Check(*root, "-9 "), 2);
}

// A number's whole-number bounds: written without an exponent, within them; pydantic's
// confloat(ge=0, le=1) and gt=0.
TEST(SchemaMatcherTest, NumberBoundsAreEnforced) {
  auto p = Compile(R"({"type":"object","properties":{
      "p":{"type":"number","minimum":0,"maximum":1},
      "w":{"type":"number","exclusiveMinimum":0}},"required":["p","w"]})");
  ASSERT_NE(p, nullptr);
  for (const std::string text :
       {R"({"p":0,"w":0.001})", R"({"p": 0.25, "w": 12})", R"({"p":1.000,"w":3.5})"})
    EXPECT_EQ(Check(*p, text), -1) << text;
  const std::pair<const char*, int> refused[] = {
      {R"({"p":1.5)", 7}, {R"({"p":-0.5)", 5},      {R"({"p":2)", 5},
      {R"({"p":1e0)", 6}, {R"({"p":0,"w":0})", 12}, {R"({"p":0,"w":-1)", 11}};
  for (const auto& [text, at] : refused) EXPECT_EQ(Check(*p, text), at) << text;
}

TEST(SchemaMatcherTest, CompileRefusesWhatItCannotEnforce) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"type":"null","pattern":"a+"})", "'pattern' is not supported"},
      {R"({"type":"string","pattern":"^a+$","maxLength":0})",
       "pattern and length matches no string"},
      {R"({"type":"integer","pattern":"a+"})", "'pattern' is not supported on a schema other"},
      {R"({"maxLength":3})", "'maxLength' is not supported on a schema other"},
      {R"({"type":"string","pattern":"(a"})", "pattern: missing ')'"},
      {R"({"type":"string","pattern":"\\bx"})", "word boundary"},
      {R"({"type":"string","pattern":7})", "'pattern' must be a string"},
      {R"({"type":"string","minLength":-1})", "'minLength' must be a non-negative integer"},
      {R"({"type":"string","maxLength":"3"})", "'maxLength' must be a non-negative integer"},
      {R"({"type":"string","minLength":3,"maxLength":2})", "'maxLength' is below 'minLength'"},
      {R"({"type":"string","maxLength":5000})", "a 'maxLength' above 1000"},
      {R"({"type":"string","pattern":"^[\u0001-\u0007]$"})", "matches no string"},
      {R"({"type":"number","minimum":0.5})", "'minimum' is not supported"},
      {R"({"type":["integer","number"],"maximum":3.5})", "'maximum' is not supported"},
      {R"({"type":"integer","minimum":"1"})", "'minimum' must be a number"},
      {R"({"type":"integer","minimum":1e19})", "beyond +-10^18"},
      {R"({"type":"integer","minimum":3,"exclusiveMaximum":3})", "no integer lies within"},
      {R"({"anyOf":[{"type":"string"},{"enum":["a"]}]})", "can both start with '\"'"},
      {R"({"$ref":"#/$defs/missing"})", "does not name a schema"},
      {R"({"type":"object","additionalProperties":{"type":"string"}})", "keys are free"},
      {R"({"type":"array","minItems":3,"maxItems":2})", "minItems 3 is larger than maxItems 2"},
      {R"({"type":"array","minItems":-1})", "'minItems' must be a non-negative integer"},
      {R"({"type":"array","maxItems":1.5})", "'maxItems' must be a non-negative integer"},
      {R"({"type":"float"})", "unknown type 'float'"},
      {R"("string")", "must be an object or a boolean"},
      {R"({"allOf":[{"type":"string"},{"type":"null"}]})", "'allOf' with other than one"},
  };
  for (const auto& [text, message] : cases) {
    auto s = CompileJsonSchema(json::parse(text), "response_format json_schema");
    ASSERT_FALSE(s.ok()) << text;
    EXPECT_NE(s.status().message().find(message), std::string::npos) << s.status().message();
    EXPECT_EQ(s.status().message().rfind("response_format json_schema: ", 0), 0u);
  }
}

// Random schemas from the keywords the compiler knows, with values of every JSON type: each
// compiles or is refused with a message naming the field, never a crash; those that compile take
// random bytes without one (the sanitizer builds run this too).
TEST(SchemaMatcherTest, RandomSchemasCompileOrAreRefusedCleanly) {
  std::mt19937 rng(17);
  const char* keys[] = {"type",
                        "properties",
                        "required",
                        "items",
                        "enum",
                        "const",
                        "anyOf",
                        "oneOf",
                        "allOf",
                        "$ref",
                        "$defs",
                        "pattern",
                        "minLength",
                        "maxLength",
                        "minimum",
                        "maximum",
                        "exclusiveMinimum",
                        "minItems",
                        "maxItems",
                        "nullable",
                        "additionalProperties"};
  const char* types[] = {"object", "array", "string", "integer", "number", "boolean", "null", "x"};
  std::function<json(int)> value = [&](int depth) -> json {
    switch (rng() % (depth > 2 ? 6 : 9)) {
      case 0:
        return json(types[rng() % std::size(types)]);
      case 1:
        return json(static_cast<int>(rng() % 7) - 2);
      case 2:
        return json(0.5 * static_cast<double>(rng() % 9) - 1.0);
      case 3:
        return json(rng() % 2 == 0);
      case 4:
        return json(nullptr);
      case 5:
        return json(std::string("^[a-c]{1,3}$").substr(0, rng() % 13));
      case 6: {
        json a = json::array();
        for (size_t n = rng() % 3; n > 0; --n) a.push_back(value(depth + 1));
        return a;
      }
      default: {
        json o = json::object();
        for (size_t n = rng() % 4; n > 0; --n) o[keys[rng() % std::size(keys)]] = value(depth + 1);
        return o;
      }
    }
  };
  int compiled = 0;
  for (int i = 0; i < 20000; ++i) {
    json schema = json::object();
    for (size_t n = 1 + rng() % 3; n > 0; --n) schema[keys[rng() % std::size(keys)]] = value(1);
    auto s = CompileJsonSchema(schema, "guided_json");
    if (!s.ok()) {
      ASSERT_EQ(s.status().message().rfind("guided_json", 0), 0u) << schema.dump();
      continue;
    }
    ++compiled;
    SchemaMatcher m(s->get());
    for (int b = 0; b < 40; ++b) {
      SchemaMatcher trial = m;
      const uint8_t byte =
          static_cast<uint8_t>("{}[]\",:0123456789-.eatrulfsn \xC3\xA9"[rng() % 30]);
      if (trial.Advance(byte)) m = trial;
    }
  }
  EXPECT_GT(compiled, 1000);
}

// Sampling over a vocabulary of single characters: every sequence that ends is a document that
// follows the schema.
TEST(SchemaMatcherTest, SampledSequencesThatEndFollowTheSchema) {
  auto schema = Compile(R"({"type":"object","properties":{
      "a":{"type":"integer"},"b":{"enum":["x","yy"]},
      "c":{"type":"array","items":{"type":"boolean"},"maxItems":2}},"required":["a","b"]})");
  ASSERT_NE(schema, nullptr);
  std::vector<std::string> bytes;
  for (char c : std::string("{}[]\",:0123456789-.eEtrufalsnxyabc ")) bytes.emplace_back(1, c);
  bytes.emplace_back("");  // EOS
  const int32_t eos = static_cast<int32_t>(bytes.size() - 1);
  auto vocabulary = std::make_shared<const TokenVocabulary>(bytes);
  SamplingParams p;
  p.guided = GuidedDecoding::kJsonSchema;
  p.json_schema = schema;
  ASSERT_TRUE(p.Validate(eos + 1).ok());
  std::mt19937 rng(11);
  std::normal_distribution<float> noise(0.0f, 1.0f);
  int ended = 0;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    Sampler s(p, {eos}, seed, vocabulary);
    std::vector<int32_t> out;
    std::string text;
    for (int step = 0; step < 120; ++step) {
      std::vector<float> logits(bytes.size());
      for (float& l : logits) l = noise(rng);
      auto r = s.Sample(logits, {}, out);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      out.push_back(r->token);
      if (r->token == eos) {
        ++ended;
        const json doc = json::parse(text);
        // An integer: no fraction or exponent (it may pass 64 bits, so parsed as a double).
        EXPECT_TRUE(doc["a"].is_number()) << text;
        const size_t a = text.find(':') + 1;
        const std::string number = text.substr(a, text.find(',', a) - a);
        EXPECT_EQ(number.find_first_of(".eE"), std::string::npos) << text;
        EXPECT_TRUE(doc["b"] == "x" || doc["b"] == "yy") << text;
        if (doc.contains("c")) {
          EXPECT_LE(doc["c"].size(), 2u) << text;
        }
        break;
      }
      text += bytes[static_cast<size_t>(r->token)];
      ASSERT_NE(Check(*schema, text), static_cast<int>(text.size()) - 1) << text;
    }
  }
  EXPECT_GT(ended, 20);
}

}  // namespace
}  // namespace xinfer
