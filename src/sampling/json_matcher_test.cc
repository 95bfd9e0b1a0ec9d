// JsonMatcher against nlohmann's parser as the oracle: every prefix of a valid object is accepted,
// `complete` holds exactly at its end, and single-byte edits are judged as the parser judges them.
#include "sampling/json_matcher.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

namespace xinfer {
namespace {

// Feeds `text`; -1 when every byte was accepted, else the index of the first refused byte.
int FirstRefused(const std::string& text, JsonMatcher* m) {
  for (size_t i = 0; i < text.size(); ++i)
    if (!m->Advance(static_cast<uint8_t>(text[i]))) return static_cast<int>(i);
  return -1;
}

bool AcceptsWhole(const std::string& text) {
  JsonMatcher m;
  return FirstRefused(text, &m) < 0 && m.complete();
}

// What the matcher should say of a whole text: a JSON object, within its limits.
bool OracleObject(const std::string& text) {
  if (!nlohmann::json::accept(text)) return false;
  return nlohmann::json::parse(text).is_object();
}

const std::vector<std::string> kValid = {
    "{}",
    " {\"a\":1}",
    "{\"a\": [1, -2, 3.5, 4e10, 5E-3, 0.25e+2, 0, -0], \"b\": {\"c\": null}}",
    "{\"k\":true,\"l\":false,\"m\":\"x\\\"y\\\\z\\/\\b\\f\\n\\r\\t\\u00e9\\uABCD\"}",
    "{\n  \"nested\": [[], {}, [{}], [[[1]]]],\n  \"s\": \"caf\xc3\xa9 \xe2\x82\xac "
    "\xf0\x9f\x98\x80\"\n}",
    "{\"\":\"\"}  \n",
};

TEST(JsonMatcherTest, ValidObjectsAndEveryPrefix) {
  for (const std::string& text : kValid) {
    ASSERT_TRUE(OracleObject(text)) << text;
    JsonMatcher m;
    for (size_t i = 0; i < text.size(); ++i) {
      ASSERT_TRUE(m.Advance(static_cast<uint8_t>(text[i]))) << text << " at " << i;
      // Complete once the root closes (only whitespace may follow), not before.
      const bool root_closed = text.find_last_of('}') <= i;
      EXPECT_EQ(m.complete(), root_closed) << text << " at " << i;
    }
  }
}

TEST(JsonMatcherTest, RefusesWhatIsNotAJsonObject) {
  for (const char* text : {"[]",
                           "1",
                           "\"s\"",
                           "null",
                           "{,}",
                           "{\"a\"}",
                           "{\"a\":}",
                           "{\"a\":1,}",
                           "{\"a\" 1}",
                           "{'a':1}",
                           "{a:1}",
                           "{\"a\":01}",
                           "{\"a\":1.}",
                           "{\"a\":.5}",
                           "{\"a\":-}",
                           "{\"a\":1e}",
                           "{\"a\":+1}",
                           "{\"a\":tru}",
                           "{\"a\":nul1}",
                           "{\"a\":[1,]}",
                           "{\"a\":[1}",
                           "{\"a\":{]}",
                           "{\"a\":\"\\x\"}",
                           "{\"a\":\"\\u12G4\"}",
                           "{\"a\":\"\x01\"}",
                           "{\"a\":\"\xc0\xaf\"}",
                           "{\"a\":\"\xed\xa0\x80\"}",
                           "{\"a\":\"\xf4\x90\x80\x80\"}",
                           "{\"a\":\"\xff\"}",
                           "{}{}",
                           "{} x",
                           "{\"a\":NaN}",
                           "{\"a\":Infinity}"}) {
    EXPECT_FALSE(OracleObject(text)) << text;
    EXPECT_FALSE(AcceptsWhole(text)) << text;
  }
}

TEST(JsonMatcherTest, SingleByteEditsAgreeWithTheParser) {
  std::mt19937 rng(7);
  const std::string alphabet = "{}[]\":,.-+eE0123456789 \n\\/abfnrtu\"x\xc3\xa9\x80";
  int checked = 0;
  for (const std::string& base : kValid) {
    for (int trial = 0; trial < 3000; ++trial) {
      std::string text = base;
      const size_t at = rng() % text.size();
      switch (rng() % 3) {
        case 0:
          text[at] = alphabet[rng() % alphabet.size()];
          break;
        case 1:
          text.insert(text.begin() + static_cast<std::ptrdiff_t>(at),
                      alphabet[rng() % alphabet.size()]);
          break;
        default:
          text.erase(at, 1);
      }
      EXPECT_EQ(AcceptsWhole(text), OracleObject(text)) << text;
      // A text the parser rejects is refused at some byte, or left incomplete.
      ++checked;
    }
  }
  EXPECT_EQ(checked, 3000 * static_cast<int>(kValid.size()));
}

TEST(JsonMatcherTest, NoWhitespaceBetweenTokensWhenDisallowed) {
  JsonMatcher m;
  m.set_whitespace_allowed(false);
  EXPECT_FALSE(m.whitespace_allowed());
  const JsonMatcher fresh = m;  // copies keep the setting
  JsonMatcher a = fresh;
  EXPECT_EQ(FirstRefused(R"({"a b":["c d",1,{"e":null}],"f":-1.5e3})", &a), -1);
  EXPECT_TRUE(a.complete());
  EXPECT_FALSE(a.Advance(' '));  // not even after the object
  for (const std::string text : {R"( {})", R"({ })", R"({"a" :1})", R"({"a": 1})", R"({"a":1 })",
                                 "{\"a\":[1,\n2]}", "{\"a\":\t1}"}) {
    JsonMatcher b = fresh;
    EXPECT_GE(FirstRefused(text, &b), 0) << text;
  }
}

TEST(JsonMatcherTest, BoundsDepthAndWhitespaceRuns) {
  std::string deep(JsonMatcher::kMaxDepth, '[');
  deep[0] = '{';
  deep.insert(1, "\"a\":");
  JsonMatcher m;
  EXPECT_EQ(FirstRefused(deep, &m), -1);
  EXPECT_FALSE(m.Advance('['));  // one level past the limit
  JsonMatcher w;
  std::string run = "{";
  run.append(JsonMatcher::kMaxWhitespaceRun, ' ');
  EXPECT_EQ(FirstRefused(run, &w), -1);
  EXPECT_FALSE(w.Advance('\n'));
  JsonMatcher s;  // inside strings, spaces are content, not a run
  EXPECT_EQ(FirstRefused("{\"" + std::string(200, ' ') + "\":1}", &s), -1);
  EXPECT_TRUE(s.complete());
}

}  // namespace
}  // namespace xinfer
