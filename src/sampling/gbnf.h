// Grammars in GBNF, the notation of llama.cpp's `grammar` and of vLLM's guided_grammar (xgrammar
// reads the same), compiled to a byte-level Grammar (grammar.h).
//
//   root   ::= answer ("," ws answer)*      # rules: name ::= alternatives; `root` starts
//   answer ::= "yes" | "no" | [0-9]+ "%"?   # literals, classes, rule names, groups
//   ws     ::= [ \t\n]{0,4}                 # x* x+ x? x{m} x{m,} x{m,n} x{,n}
//
// Literals "..." and classes [...] / [^...] take the escapes \n \r \t \\ \" \[ \] \xHH \uHHHH
// \UHHHHHHHH (classes also take Python-regex escapes such as \d); `.` is any character; names are
// letters, digits, '-' and '_'; `#` starts a comment. Rules end where the next `name ::=` begins,
// so a rule may span lines (llama.cpp wants alternatives continued inside parentheses or after
// `|`; both layouts are read). Refused with the line and column: unknown escapes, unterminated
// literals or groups, token references (<...>), quantifiers above 1000, a missing `root`, rules
// used but not defined or defined twice, left recursion, grammars that match no text.
//
// Plain function; no shared state.
#pragma once

#include <memory>
#include <string_view>

#include "base/status.h"
#include "sampling/grammar.h"

namespace xinfer {

// Largest count a GBNF quantifier may give, and the longest grammar text taken.
inline constexpr int32_t kMaxGbnfRepeat = 1000;
inline constexpr size_t kMaxGbnfBytes = size_t{1} << 20;

// InvalidArgument (message starting with `what`, e.g. "guided_grammar") when `text` is not a
// grammar this engine takes.
StatusOr<std::shared_ptr<const Grammar>> ParseGbnf(std::string_view text, std::string_view what);

}  // namespace xinfer
