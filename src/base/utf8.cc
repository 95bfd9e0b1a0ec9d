#include "base/utf8.h"

namespace xinfer {
namespace {

// What a lead byte promises (Table 3-7): how many continuation bytes follow and the range of the
// first of them, which is where overlong forms (E0, F0), surrogates (ED) and values above
// U+10FFFF (F4) are excluded. need < 0: the byte cannot start a character.
struct Lead {
  int need;
  uint8_t lo, hi;
};

Lead ClassifyLead(uint8_t b) {
  if (b < 0x80) return {0, 0x80, 0xBF};
  if (b >= 0xC2 && b <= 0xDF) return {1, 0x80, 0xBF};
  if (b >= 0xE0 && b <= 0xEF)
    return {2, b == 0xE0 ? uint8_t{0xA0} : uint8_t{0x80},
            b == 0xED ? uint8_t{0x9F} : uint8_t{0xBF}};
  if (b >= 0xF0 && b <= 0xF4)
    return {3, b == 0xF0 ? uint8_t{0x90} : uint8_t{0x80},
            b == 0xF4 ? uint8_t{0x8F} : uint8_t{0xBF}};
  return {-1, 0, 0};
}

}  // namespace

Utf8Char DecodeUtf8Char(std::string_view s, size_t pos) {
  const auto b = static_cast<uint8_t>(s[pos]);
  const Lead lead = ClassifyLead(b);
  if (lead.need == 0) return {b, 1, true};
  if (lead.need < 0) return {kReplacementCodepoint, 1, false};
  char32_t cp = b & (0x3F >> lead.need);
  uint8_t lo = lead.lo, hi = lead.hi;
  for (int k = 1; k <= lead.need; ++k) {
    // The maximal subpart ends before the first byte that cannot continue the sequence.
    if (pos + k >= s.size()) return {kReplacementCodepoint, static_cast<size_t>(k), false};
    const auto c = static_cast<uint8_t>(s[pos + k]);
    if (c < lo || c > hi) return {kReplacementCodepoint, static_cast<size_t>(k), false};
    cp = (cp << 6) | (c & 0x3F);
    lo = 0x80;
    hi = 0xBF;
  }
  return {cp, static_cast<size_t>(lead.need) + 1, true};
}

char32_t NextCodepoint(std::string_view s, size_t* pos) {
  const Utf8Char c = DecodeUtf8Char(s, *pos);
  *pos += c.valid ? c.size : 1;
  return c.cp;
}

void AppendUtf8(char32_t cp, std::string* out) {
  if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) cp = kReplacementCodepoint;
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

bool IsValidUtf8(std::string_view s) {
  size_t pos = 0;
  while (pos < s.size()) {
    const Utf8Char c = DecodeUtf8Char(s, pos);
    if (!c.valid) return false;
    pos += c.size;
  }
  return true;
}

size_t IncompleteUtf8SuffixLength(std::string_view s) {
  // Walk back over at most 3 continuation bytes to the lead byte of the last character.
  const size_t n = s.size();
  for (size_t back = 1; back <= 4 && back <= n; ++back) {
    if (IsUtf8Continuation(s[n - back])) continue;
    const int need = ClassifyLead(static_cast<uint8_t>(s[n - back])).need;
    // A lead byte whose character needs more bytes than are present is incomplete; anything else
    // (complete character, ASCII, or an invalid byte that no later byte can fix) is not held.
    return need >= 0 && static_cast<size_t>(need) + 1 > back ? back : 0;
  }
  return 0;
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
  const Lead lead = ClassifyLead(b);
  if (lead.need == 0) {
    out->push_back(static_cast<char>(b));
    return;
  }
  if (lead.need < 0) {
    out->append(kReplacementChar);
    return;
  }
  need_ = lead.need;
  lo_ = lead.lo;
  hi_ = lead.hi;
  pending_[0] = static_cast<char>(b);
  npending_ = 1;
}

void Utf8Sanitizer::Finish(std::string* out) {
  if (npending_ > 0) out->append(kReplacementChar);
  npending_ = 0;
  need_ = 0;
}

bool IsUnicodeWhitespace(char32_t cp) {
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

}  // namespace xinfer
