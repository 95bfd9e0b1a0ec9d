// GBNF grammars compiled and matched byte by byte: regular grammars agree with std::regex on every
// short string, nested ones with hand-written checkers, every live prefix can still finish, UTF-8
// classes match exactly their characters, malformed or unsupported grammars are refused with the
// place and the reason, and random grammars compile or are refused cleanly.
#include "sampling/gbnf.h"

#include <gtest/gtest.h>

#include <random>
#include <regex>

#include "base/utf8.h"
#include "sampling/grammar_matcher.h"

namespace xinfer {
namespace {

std::shared_ptr<const Grammar> Compile(const std::string& text) {
  auto g = ParseGbnf(text, "guided_grammar");
  EXPECT_TRUE(g.ok()) << text << "\n" << g.status().ToString();
  return g.ok() ? *g : nullptr;
}

bool Matches(const Grammar& g, std::string_view text) {
  GrammarMatcher m(&g);
  return m.Advance(text) && m.complete();
}

// Every string over `alphabet` up to `max_len` characters.
std::vector<std::string> AllStrings(const std::string& alphabet, size_t max_len) {
  std::vector<std::string> out = {""};
  for (size_t begin = 0; begin < out.size(); ++begin)
    if (out[begin].size() < max_len)
      for (char c : alphabet) out.push_back(out[begin] + c);
  return out;
}

TEST(GbnfTest, RegularGrammarsMatchWhatTheirRegexMatches) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"g(root ::= "a" | "b" "c"*)g", "a|bc*"},
      {R"g(root ::= ("ab" | "c")+ "a"?)g", "(ab|c)+a?"},
      {"root ::= [a-b]{2,3} c?\nc ::= \"c\"", "[ab]{2,3}c?"},
      {"root ::= x{0,2} \"c\"\nx ::= \"a\" | \"b\" \"b\"", "(a|bb){0,2}c"},
      {R"g(root ::= [^a]* "a")g", "[^a]*a"},
      {R"g(root ::= . "a")g", "[\\s\\S]a"},
      {R"g(root ::= "a"{,2} "b"{2,} "c"{2})g", "a{0,2}b{2,}c{2}"},
      {"root ::= ab\n  | \"c\" # alternatives continued on the next line\nab ::= \"a\" \"b\"",
       "ab|c"},
      {R"g(root ::= ("a" | "") "b")g", "a?b"},
      {R"g(root ::= "a"* "a" "b"*)g", "a+b*"},
      {R"g(root ::= ( "a" ( "b" | "c" )? )+ )g", "(a[bc]?)+"},
      {R"g(root ::= "" | "abc")g", "(abc)?"},
  };
  const std::vector<std::string> strings = AllStrings("abc", 6);
  for (const auto& [gbnf, regex] : cases) {
    const auto g = Compile(gbnf);
    ASSERT_NE(g, nullptr);
    const std::regex re(regex);
    for (const std::string& s : strings)
      ASSERT_EQ(Matches(*g, s), std::regex_match(s, re)) << gbnf << " on '" << s << "'";
  }
}

// Balanced parentheses: not regular; the stacks must count.
bool Balanced(const std::string& s) {
  int depth = 0;
  for (char c : s) {
    depth += c == '(' ? 1 : -1;
    if (depth < 0) return false;
  }
  return depth == 0;
}

TEST(GbnfTest, NestedGrammarsMatchWhatTheirCheckersAccept) {
  const auto parens = Compile(R"g(root ::= "(" root ")" root | "")g");
  for (const std::string& s : AllStrings("()", 10))
    ASSERT_EQ(Matches(*parens, s), Balanced(s)) << s;

  // Sums and products of digits with parentheses; a checker by recursive descent.
  const auto expr = Compile(R"g(
    root   ::= expr
    expr   ::= term ("+" term)*
    term   ::= factor ("*" factor)*
    factor ::= [0-9] | "(" expr ")"
  )g");
  std::function<bool(const std::string&, size_t&)> e, t, f;
  f = [&](const std::string& s, size_t& i) {
    if (i < s.size() && s[i] >= '0' && s[i] <= '9') return ++i, true;
    if (i < s.size() && s[i] == '(') {
      ++i;
      if (!e(s, i) || i >= s.size() || s[i] != ')') return false;
      return ++i, true;
    }
    return false;
  };
  t = [&](const std::string& s, size_t& i) {
    if (!f(s, i)) return false;
    while (i < s.size() && s[i] == '*') {
      ++i;
      if (!f(s, i)) return false;
    }
    return true;
  };
  e = [&](const std::string& s, size_t& i) {
    if (!t(s, i)) return false;
    while (i < s.size() && s[i] == '+') {
      ++i;
      if (!t(s, i)) return false;
    }
    return true;
  };
  for (const std::string& s : AllStrings("1+*()", 7)) {
    size_t i = 0;
    const bool expected = e(s, i) && i == s.size();
    ASSERT_EQ(Matches(*expr, s), expected) << s;
  }
}

TEST(GbnfTest, EveryLivePrefixCanStillFinish) {
  const std::vector<std::string> grammars = {
      R"g(root ::= "(" root ")" root | "")g",
      "root ::= item (\",\" item)*\nitem ::= \"x\" | \"[\" root \"]\"",
      R"g(root ::= ("ab" | "a" "c"*)+ "d")g",
      "root ::= a b\na ::= \"x\" | dead \"y\" | \"\"\nb ::= \"z\"+\ndead ::= \"q\" dead",
  };
  std::mt19937 rng(3);
  for (const std::string& text : grammars) {
    const auto g = Compile(text);
    ASSERT_NE(g, nullptr);
    for (int walk = 0; walk < 300; ++walk) {
      GrammarMatcher m(g.get());
      const std::string alphabet = "()[],xyzqabcd";
      // Random live bytes, then the shortest way home must exist: a breadth-first search over
      // continuations finds a complete one.
      for (int n = static_cast<int>(rng() % 12); n > 0; --n) {
        std::string ok;
        for (char c : alphabet) {
          GrammarMatcher probe = m;
          if (probe.Advance(std::string(1, c))) ok.push_back(c);
        }
        if (ok.empty()) break;
        ASSERT_TRUE(m.Advance(std::string(1, ok[rng() % ok.size()])));
      }
      std::vector<GrammarMatcher> frontier = {m};
      bool finished = false;
      for (int depth = 0; depth < 30 && !finished && !frontier.empty(); ++depth) {
        std::vector<GrammarMatcher> next;
        for (const GrammarMatcher& f : frontier) {
          if (f.complete()) finished = true;
          for (char c : alphabet) {
            GrammarMatcher probe = f;
            if (probe.Advance(std::string(1, c)) && next.size() < 2000) next.push_back(probe);
          }
        }
        frontier = std::move(next);
      }
      ASSERT_TRUE(finished) << text;
    }
  }
}

TEST(GbnfTest, Utf8ClassesMatchExactlyTheirCharacters) {
  const auto g = Compile(R"g(root ::= [é-ë] | [^\x00-\u00FF] | "日本" | [\t])g");
  const auto any = Compile("root ::= .");
  std::mt19937 rng(5);
  for (int i = 0; i < 20000; ++i) {
    char32_t cp = rng() % 4 == 0 ? rng() % 0x300 : rng() % 0x110000;
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;
    std::string s;
    AppendUtf8(cp, &s);
    const bool expected = (cp >= U'é' && cp <= U'ë') || cp > 0xFF || cp == '\t';
    ASSERT_EQ(Matches(*g, s), expected) << static_cast<uint32_t>(cp);
    ASSERT_TRUE(Matches(*any, s)) << static_cast<uint32_t>(cp);
  }
  EXPECT_TRUE(Matches(*g, "日本"));
  EXPECT_FALSE(Matches(*g, "本日"));
  GrammarMatcher partial(g.get());
  EXPECT_TRUE(partial.Advance("\xE6\x97"));  // the start of 日: live, not complete
  EXPECT_FALSE(partial.complete());
  // Surrogates, overlong forms and stray continuation bytes are never characters.
  for (const char* bad : {"\xED\xA0\x80", "\xC0\xAF", "\x80", "\xF4\x90\x80\x80", "\xFF"})
    EXPECT_FALSE(Matches(*any, bad)) << bad;
}

TEST(GbnfTest, LiteralsTakeEscapes) {
  const auto g = Compile(R"g(root ::= "a\"b\\c\n\t\x41\u00e9\U0001F600" [\]\[\-])g");
  EXPECT_TRUE(Matches(*g, "a\"b\\c\n\tAé😀]"));
  EXPECT_TRUE(Matches(*g, "a\"b\\c\n\tAé😀-"));
  EXPECT_FALSE(Matches(*g, "a\"b\\c\n\tAé😀x"));
}

TEST(GbnfTest, MalformedOrUnsupportedGrammarsAreRefusedWithTheReason) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "empty"},
      {"   # only a comment\n", "empty"},
      {R"g(start ::= "a")g", "no 'root' rule"},
      {R"g(root ::= thing)g", "rule 'thing' is used but not defined"},
      {"root ::= \"a\"\nroot ::= \"b\"", "line 2, column 1: rule 'root' is defined twice"},
      {R"g(root ::= root "a" | "a")g", "can reach itself without consuming text"},
      {"root ::= x \"b\"\nx ::= y | \"a\"\ny ::= x \"c\"", "can reach itself"},
      {R"g(root ::= ("a"?)*)g", "can reach itself"},
      {R"g(root ::= "a" root)g", "matches no text"},
      {R"g(root ::= "abc)g", "line 1, column 10: unterminated literal"},
      {"root ::= \"ab\ncd\"", "unterminated literal"},
      {R"g(root ::= [a-z)g", "unterminated character class"},
      {R"g(root ::= [])g", "empty character class"},
      {R"g(root ::= [z-a])g", "character class"},
      {R"g(root ::= "\q")g", "unknown escape '\\q'"},
      {R"g(root ::= "\x4")g", "hex digits"},
      {R"g(root ::= "\uD800")g", "not a Unicode scalar value"},
      {R"g(root ::= <[1000]>)g", "token references"},
      {R"g(root ::= 'a')g", "double quotes"},
      {R"g(root ::= "a"{1001})g", "above 1000"},
      {R"g(root ::= "a"{3,2})g", "maximum is below its minimum"},
      {R"g(root ::= "a"{)g", "expected a count"},
      {R"g(root ::= "a"{2)g", "expected '}'"},
      {R"g(root ::= "a"*+)g", "not another quantifier"},
      {R"g(root "a")g", "expected '::='"},
      {R"g(root ::= ("a")g", "expected ')'"},
      {R"g(root ::= "a")g", ""},  // (accepted: checks the table's harness)
      {R"g(root ::= "a" ))g", "unmatched ')'"},
      {R"g(root ::= "a" & "b")g", "unexpected character '&'"},
      {R"g(::= "a")g", "expected a rule name"},
      {"root ::= \"\xC3\"", "not valid UTF-8"},
      {"root ::= \"" + std::string(300, 'a') + "\"{1000}", "too large"},
      {"root ::= " + std::string(300, '(') + "\"a\"" + std::string(300, ')'), "nested too deep"},
  };
  for (const auto& [text, expected] : cases) {
    auto g = ParseGbnf(text, "guided_grammar");
    if (expected.empty()) {
      EXPECT_TRUE(g.ok()) << text;
      continue;
    }
    ASSERT_FALSE(g.ok()) << text;
    EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument) << text;
    EXPECT_NE(g.status().message().find("guided_grammar"), std::string::npos)
        << g.status().message();
    EXPECT_NE(g.status().message().find(expected), std::string::npos)
        << text << " -> " << g.status().message();
  }
}

TEST(GbnfTest, BoundsRefuseBytesRatherThanGrowWithoutLimit) {
  // Depth: each '(' leaves a ')' to match.
  const auto nested = Compile(R"g(root ::= "(" root ")" | "x")g");
  GrammarMatcher m(nested.get());
  size_t opened = 0;
  while (opened < GrammarMatcher::kMaxDepth + 10 && m.Advance("(")) ++opened;
  EXPECT_LT(opened, GrammarMatcher::kMaxDepth + 10);
  EXPECT_GT(opened, GrammarMatcher::kMaxDepth - 10);
  EXPECT_TRUE(m.Advance("x"));  // the state is intact after a refused byte
  EXPECT_FALSE(m.complete());
  EXPECT_TRUE(m.Advance(std::string(opened, ')')));
  EXPECT_TRUE(m.complete());

  // Ambiguity: many stacks at once (n ways to have read "a"), refused past the bound.
  auto wide = [](int n) {
    std::string text = "root ::= ";
    for (int i = 0; i < n; ++i) text += (i ? " | \"a\" \"" : "\"a\" \"") + std::to_string(i) + "\"";
    return Compile(text);
  };
  const auto too_wide = wide(GrammarMatcher::kMaxStacks + 1);
  GrammarMatcher w(too_wide.get());
  EXPECT_FALSE(w.Advance("a"));
  const auto wide_enough = wide(GrammarMatcher::kMaxStacks);
  GrammarMatcher ok(wide_enough.get());
  EXPECT_TRUE(ok.Advance("a"));
  EXPECT_TRUE(ok.Advance("1023"));
  EXPECT_TRUE(ok.complete());
}

// A chain of 50 000 rules, defined in the order that made a fixed-point loop quadratic: compiled
// in linear time, and matched (the expansion walks the whole chain within its step bound).
TEST(GbnfTest, LongRuleChainsCompileAndMatch) {
  std::string text = "root ::= r0\n";
  for (int i = 0; i < 50000; ++i) {
    text += 'r';
    text += std::to_string(i);
    text += " ::= r";
    text += std::to_string(i + 1);
    text += '\n';
  }
  text += "r50000 ::= \"x\"\n";
  const auto g = Compile(text);
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(Matches(*g, "x"));
  EXPECT_FALSE(Matches(*g, "y"));
  EXPECT_FALSE(ParseGbnf(std::string(kMaxGbnfBytes + 1, ' '), "guided_grammar").ok());
}

// A grammar whose every byte costs thousands of expansion steps (60 ways to read one letter, each
// leaving 60 again): a token walk stops at its budget with a subset of the allowed
// tokens — every one of them valid — instead of running for minutes over a large vocabulary.
TEST(GbnfTest, TokenWalksStopAtTheirBudget) {
  std::string text = "root ::= item{0,1000}\nitem ::= ";
  for (int i = 0; i < 60; ++i) text += (i ? " | c" : "c") + std::to_string(i);
  for (int i = 0; i < 60; ++i) text += "\nc" + std::to_string(i) + " ::= [a-z]";
  const auto g = Compile(text);
  ASSERT_NE(g, nullptr);
  std::vector<std::string> vocab;
  for (const std::string& s : AllStrings("abcdefghijklmnopqrstuvwxyz", 3))
    if (!s.empty()) vocab.push_back(s);
  const TokenTrie trie(vocab);
  GrammarMatcher m(g.get(), /*walk_budget=*/size_t{1} << 20);
  size_t found = 0;
  m.WalkTokens(trie, [&](int32_t id) {
    GrammarMatcher check = m;
    EXPECT_TRUE(check.Advance(vocab[static_cast<size_t>(id)])) << vocab[static_cast<size_t>(id)];
    ++found;
    return false;
  });
  EXPECT_GT(found, 0u);
  EXPECT_LT(found, vocab.size() / 2);  // every token is valid; the budget cut the walk short
  EXPECT_TRUE(m.last_walk_cut());
  // A cheap grammar's walk finds every token and is not cut.
  const auto cheap = Compile("root ::= [a-z]+");
  GrammarMatcher c(cheap.get(), /*walk_budget=*/size_t{1} << 20);
  size_t all = 0;
  c.WalkTokens(trie, [&](int32_t) {
    ++all;
    return false;
  });
  EXPECT_EQ(all, vocab.size());
  EXPECT_FALSE(c.last_walk_cut());
  // The matcher itself is untouched: every letter still advances it.
  EXPECT_TRUE(m.Advance("abc"));
  EXPECT_TRUE(m.complete());
}

TEST(GbnfTest, RandomGrammarsCompileOrAreRefusedCleanly) {
  std::mt19937 rng(11);
  const std::vector<std::string> pieces = {
      "\"a\"", "\"bc\"", "[a-c]", "[^a]",  ".",           "x",   "y",     "root", "(",
      ")",     "|",      "*",     "+",     "?",           "{2}", "{1,3}", "{,2}", "{2,}",
      " ",     "\n",     "\"\"",  "[\\n]", "\"\\u00e9\"", "::=", "#c\n"};
  int compiled = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string text = "root ::= ";
    for (int n = 1 + static_cast<int>(rng() % 12); n > 0; --n)
      text += pieces[rng() % pieces.size()] + " ";
    if (rng() % 2) text += "\nx ::= " + pieces[rng() % 8] + " " + pieces[rng() % 8];
    if (rng() % 2) text += "\ny ::= " + pieces[rng() % 8] + " | " + pieces[rng() % 8];
    auto g = ParseGbnf(text, "guided_grammar");
    if (!g.ok()) {
      ASSERT_FALSE(g.status().message().empty());
      continue;
    }
    ++compiled;
    GrammarMatcher m(g->get());
    std::string state;
    for (int k = 0; k < 16; ++k) {
      const char c = "abcx\n\xC3\xA9"[rng() % 7];
      m.Advance(std::string(1, c));
      m.complete();
      state.clear();
      m.AppendStateKey(&state);
    }
  }
  EXPECT_GT(compiled, 1000);
}

}  // namespace
}  // namespace xinfer
