// Small UTF-8 helpers for the stop-string logic: validation of client-supplied stop strings and
// finding an incomplete character at the end of streamed text. Pure functions, thread-safe.
#pragma once

#include <cstddef>
#include <string_view>

namespace xinfer::utf8 {

// True if `s` is well-formed UTF-8 (no overlongs, surrogates or code points above U+10FFFF).
bool IsValid(std::string_view s);

// Number of trailing bytes of `s` that form the start of a multi-byte character whose remaining
// bytes have not arrived yet (0..3). Text ending there must be held back, not emitted split.
size_t IncompleteSuffixLength(std::string_view s);

}  // namespace xinfer::utf8
