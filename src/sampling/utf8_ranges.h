// Code point ranges as UTF-8 byte-range sequences: how the byte-level automata of guided
// decoding (regex_dfa.h, grammar.h) match a class of characters one byte at a time.
//
// Plain functions; no shared state.
#pragma once

#include <cstdint>
#include <vector>

namespace xinfer {

struct ByteRange {
  uint8_t lo;
  uint8_t hi;
};
using Utf8Sequence = std::vector<ByteRange>;  // one byte range per byte of the encoding

// The code points lo..hi (surrogates left out) as byte-range sequences whose products are exactly
// their UTF-8 encodings: split until every sequence's encodings share a length and each
// continuation byte either is fixed or spans its whole 0x80..0xBF range (the standard
// construction, as in RE2 and Rust's regex-syntax). Appended to `out`.
void Utf8Sequences(char32_t lo, char32_t hi, std::vector<Utf8Sequence>* out);

}  // namespace xinfer
