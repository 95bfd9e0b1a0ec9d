#include "tokenizer/utf8.h"

#include <utf8proc.h>

namespace xinfer::tok {

bool IsValidUtf8(std::string_view s) {
  size_t i = 0;
  const size_t n = s.size();
  while (i < n) {
    uint8_t b = static_cast<uint8_t>(s[i]);
    if (b < 0x80) {
      ++i;
      continue;
    }
    int need;
    uint8_t lo = 0x80, hi = 0xBF;
    if (b >= 0xC2 && b <= 0xDF) {
      need = 1;
    } else if (b >= 0xE0 && b <= 0xEF) {
      need = 2;
      if (b == 0xE0) lo = 0xA0;
      if (b == 0xED) hi = 0x9F;
    } else if (b >= 0xF0 && b <= 0xF4) {
      need = 3;
      if (b == 0xF0) lo = 0x90;
      if (b == 0xF4) hi = 0x8F;
    } else {
      return false;
    }
    if (n - i <= static_cast<size_t>(need)) return false;
    uint8_t c = static_cast<uint8_t>(s[i + 1]);
    if (c < lo || c > hi) return false;
    for (int k = 2; k <= need; ++k) {
      c = static_cast<uint8_t>(s[i + k]);
      if (c < 0x80 || c > 0xBF) return false;
    }
    i += need + 1;
  }
  return true;
}

char32_t NextCodepoint(std::string_view s, size_t* pos) {
  size_t i = *pos;
  uint8_t b = static_cast<uint8_t>(s[i]);
  if (b < 0x80) {
    *pos = i + 1;
    return b;
  }
  int len = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC0 ? 2 : 0;
  if (len == 0 || i + len > s.size()) {
    *pos = i + 1;
    return 0xFFFD;
  }
  char32_t cp = b & (0x7F >> len);
  for (int k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<uint8_t>(s[i + k]) & 0x3F);
  *pos = i + len;
  return cp;
}

void AppendUtf8(char32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

bool IsWhitespace(char32_t cp) {
  switch (cp) {
    case 0x09:
    case 0x0A:
    case 0x0B:
    case 0x0C:
    case 0x0D:
    case 0x20:
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

bool IsWordChar(char32_t cp) {
  if (cp < 0x80) {
    return (cp >= '0' && cp <= '9') || (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') ||
           cp == '_';
  }
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_NO:
      return true;
    default:
      return false;
  }
}

bool IsNumeric(char32_t cp) {
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_NO:
      return true;
    default:
      return false;
  }
}

bool IsAllAscii(std::string_view s) {
  for (char c : s) {
    if (static_cast<uint8_t>(c) >= 0x80) return false;
  }
  return true;
}

void Utf8Sanitizer::Feed(std::string_view bytes, std::string* out) {
  for (char c : bytes) FeedByte(static_cast<uint8_t>(c), out);
}

void Utf8Sanitizer::FeedByte(uint8_t b, std::string* out) {
  if (npending_ > 0) {
    if (b >= lo_ && b <= hi_) {
      pending_[npending_++] = static_cast<char>(b);
      lo_ = 0x80;
      hi_ = 0xBF;
      if (--need_ == 0) {
        out->append(pending_, npending_);
        npending_ = 0;
      }
      return;
    }
    // The pending bytes are a maximal subpart of an ill-formed sequence: one U+FFFD for all of
    // them, then `b` starts afresh.
    out->append(kReplacementChar);
    npending_ = 0;
    need_ = 0;
  }
  if (b < 0x80) {
    out->push_back(static_cast<char>(b));
    return;
  }
  lo_ = 0x80;
  hi_ = 0xBF;
  if (b >= 0xC2 && b <= 0xDF) {
    need_ = 1;
  } else if (b >= 0xE0 && b <= 0xEF) {
    need_ = 2;
    if (b == 0xE0) lo_ = 0xA0;
    if (b == 0xED) hi_ = 0x9F;
  } else if (b >= 0xF0 && b <= 0xF4) {
    need_ = 3;
    if (b == 0xF0) lo_ = 0x90;
    if (b == 0xF4) hi_ = 0x8F;
  } else {
    out->append(kReplacementChar);
    return;
  }
  pending_[0] = static_cast<char>(b);
  npending_ = 1;
}

void Utf8Sanitizer::Finish(std::string* out) {
  if (npending_ > 0) out->append(kReplacementChar);
  npending_ = 0;
  need_ = 0;
}

}  // namespace xinfer::tok
