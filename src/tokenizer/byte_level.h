// GPT-2 style byte-level alphabet: every byte maps to one printable code point so that byte
// strings can live in a JSON vocabulary. Tables are built once and are read-only afterwards.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace xinfer::tok {

// UTF-8 encoding of the code point standing for byte `b`.
std::string_view ByteToUnicode(uint8_t b);
// Byte for code point `cp`, or -1 when `cp` is not part of the alphabet.
int UnicodeToByte(char32_t cp);
// Maps every byte of `bytes` to its code point, appending UTF-8 to `out`.
void ByteLevelEncode(std::string_view bytes, std::string* out);
// Inverse of ByteLevelEncode for one token: appends the bytes to `out`. Returns false (and
// appends nothing) if some character of `token` is outside the alphabet.
bool ByteLevelDecode(std::string_view token, std::string* out);

}  // namespace xinfer::tok
