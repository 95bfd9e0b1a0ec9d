#include "sampling/utf8_util.h"

#include <cstdint>

namespace xinfer::utf8 {
namespace {

// Expected length of a character from its first byte, 0 for a continuation or invalid byte.
size_t SequenceLength(uint8_t lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return 2;
  if (lead >= 0xE0 && lead <= 0xEF) return 3;
  if (lead >= 0xF0 && lead <= 0xF4) return 4;
  return 0;
}

bool IsContinuation(uint8_t b) { return (b & 0xC0) == 0x80; }

}  // namespace

bool IsValid(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto lead = static_cast<uint8_t>(s[i]);
    const size_t len = SequenceLength(lead);
    if (len == 0 || i + len > s.size()) return false;
    for (size_t j = 1; j < len; ++j) {
      if (!IsContinuation(static_cast<uint8_t>(s[i + j]))) return false;
    }
    if (len >= 3) {
      const auto second = static_cast<uint8_t>(s[i + 1]);
      if (lead == 0xE0 && second < 0xA0) return false;  // overlong
      if (lead == 0xED && second > 0x9F) return false;  // UTF-16 surrogate
      if (lead == 0xF0 && second < 0x90) return false;  // overlong
      if (lead == 0xF4 && second > 0x8F) return false;  // > U+10FFFF
    }
    i += len;
  }
  return true;
}

size_t IncompleteSuffixLength(std::string_view s) {
  // Walk back over at most 3 continuation bytes to the lead byte of the last character.
  const size_t n = s.size();
  for (size_t back = 1; back <= 4 && back <= n; ++back) {
    const auto b = static_cast<uint8_t>(s[n - back]);
    if (IsContinuation(b)) continue;
    const size_t len = SequenceLength(b);
    // A lead byte whose character needs more bytes than are present is incomplete; anything else
    // (complete character, ASCII, or an invalid byte that no later byte can fix) is not held.
    return (len > back) ? back : 0;
  }
  return 0;
}

}  // namespace xinfer::utf8
