// Unicode character classes as the Hugging Face tokenizers (Rust) see them; the UTF-8 primitives
// themselves are in base/utf8.h. Stateless and thread-safe.
#pragma once

namespace xinfer::tok {

// Unicode White_Space property (what Rust's char::is_whitespace tests).
bool IsWhitespace(char32_t cp);
// Letters, marks-free alphanumerics and '_' (the "word" notion used by added-token single_word).
bool IsWordChar(char32_t cp);
// Unicode general category N* (Rust's char::is_numeric).
bool IsNumeric(char32_t cp);

}  // namespace xinfer::tok
