// Regexes compiled for guided decoding: whole-string matches agree with std::regex (ECMAScript,
// which reads this ASCII subset as Python does) over exhaustive and random strings; UTF-8 is
// matched as characters (every scalar value, no overlong, surrogate or stray byte); what is not
// regular or not supported is refused with the position; automata past the bounds are refused.
#include "sampling/regex_dfa.h"

#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "base/utf8.h"

namespace xinfer {
namespace {

std::shared_ptr<const RegexDfa> CompileRegex(const std::string& pattern) {
  auto dfa = RegexDfa::FromPattern(pattern, "guided_regex");
  EXPECT_TRUE(dfa.ok()) << pattern << ": " << dfa.status().ToString();
  return dfa.ok() ? *dfa : nullptr;
}

bool FullyMatches(const RegexDfa& dfa, std::string_view text) {
  const int32_t s = dfa.Walk(dfa.start(), text);
  return s != RegexDfa::kDead && dfa.accepting(s);
}

// Every prefix of a match walks to a live state, and a dead walk never matches by continuing:
// the pruning invariant the guide relies on.
void ExpectRegexPrefixesLive(const RegexDfa& dfa, std::string_view text) {
  for (size_t i = 0; i <= text.size(); ++i)
    EXPECT_NE(dfa.Walk(dfa.start(), text.substr(0, i)), RegexDfa::kDead) << text << " @" << i;
}

TEST(RegexDfaTest, WholeMatchesAgreeWithStdRegex) {
  const std::vector<std::string> patterns = {"a",
                                             "ab|cd",
                                             "a*",
                                             "a+b?",
                                             "(?:ab)*c",
                                             "[a-c]+",
                                             "[^ab]",
                                             "a{2}",
                                             "a{1,3}",
                                             "a{2,}",
                                             "(a|b){0,3}",
                                             "\\d+",
                                             "\\w*",
                                             "\\s?\\S",
                                             "\\D\\W",
                                             "[\\d_]+",
                                             ".",
                                             "a.b",
                                             "(a|ab)(c|bcd)",
                                             "((a|b)*c)+",
                                             "-?\\d+(\\.\\d+)?",
                                             "[-a]",
                                             "[a-]",
                                             "[]a]",
                                             "a|",
                                             "(|a)b",
                                             "x*?y+?",
                                             "(?P<n>a)b",
                                             "\\.\\*\\+",
                                             "[\\]\\\\]",
                                             "a{0}",
                                             "a{0,0}b"};
  const std::string alphabet = "abcdxy01_.-*+]\\ \n";
  std::mt19937 rng(5);
  for (const std::string& pattern : patterns) {
    auto dfa = CompileRegex(pattern);
    ASSERT_NE(dfa, nullptr);
    // ECMAScript spells (?P<n>...) as (?<n>...), and [a-] / []a] / a{0,0} the same way.
    std::string ecma = pattern;
    if (ecma.find("(?P<") != std::string::npos) ecma.replace(ecma.find("(?P<"), 4, "(?:");
    if (ecma == "[]a]") ecma = "[\\]a]";
    if (ecma.find("n>") != std::string::npos) ecma.replace(ecma.find("n>"), 2, "");
    const std::regex oracle(ecma, std::regex::ECMAScript);
    std::vector<std::string> texts = {""};
    for (size_t n = 0; texts.size() < 6000; ++n) {  // every string up to 3 characters, then random
      const std::string base = texts[n];
      if (base.size() < 3) {
        for (char c : alphabet) texts.push_back(base + c);
      } else {
        std::string t;
        for (size_t k = rng() % 9; k > 0; --k) t += "abcd01."[rng() % 7];
        texts.push_back(t);
      }
    }
    for (const std::string& t : texts) {
      const bool expected = std::regex_match(t, oracle);
      ASSERT_EQ(FullyMatches(*dfa, t), expected) << "/" << pattern << "/ on '" << t << "'";
      if (expected) ExpectRegexPrefixesLive(*dfa, t);
    }
  }
}

TEST(RegexDfaTest, AnchorsAtTheEndsRestateTheWholeMatch) {
  for (const char* p : {"^abc$", "\\Aabc\\Z", "^abc", "abc$"}) {
    auto dfa = CompileRegex(p);
    EXPECT_TRUE(FullyMatches(*dfa, "abc")) << p;
    EXPECT_FALSE(FullyMatches(*dfa, "abcd")) << p;
  }
  auto dollar = CompileRegex("a\\$");
  EXPECT_TRUE(FullyMatches(*dollar, "a$"));
}

TEST(RegexDfaTest, ABraceThatIsNotAQuantifierIsALiteral) {
  EXPECT_TRUE(FullyMatches(*CompileRegex("a{"), "a{"));
  EXPECT_TRUE(FullyMatches(*CompileRegex("{}"), "{}"));
  EXPECT_TRUE(FullyMatches(*CompileRegex("a{x}"), "a{x}"));
  auto upto = CompileRegex("a{,2}");  // Python: 0 to 2
  EXPECT_TRUE(FullyMatches(*upto, ""));
  EXPECT_TRUE(FullyMatches(*upto, "aa"));
  EXPECT_FALSE(FullyMatches(*upto, "aaa"));
}

TEST(RegexDfaTest, CharactersAreMatchedAsUtf8) {
  auto dot = CompileRegex(".");
  // Every scalar value but '\n' is one character of '.'.
  for (char32_t cp = 0; cp <= 0x10FFFF; ++cp) {
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;
    std::string s;
    AppendUtf8(cp, &s);
    ASSERT_EQ(FullyMatches(*dot, s), cp != U'\n') << std::hex << static_cast<uint32_t>(cp);
  }
  // Overlong forms, surrogates, values past U+10FFFF, stray and missing continuation bytes.
  for (const char* bad :
       {"\xC0\x80", "\xC1\xBF", "\xE0\x80\x80", "\xED\xA0\x80", "\xF0\x80\x80\x80",
        "\xF4\x90\x80\x80", "\xF5\x80\x80\x80", "\x80", "\xFF", "\xC3", "\xE2\x82"})
    EXPECT_FALSE(FullyMatches(*dot, bad)) << ::testing::PrintToString(std::string(bad));
  auto greek = CompileRegex("[α-ω]+ é?");
  EXPECT_TRUE(FullyMatches(*greek, "λόγος é") == false);  // ό (U+03CC) is past ω (U+03C9)
  EXPECT_TRUE(FullyMatches(*greek, "λογος é"));
  EXPECT_TRUE(FullyMatches(*greek, "αω "));
  EXPECT_FALSE(FullyMatches(*greek, "a "));
  auto not_a = CompileRegex("[^a]");
  EXPECT_TRUE(FullyMatches(*not_a, "\xF0\x9F\x98\x80"));  // 😀
  EXPECT_FALSE(FullyMatches(*not_a, "a"));
  auto escapes = CompileRegex("\\x41\\u00e9\\U0001F600\\t\\n");
  EXPECT_TRUE(FullyMatches(*escapes, "A\xC3\xA9\xF0\x9F\x98\x80\t\n"));
  // A multi-byte character split across tokens: its first bytes walk to a live state.
  EXPECT_NE(dot->Walk(dot->start(), "\xF0\x9F"), RegexDfa::kDead);
}

TEST(RegexDfaTest, WhatIsNotRegularOrNotSupportedIsRefused) {
  struct Case {
    const char* pattern;
    const char* message;
  };
  for (const Case& c : std::vector<Case>{{"(a", "missing ')' at position 2"},
                                         {"a)", "unbalanced ')'"},
                                         {"*a", "nothing to repeat at position 0"},
                                         {"a**", "multiple repeat"},
                                         {"a{2}{3}", "multiple repeat"},
                                         {"[a", "unterminated character set"},
                                         {"[b-a]", "bad character range"},
                                         {"[a-\\d]", "bad character range"},
                                         {"a\\q", "bad escape \\q"},
                                         {"\\x4", "incomplete hex escape"},
                                         {"\\ud800", "not a Unicode scalar value"},
                                         {"a{3,2}", "maximum is below its minimum"},
                                         {"(a)\\1", "a backreference"},
                                         {"a(?=b)", "lookahead"},
                                         {"(?<=a)b", "lookbehind"},
                                         {"(?P=n)", "named backreference"},
                                         {"\\bword", "word boundary"},
                                         {"(?i)a", "inline flag"},
                                         {"a++", "possessive"},
                                         {"a^b", "'^' other than at the start"},
                                         {"a$b", "'$' other than at the end"},
                                         {"a{1001}", "a repeat count above 1000"},
                                         {"\xFF", "not valid UTF-8"}}) {
    auto dfa = RegexDfa::FromPattern(c.pattern, "guided_regex");
    ASSERT_FALSE(dfa.ok()) << c.pattern;
    EXPECT_EQ(dfa.status().message().rfind("guided_regex", 0), 0u) << dfa.status().message();
    EXPECT_NE(dfa.status().message().find(c.message), std::string::npos)
        << c.pattern << ": " << dfa.status().message();
  }
  std::string deep(300, '(');
  deep += "a" + std::string(300, ')');
  EXPECT_FALSE(RegexDfa::FromPattern(deep, "guided_regex").ok());
}

// Random patterns from the syntax's characters: each compiles or is refused with a message that
// names the field, never a crash (the sanitizer builds run this too).
TEST(RegexDfaTest, RandomPatternsCompileOrAreRefusedCleanly) {
  const std::string pieces[] = {"a", "b", "(", ")", "[", "]",  "^", "-", "|",   "*",   "+",
                                "?", "{", "}", "1", ",", "\\", "d", ".", "(?:", "\\w", "é"};
  std::mt19937 rng(13);
  int compiled = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string pattern;
    for (size_t k = 1 + rng() % 10; k > 0; --k) pattern += pieces[rng() % std::size(pieces)];
    auto dfa = RegexDfa::FromPattern(pattern, "guided_regex");
    if (!dfa.ok()) {
      ASSERT_EQ(dfa.status().message().rfind("guided_regex", 0), 0u) << pattern;
      continue;
    }
    ++compiled;
    EXPECT_GE((*dfa)->size(), 1) << pattern;
  }
  EXPECT_GT(compiled, 2000);
}

TEST(RegexDfaTest, AutomataPastTheBoundsAreRefused) {
  // Thompson's automaton grows with the repeats' product; the DFA of "an 'a' 16 back" doubles
  // with each position.
  for (const char* p :
       {"(a{1000}){1000}", "((ab|cd){30}){200}", "[ab]*a[ab]{16}", "(.{0,300}a){60}"}) {
    const auto start = std::chrono::steady_clock::now();
    auto dfa = RegexDfa::FromPattern(p, "guided_regex");
    ASSERT_FALSE(dfa.ok()) << p;
    EXPECT_NE(dfa.status().message().find("too large"), std::string::npos)
        << dfa.status().message();
    // Refused early, not after seconds of work (a bound on the cost a client can cause; far
    // above the ~0.1 s these take, so that a slow host cannot fail it).
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20)) << p;
  }
  auto none = RegexDfa::FromPattern("[^\\x00-\\U0010FFFF]", "guided_regex");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("matches no string"), std::string::npos);
  // Big but fine: a bounded repeat of any character stays one state per count.
  auto long_text = RegexDfa::FromPattern(".{0,1000}", "guided_regex");
  ASSERT_TRUE(long_text.ok()) << long_text.status().ToString();
  EXPECT_TRUE(FullyMatches(**long_text, std::string(1000, 'x')));
  EXPECT_FALSE(FullyMatches(**long_text, std::string(1001, 'x')));
}

TEST(RegexDfaTest, IntersectionMatchesWhatBothMatch) {
  auto ab = CompileRegex("[ab]*");
  auto two = CompileRegex(".{2}");
  auto both = RegexDfa::Intersect(*ab, *two, "test");
  ASSERT_TRUE(both.ok()) << both.status().ToString();
  for (const char* s : {"ab", "ba", "aa"}) EXPECT_TRUE(FullyMatches(**both, s)) << s;
  for (const char* s : {"", "a", "abc", "ac", "é"}) EXPECT_FALSE(FullyMatches(**both, s)) << s;
  // Walks stay live only while both can still match.
  EXPECT_EQ((*both)->Walk((*both)->start(), "c"), RegexDfa::kDead);
  auto disjoint = RegexDfa::Intersect(*ab, *CompileRegex("c+"), "test");
  ASSERT_FALSE(disjoint.ok());
  EXPECT_NE(disjoint.status().message().find("matches no string"), std::string::npos);
  // Multi-byte characters: the byte classes of both are refined, not merged.
  auto greek = RegexDfa::Intersect(*CompileRegex("[α-ω]+"), *CompileRegex(".{1,2}"), "test");
  ASSERT_TRUE(greek.ok());
  EXPECT_TRUE(FullyMatches(**greek, "αω"));
  EXPECT_FALSE(FullyMatches(**greek, "αωα"));
}

TEST(RegexDfaTest, ChoicesMatchExactlyOneOfThem) {
  auto dfa = RegexDfa::FromChoices({"yes", "no", "yesterday", "é*"}, "guided_choice");
  ASSERT_TRUE(dfa.ok()) << dfa.status().ToString();
  for (const char* s : {"yes", "no", "yesterday", "é*"}) EXPECT_TRUE(FullyMatches(**dfa, s)) << s;
  for (const char* s : {"", "ye", "yesno", "é", "éé*", "No"})
    EXPECT_FALSE(FullyMatches(**dfa, s)) << s;
  // "yes" may end or go on; "no" can only end.
  const int32_t yes = (*dfa)->Walk((*dfa)->start(), "yes");
  EXPECT_TRUE((*dfa)->accepting(yes) && (*dfa)->can_continue(yes));
  const int32_t no = (*dfa)->Walk((*dfa)->start(), "no");
  EXPECT_TRUE((*dfa)->accepting(no) && !(*dfa)->can_continue(no));
  EXPECT_FALSE(RegexDfa::FromChoices({}, "guided_choice").ok());
  EXPECT_FALSE(RegexDfa::FromChoices({"\xFF"}, "guided_choice").ok());
  auto empty_choice = RegexDfa::FromChoices({""}, "guided_choice");
  ASSERT_TRUE(empty_choice.ok());
  EXPECT_TRUE(FullyMatches(**empty_choice, ""));
}

}  // namespace
}  // namespace xinfer
