#include "sampling/json_matcher.h"

namespace xinfer {
namespace {

bool IsWhitespace(uint8_t b) { return b == ' ' || b == '\t' || b == '\n' || b == '\r'; }
bool IsDigit(uint8_t b) { return b >= '0' && b <= '9'; }
bool IsHexDigit(uint8_t b) {
  return IsDigit(b) || (b >= 'a' && b <= 'f') || (b >= 'A' && b <= 'F');
}

}  // namespace

void JsonMatcher::AppendStateKey(std::string* key) const {
  // Every field, the container bits masked to the open ones (the rest are rewritten on opening).
  const uint64_t open = depth_ >= 64 ? ~uint64_t{0} : (uint64_t{1} << depth_) - 1;
  const uint64_t containers = containers_ & open;
  const uintptr_t literal = reinterpret_cast<uintptr_t>(literal_);
  const uint8_t small[] = {static_cast<uint8_t>(mode_),
                           static_cast<uint8_t>(number_),
                           key_,
                           hex_left_,
                           utf8_left_,
                           utf8_lo_,
                           utf8_hi_,
                           ws_run_,
                           static_cast<uint8_t>(depth_)};
  key->append(reinterpret_cast<const char*>(small), sizeof(small));
  key->append(reinterpret_cast<const char*>(&containers), sizeof(containers));
  key->append(reinterpret_cast<const char*>(&literal), sizeof(literal));
}

JsonMatcher JsonMatcher::ForValue() {
  JsonMatcher m;
  m.Advance("{\"\":");
  return m;
}

bool JsonMatcher::Advance(std::string_view bytes) {
  for (char c : bytes)
    if (!Advance(static_cast<uint8_t>(c))) return false;
  return true;
}

bool JsonMatcher::Whitespace() { return ++ws_run_ <= max_ws_run_; }

bool JsonMatcher::Open(bool object) {
  if (depth_ == kMaxDepth) return false;
  if (object) {
    containers_ |= uint64_t{1} << depth_;
  } else {
    containers_ &= ~(uint64_t{1} << depth_);
  }
  ++depth_;
  mode_ = object ? Mode::kKeyOrClose : Mode::kValueOrClose;
  return true;
}

bool JsonMatcher::Close(bool object) {
  if (depth_ == 0 || in_object() != object) return false;
  --depth_;
  EndValue();
  return true;
}

void JsonMatcher::EndValue() { mode_ = depth_ == 0 ? Mode::kDone : Mode::kCommaOrClose; }

bool JsonMatcher::StartValue(uint8_t byte) {
  switch (byte) {
    case '{':
      return Open(true);
    case '[':
      return Open(false);
    case '"':
      key_ = false;
      mode_ = Mode::kString;
      return true;
    case '-':
      mode_ = Mode::kNumber;
      number_ = Number::kMinus;
      return true;
    case 't':
      mode_ = Mode::kLiteral;
      literal_ = "rue";
      return true;
    case 'f':
      mode_ = Mode::kLiteral;
      literal_ = "alse";
      return true;
    case 'n':
      mode_ = Mode::kLiteral;
      literal_ = "ull";
      return true;
    default:
      if (!IsDigit(byte)) return false;
      mode_ = Mode::kNumber;
      number_ = byte == '0' ? Number::kZero : Number::kInt;
      return true;
  }
}

bool JsonMatcher::AdvanceNumber(uint8_t byte) {
  const bool digit = IsDigit(byte);
  const bool exp = byte == 'e' || byte == 'E';
  switch (number_) {
    case Number::kMinus:
      if (!digit) return false;
      number_ = byte == '0' ? Number::kZero : Number::kInt;
      return true;
    case Number::kZero:
      if (byte == '.') return number_ = Number::kDot, true;
      if (exp) return number_ = Number::kExp, true;
      break;  // "01" is not a number; anything else ends it
    case Number::kInt:
      if (digit) return true;
      if (byte == '.') return number_ = Number::kDot, true;
      if (exp) return number_ = Number::kExp, true;
      break;
    case Number::kDot:
      if (!digit) return false;
      number_ = Number::kFrac;
      return true;
    case Number::kFrac:
      if (digit) return true;
      if (exp) return number_ = Number::kExp, true;
      break;
    case Number::kExp:
      if (byte == '+' || byte == '-') return number_ = Number::kExpSign, true;
      if (!digit) return false;
      number_ = Number::kExpDigits;
      return true;
    case Number::kExpSign:
      if (!digit) return false;
      number_ = Number::kExpDigits;
      return true;
    case Number::kExpDigits:
      if (digit) return true;
      break;
  }
  if (digit) return false;  // a digit after a leading zero
  // The number is complete; the byte belongs to what follows it (',', '}', ']', whitespace).
  EndValue();
  return Advance(byte);
}

bool JsonMatcher::Advance(uint8_t byte) {
  switch (mode_) {
    case Mode::kRoot:
    case Mode::kValue:
    case Mode::kKeyOrClose:
    case Mode::kKey:
    case Mode::kColon:
    case Mode::kCommaOrClose:
    case Mode::kValueOrClose:
    case Mode::kDone:
      // Between tokens: whitespace, in bounded runs.
      if (IsWhitespace(byte)) return Whitespace();
      ws_run_ = 0;
      break;
    default:
      break;
  }
  switch (mode_) {
    case Mode::kRoot:
      return byte == '{' && Open(true);
    case Mode::kValue:
      return StartValue(byte);
    case Mode::kValueOrClose:
      return byte == ']' ? Close(false) : StartValue(byte);
    case Mode::kKeyOrClose:
      if (byte == '}') return Close(true);
      [[fallthrough]];
    case Mode::kKey:
      if (byte != '"') return false;
      key_ = true;
      mode_ = Mode::kString;
      return true;
    case Mode::kColon:
      if (byte != ':') return false;
      mode_ = Mode::kValue;
      return true;
    case Mode::kCommaOrClose:
      if (byte == ',') {
        mode_ = in_object() ? Mode::kKey : Mode::kValue;
        return true;
      }
      if (byte == '}' || byte == ']') return Close(byte == '}');
      return false;
    case Mode::kString:
      if (byte == '"') {
        if (key_) {
          mode_ = Mode::kColon;
        } else {
          EndValue();
        }
        return true;
      }
      if (byte == '\\') {
        mode_ = Mode::kEscape;
        return true;
      }
      if (byte < 0x20) return false;  // control characters must be escaped
      if (byte < 0x80) return true;
      // A UTF-8 lead byte; the ranges of the next byte exclude overlong forms, surrogates and
      // code points past U+10FFFF (RFC 3629).
      utf8_lo_ = 0x80;
      utf8_hi_ = 0xBF;
      if (byte >= 0xC2 && byte <= 0xDF) {
        utf8_left_ = 1;
      } else if (byte >= 0xE0 && byte <= 0xEF) {
        utf8_left_ = 2;
        if (byte == 0xE0) utf8_lo_ = 0xA0;
        if (byte == 0xED) utf8_hi_ = 0x9F;
      } else if (byte >= 0xF0 && byte <= 0xF4) {
        utf8_left_ = 3;
        if (byte == 0xF0) utf8_lo_ = 0x90;
        if (byte == 0xF4) utf8_hi_ = 0x8F;
      } else {
        return false;
      }
      mode_ = Mode::kUtf8;
      return true;
    case Mode::kUtf8:
      if (byte < utf8_lo_ || byte > utf8_hi_) return false;
      utf8_lo_ = 0x80;
      utf8_hi_ = 0xBF;
      if (--utf8_left_ == 0) mode_ = Mode::kString;
      return true;
    case Mode::kEscape:
      if (byte == 'u') {
        mode_ = Mode::kUnicode;
        hex_left_ = 4;
        return true;
      }
      if (byte != '"' && byte != '\\' && byte != '/' && byte != 'b' && byte != 'f' && byte != 'n' &&
          byte != 'r' && byte != 't')
        return false;
      mode_ = Mode::kString;
      return true;
    case Mode::kUnicode:
      if (!IsHexDigit(byte)) return false;
      if (--hex_left_ == 0) mode_ = Mode::kString;
      return true;
    case Mode::kNumber:
      return AdvanceNumber(byte);
    case Mode::kLiteral:
      if (byte != static_cast<uint8_t>(*literal_)) return false;
      if (*++literal_ == '\0') EndValue();
      return true;
    case Mode::kDone:
      return false;  // only whitespace after the root object
  }
  return false;
}

}  // namespace xinfer
