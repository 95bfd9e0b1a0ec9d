// One hexadecimal digit's value, for the parsers that read \xHH / \uHHHH escapes and <0xHH>
// byte tokens. Stateless.
#pragma once

namespace xinfer {

// 0..15, or -1 when `c` is not a hex digit (either case).
constexpr int HexDigitValue(char32_t c) {
  if (c >= U'0' && c <= U'9') return static_cast<int>(c - U'0');
  if (c >= U'a' && c <= U'f') return static_cast<int>(c - U'a' + 10);
  if (c >= U'A' && c <= U'F') return static_cast<int>(c - U'A' + 10);
  return -1;
}

}  // namespace xinfer
