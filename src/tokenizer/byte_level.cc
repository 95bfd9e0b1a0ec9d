#include "tokenizer/byte_level.h"

#include <array>

#include "base/utf8.h"

namespace xinfer::tok {
namespace {

struct Tables {
  std::array<std::string, 256> to_unicode;
  std::array<int16_t, 512> to_byte;  // the alphabet lies below U+0200
  Tables() {
    to_byte.fill(-1);
    int next = 256;
    for (int b = 0; b < 256; ++b) {
      bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
      char32_t cp = printable ? static_cast<char32_t>(b) : static_cast<char32_t>(next++);
      AppendUtf8(cp, &to_unicode[b]);
      to_byte[cp] = static_cast<int16_t>(b);
    }
  }
};

const Tables& GetTables() {
  static const Tables tables;
  return tables;
}

}  // namespace

std::string_view ByteToUnicode(uint8_t b) { return GetTables().to_unicode[b]; }

int UnicodeToByte(char32_t cp) { return cp < 512 ? GetTables().to_byte[cp] : -1; }

void ByteLevelEncode(std::string_view bytes, std::string* out) {
  const Tables& t = GetTables();
  for (char c : bytes) out->append(t.to_unicode[static_cast<uint8_t>(c)]);
}

bool ByteLevelDecode(std::string_view token, std::string* out) {
  const size_t old = out->size();
  size_t pos = 0;
  while (pos < token.size()) {
    int b = UnicodeToByte(NextCodepoint(token, &pos));
    if (b < 0) {
      out->resize(old);
      return false;
    }
    out->push_back(static_cast<char>(b));
  }
  return true;
}

}  // namespace xinfer::tok
