// Regular expressions as vLLM's guided_regex takes them (Python `re` syntax), parsed into a tree of
// code point sets for regex_dfa.h to compile. The whole output must match (fullmatch), so `^` /
// `\A` at the very start and `$` / `\Z` at the very end are accepted and mean nothing more.
//
// Supported: literals (UTF-8), `.` (any character but '\n'), classes `[...]` / `[^...]` with
// ranges, `\d \w \s` and their negations (ASCII, as xgrammar and outlines read them), escapes
// (`\n \t \r \f \v \a \0 \xHH \uHHHH \UHHHHHHHH`, escaped punctuation), groups `(...)`, `(?:...)`,
// `(?P<name>...)`, `(?<name>...)`, alternation, quantifiers `* + ? {n} {n,} {,m} {n,m}` (lazy
// `?` forms match the same strings). Refused with a clear error (they are not regular, or would
// change what matches): backreferences, lookaround, `\b \B`, anchors elsewhere, inline flags,
// possessive quantifiers. A `{` that does not start a quantifier is a literal, as in Python.
//
// Plain values; no shared state.
#pragma once

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace xinfer {

struct RegexNode {
  enum class Kind : uint8_t {
    kEmpty,      // matches ""
    kChars,      // one character from `ranges`
    kConcat,     // `children` in order
    kAlternate,  // one of `children`
    kRepeat,     // children[0], min_repeat to max_repeat times (-1: no limit)
  };
  Kind kind = Kind::kEmpty;
  std::vector<std::pair<char32_t, char32_t>> ranges;  // kChars: sorted, disjoint, inclusive
  std::vector<RegexNode> children;
  int32_t min_repeat = 0;
  int32_t max_repeat = -1;
};

// Largest count a quantifier may give (Python allows more; this keeps automata small).
inline constexpr int32_t kMaxRegexRepeat = 1000;

// Whether the pattern began with `^` / `\A` and ended with `$` / `\Z` (a JSON Schema `pattern`
// is a search: it matches anywhere unless anchored).
struct RegexAnchors {
  bool start = false;
  bool end = false;
};

// The tree of `pattern`. InvalidArgument naming the position and what is wrong (Unimplemented for
// a construct that is not supported); the message starts with `what` (e.g. "guided_regex").
StatusOr<RegexNode> ParseRegex(std::string_view pattern, std::string_view what,
                               RegexAnchors* anchors = nullptr);

// Trees built directly (for expressions made by code rather than parsed): any one character (every
// Unicode scalar value), the characters lo..hi, an ASCII string, parts in order, one of
// `alternatives`, `node` repeated min..max times (max -1: no limit).
RegexNode AnyCharacter();
RegexNode CharRange(char32_t lo, char32_t hi);
RegexNode AsciiLiteral(std::string_view ascii);
RegexNode RegexConcat(std::vector<RegexNode> parts);
RegexNode RegexAlternate(std::vector<RegexNode> alternatives);
RegexNode RegexRepeat(RegexNode node, int32_t min, int32_t max);

// A literal string as a tree (each UTF-8 character one kChars node); InvalidArgument when `text` is
// not valid UTF-8.
StatusOr<RegexNode> LiteralRegex(std::string_view text, std::string_view what);

}  // namespace xinfer
