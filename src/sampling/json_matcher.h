// JsonMatcher: a byte-at-a-time recognizer of one JSON object (RFC 8259, UTF-8), the grammar
// behind `response_format: {"type": "json_object"}`. It answers, for a prefix of the output, which
// next bytes keep it a prefix of a valid JSON object, and whether the object is complete.
//
// The state is a few dozen bytes and trivially copyable, so a guided sampler can try every token
// of a vocabulary on a copy (GuidedJsonObject). Not thread-safe; copies are independent.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace xinfer {

class JsonMatcher {
 public:
  // Bounds that keep every output finite and the state fixed-size: containers nested deeper than
  // kMaxDepth, and more than kMaxWhitespaceRun whitespace bytes in a row, are refused (a model
  // that only emits newlines would otherwise never finish).
  static constexpr int kMaxDepth = 64;
  static constexpr int kMaxWhitespaceRun = 32;

  // Feeds one byte; false when it cannot continue a valid JSON object (the matcher is then in an
  // unspecified state: feed bytes to a copy when trying).
  bool Advance(uint8_t byte);
  // Feeds `bytes` in order; false as soon as one is refused.
  bool Advance(std::string_view bytes);
  // The root object is closed: the output may end here (only whitespace may follow).
  bool complete() const { return mode_ == Mode::kDone; }
  // Inside a string, between characters (not in an escape or a multi-byte character).
  bool in_string() const { return mode_ == Mode::kString; }
  // false: no whitespace between tokens at all (vLLM's disable_any_whitespace: compact JSON).
  // Set before the first byte; kept by copies.
  void set_whitespace_allowed(bool allowed) { max_ws_run_ = allowed ? kMaxWhitespaceRun : 0; }
  bool whitespace_allowed() const { return max_ws_run_ != 0; }

  // A matcher of one JSON value of any type rather than of an object, as a schema's leaf needs:
  // primed as if inside `{"":`. value_complete() says when that value has ended — a number only
  // once the byte after it is seen, so its owner asks number_can_end() at a delimiter instead.
  static JsonMatcher ForValue();
  // Appends bytes that tell this state apart: two matchers with the same key accept the same
  // continuations (a guide caches its token sets by it).
  void AppendStateKey(std::string* key) const;
  bool value_complete() const { return depth_ == 1 && mode_ == Mode::kCommaOrClose; }
  // ForValue(): the value itself is a number (not one inside an array or object of it)...
  bool in_top_number() const { return depth_ == 1 && mode_ == Mode::kNumber; }
  // ...that would be complete if the next byte ended it.
  bool number_can_end() const {
    return mode_ == Mode::kNumber && (number_ == Number::kZero || number_ == Number::kInt ||
                                      number_ == Number::kFrac || number_ == Number::kExpDigits);
  }

 private:
  enum class Mode : uint8_t {
    kRoot,          // before the root object: whitespace or '{'
    kValue,         // a value is expected
    kKeyOrClose,    // right after '{': a key or '}'
    kKey,           // after ',' in an object: a key
    kColon,         // after a key
    kCommaOrClose,  // after a value inside a container
    kValueOrClose,  // right after '[': a value or ']'
    kString,        // inside a string (key_ says which kind)
    kEscape,        // after a backslash
    kUnicode,       // inside \uXXXX (hex_left_ digits to go)
    kUtf8,          // inside a multi-byte UTF-8 character
    kNumber,        // inside a number (number_ says where)
    kLiteral,       // inside true / false / null
    kDone,          // the root object is closed
  };
  enum class Number : uint8_t { kMinus, kZero, kInt, kDot, kFrac, kExp, kExpSign, kExpDigits };

  bool AdvanceNumber(uint8_t byte);
  bool StartValue(uint8_t byte);
  bool Open(bool object);
  bool Close(bool object);
  void EndValue();    // a value just ended: back to the enclosing container (or done)
  bool Whitespace();  // one more whitespace byte between tokens: within the run limit?
  bool in_object() const { return depth_ > 0 && ((containers_ >> (depth_ - 1)) & 1) != 0; }

  Mode mode_ = Mode::kRoot;
  Number number_ = Number::kMinus;
  bool key_ = false;        // the string being read is an object key
  uint8_t hex_left_ = 0;    // kUnicode
  uint8_t utf8_left_ = 0;   // kUtf8: continuation bytes still expected
  uint8_t utf8_lo_ = 0x80;  // kUtf8: range of the next continuation byte
  uint8_t utf8_hi_ = 0xBF;
  uint8_t ws_run_ = 0;  // whitespace bytes in a row
  uint8_t max_ws_run_ = kMaxWhitespaceRun;
  int8_t depth_ = 0;               // open containers
  const char* literal_ = nullptr;  // kLiteral: the rest of "true" / "false" / "null"
  uint64_t containers_ = 0;        // bit i: container i is an object (1) or an array (0)
};

}  // namespace xinfer
