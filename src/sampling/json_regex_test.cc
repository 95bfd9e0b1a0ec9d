// The JSON texts json_regex.h describes, compiled: an integer range admits exactly the canonical
// decimal texts of its integers (checked against the numbers themselves), a string's text is
// quotes around its content spelled raw or by short escapes.
#include "sampling/json_regex.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "sampling/regex_dfa.h"

namespace xinfer {
namespace {

bool Admits(const RegexDfa& dfa, const std::string& text) {
  const int32_t s = dfa.Walk(dfa.start(), text);
  return s != RegexDfa::kDead && dfa.accepting(s);
}

TEST(JsonRegexTest, IntegerRangesAdmitExactlyTheirIntegers) {
  using Bound = std::optional<int64_t>;
  const std::vector<std::pair<Bound, Bound>> ranges = {
      {0, 0},  {0, 9},   {1, 100}, {-5, 5},   {-120, -7}, {37, 1234}, {-999, 999}, {10, 10},
      {0, {}}, {-3, {}}, {{}, 0},  {{}, -10}, {{}, {}},   {99, 1001}, {-1000, 0},  {450, 451}};
  for (const auto& [lo, hi] : ranges) {
    auto dfa = RegexDfa::Compile(JsonIntegerIn(lo, hi), "test");
    ASSERT_TRUE(dfa.ok()) << dfa.status().ToString();
    for (int64_t v = -1500; v <= 1500; ++v) {
      const bool in = (!lo || v >= *lo) && (!hi || v <= *hi);
      ASSERT_EQ(Admits(**dfa, std::to_string(v)), in)
          << v << " in [" << lo.value_or(-1) << ", " << hi.value_or(-1) << "]";
    }
    for (const char* odd : {"", "-", "-0", "00", "01", "-01", "1.0", "1e2", "+1", " 1"})
      EXPECT_FALSE(Admits(**dfa, odd)) << odd;
  }
  // Far bounds and long numbers.
  auto big = RegexDfa::Compile(JsonIntegerIn(-1'000'000'000'000'000'000, 999'999'999'999), "test");
  ASSERT_TRUE(big.ok());
  EXPECT_TRUE(Admits(**big, "-1000000000000000000"));
  EXPECT_FALSE(Admits(**big, "-1000000000000000001"));
  EXPECT_TRUE(Admits(**big, "999999999999"));
  EXPECT_FALSE(Admits(**big, "1000000000000"));
  auto open = RegexDfa::Compile(JsonIntegerIn(12345, std::nullopt), "test");
  ASSERT_TRUE(open.ok());
  EXPECT_TRUE(Admits(**open, "99999999999999999999999"));
  EXPECT_FALSE(Admits(**open, "12344"));
}

TEST(JsonRegexTest, StringTextsSpellCharactersRawOrByShortEscapes) {
  auto any = RegexDfa::Compile(JsonStringOf(RegexRepeat(AnyCharacter(), 0, -1)), "test");
  ASSERT_TRUE(any.ok());
  for (const char* ok : {R"("")", R"("a b")", R"("\"\\\/")", R"("\b\f\n\r\t")",
                         "\"\xE4\xB8\xAD\xF0\x9F\x98\x80\"", R"("/")"})
    EXPECT_EQ(Admits(**any, ok), std::string(ok) != R"("\"\\\/")") << ok;  // \/ is not spelled
  for (const char* bad : {R"(")", R"("\u0041")", "\"a\nb\"", R"("\x")", R"("a"")", "\"\x01\""})
    EXPECT_FALSE(Admits(**any, bad)) << bad;
}

}  // namespace
}  // namespace xinfer
