// UTF-8 helpers shared by the tokenizer pipeline. Everything here is stateless and thread-safe
// except Utf8Sanitizer, which is a per-stream value.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace xinfer::tok {

inline constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";  // U+FFFD

bool IsValidUtf8(std::string_view s);

// Decodes the code point at s[*pos] and advances *pos. `s` must be valid UTF-8 (callers validate
// at the API edge); on a malformed byte it returns U+FFFD and advances one byte so that it can
// never loop forever.
char32_t NextCodepoint(std::string_view s, size_t* pos);

void AppendUtf8(char32_t cp, std::string* out);

// Unicode White_Space property (what Rust's char::is_whitespace tests).
bool IsWhitespace(char32_t cp);
// Letters, marks-free alphanumerics and '_' (the "word" notion used by added-token single_word).
bool IsWordChar(char32_t cp);
// Unicode general category N* (Rust's char::is_numeric).
bool IsNumeric(char32_t cp);
bool IsAllAscii(std::string_view s);

// Streaming conversion of arbitrary bytes to valid UTF-8. Ill-formed sequences become U+FFFD
// using the "maximal subpart" rule, which is what Rust's String::from_utf8_lossy and Python's
// bytes.decode(errors="replace") do, so feeding bytes in any chunking gives the same text as
// converting them all at once.
class Utf8Sanitizer {
 public:
  void Feed(std::string_view bytes, std::string* out);
  // Emits U+FFFD for an incomplete trailing sequence and resets.
  void Finish(std::string* out);
  bool has_pending() const { return npending_ > 0; }

 private:
  void FeedByte(uint8_t b, std::string* out);
  char pending_[4] = {};
  int npending_ = 0;
  int need_ = 0;  // continuation bytes still expected
  uint8_t lo_ = 0x80, hi_ = 0xBF;
};

}  // namespace xinfer::tok
