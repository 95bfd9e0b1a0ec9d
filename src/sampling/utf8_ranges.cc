#include "sampling/utf8_ranges.h"

namespace xinfer {
namespace {

int Utf8Length(char32_t c) { return c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4; }

void EncodeUtf8(char32_t c, uint8_t (&out)[4]) {
  switch (Utf8Length(c)) {
    case 1:
      out[0] = static_cast<uint8_t>(c);
      break;
    case 2:
      out[0] = static_cast<uint8_t>(0xC0 | (c >> 6));
      out[1] = static_cast<uint8_t>(0x80 | (c & 0x3F));
      break;
    case 3:
      out[0] = static_cast<uint8_t>(0xE0 | (c >> 12));
      out[1] = static_cast<uint8_t>(0x80 | ((c >> 6) & 0x3F));
      out[2] = static_cast<uint8_t>(0x80 | (c & 0x3F));
      break;
    default:
      out[0] = static_cast<uint8_t>(0xF0 | (c >> 18));
      out[1] = static_cast<uint8_t>(0x80 | ((c >> 12) & 0x3F));
      out[2] = static_cast<uint8_t>(0x80 | ((c >> 6) & 0x3F));
      out[3] = static_cast<uint8_t>(0x80 | (c & 0x3F));
  }
}

}  // namespace

void Utf8Sequences(char32_t lo, char32_t hi, std::vector<Utf8Sequence>* out) {
  if (lo > hi) return;
  if (lo <= 0xDFFF && hi >= 0xD800) {
    if (lo < 0xD800) Utf8Sequences(lo, 0xD7FF, out);
    if (hi > 0xDFFF) Utf8Sequences(0xE000, hi, out);
    return;
  }
  for (char32_t max : {char32_t{0x7F}, char32_t{0x7FF}, char32_t{0xFFFF}}) {
    if (lo <= max && hi > max) {
      Utf8Sequences(lo, max, out);
      Utf8Sequences(max + 1, hi, out);
      return;
    }
  }
  for (int i = 1; i < 4; ++i) {
    const char32_t m = (char32_t{1} << (6 * i)) - 1;
    if ((lo & ~m) == (hi & ~m)) continue;
    if ((lo & m) != 0) {
      Utf8Sequences(lo, lo | m, out);
      Utf8Sequences((lo | m) + 1, hi, out);
      return;
    }
    if ((hi & m) != m) {
      Utf8Sequences(lo, (hi & ~m) - 1, out);
      Utf8Sequences(hi & ~m, hi, out);
      return;
    }
  }
  uint8_t a[4], b[4];
  EncodeUtf8(lo, a);
  EncodeUtf8(hi, b);
  Utf8Sequence s;
  for (int i = 0; i < Utf8Length(lo); ++i) s.push_back({a[i], b[i]});
  out->push_back(std::move(s));
}

}  // namespace xinfer
