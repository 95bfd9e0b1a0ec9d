// UTF-8 primitives shared by the tokenizer, the chat-template engine and the stop-string logic,
// so that all of them agree on what is well-formed. "Well-formed" is Unicode's definition (The
// Unicode Standard, Table 3-7): no overlong forms, no UTF-16 surrogates, nothing above U+10FFFF.
// Everything here is stateless and thread-safe except Utf8Sanitizer, which is a per-stream value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace xinfer {

inline constexpr char32_t kReplacementCodepoint = 0xFFFD;
inline constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";  // U+FFFD

// True for the bytes 10xxxxxx, which never start a character: walking back over them finds the
// start of the character that contains a byte offset.
inline bool IsUtf8Continuation(char c) { return (static_cast<uint8_t>(c) & 0xC0) == 0x80; }

// One character decoded by DecodeUtf8Char.
struct Utf8Char {
  char32_t cp = 0;  // the code point; U+FFFD when !valid
  // Bytes consumed. Well-formed: 1..4. Ill-formed: the "maximal subpart" (1..3 bytes) that one
  // U+FFFD replaces, as in Python's bytes.decode(errors="replace") and Rust's from_utf8_lossy.
  size_t size = 0;
  bool valid = false;
};

// Decodes the character starting at s[pos]; pos must be < s.size().
Utf8Char DecodeUtf8Char(std::string_view s, size_t pos);

// Decodes the character at s[*pos] and advances *pos past it. Ill-formed input yields U+FFFD and
// advances one byte, so that a caller can never loop forever nor skip a byte that might start
// the next character. Callers that must tell bad bytes apart use DecodeUtf8Char.
char32_t NextCodepoint(std::string_view s, size_t* pos);

// Appends the UTF-8 encoding of cp. A surrogate or a value above U+10FFFF has no encoding and
// appends U+FFFD instead.
void AppendUtf8(char32_t cp, std::string* out);

bool IsValidUtf8(std::string_view s);

// Number of trailing bytes of `s` (0..3) that are the start of a multi-byte character whose
// remaining bytes have not arrived yet, judged from the lead byte's length alone. Text ending
// there must be held back, not emitted split. Garbage that no later byte can fix (a stray
// continuation byte, an invalid lead byte) is not counted, so it is never held forever.
size_t IncompleteUtf8SuffixLength(std::string_view s);

bool IsAllAscii(std::string_view s);

// The Unicode White_Space property (Rust's char::is_whitespace). Python's str.isspace adds the
// separators U+001C..U+001F.
bool IsUnicodeWhitespace(char32_t cp);

// Streaming conversion of arbitrary bytes to valid UTF-8. Ill-formed sequences become U+FFFD
// using the maximal-subpart rule (see Utf8Char::size), so feeding bytes in any chunking gives
// the same text as converting them all at once.
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

}  // namespace xinfer
