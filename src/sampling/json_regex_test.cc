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

// Numbers within whole-number bounds, strict or not: every text of integer part -25..25 and a few
// fractions is admitted exactly when its value lies within them ("-0..." and exponents never).
TEST(JsonRegexTest, NumberRangesAdmitExactlyTheirNumbers) {
  using Bound = std::optional<NumberBound>;
  std::vector<Bound> bounds = {std::nullopt};
  for (int64_t v : {-7, -1, 0, 1, 3})
    for (bool strict : {false, true}) bounds.push_back(NumberBound{v, strict});
  // Integer parts -25..25 with a few fractions, and the negatives above -1 ("-0.5").
  std::vector<std::string> texts = {"-0.5", "-0.05", "-0.999"};
  for (int64_t i = -25; i <= 25; ++i)
    for (const char* f : {"", ".0", ".00", ".5", ".05", ".50", ".999"})
      texts.push_back(std::to_string(i) + f);
  int admitted = 0;
  for (const Bound& lower : bounds)
    for (const Bound& upper : bounds) {
      auto dfa = RegexDfa::Compile(JsonNumberIn(lower, upper), "test");
      for (const std::string& text : texts) {
        const double x = std::stod(text);
        const bool in = (!lower || (lower->strict ? x > lower->value : x >= lower->value)) &&
                        (!upper || (upper->strict ? x < upper->value : x <= upper->value));
        if (!dfa.ok()) {
          ASSERT_FALSE(in) << text;  // refused only when no number lies within
          continue;
        }
        ASSERT_EQ(Admits(**dfa, text), in)
            << text << " lower " << (lower ? lower->value : 99) << (lower && lower->strict)
            << " upper " << (upper ? upper->value : 99) << (upper && upper->strict);
        admitted += in;
      }
      if (!dfa.ok()) {
        EXPECT_NE(dfa.status().message().find("matches no string"), std::string::npos);
        continue;
      }
      for (const char* odd : {"-0", "-0.0", "01", "1.", ".5", "1e2", "2E0", "-", "+1"})
        EXPECT_FALSE(Admits(**dfa, odd)) << odd;
    }
  EXPECT_GT(admitted, 3000);
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
