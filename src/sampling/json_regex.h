// Regular-expression trees of JSON texts whose assertions guided decoding checks byte by byte
// (json_schema.cc compiles them with RegexDfa and SchemaMatcher walks them): a string whose
// decoded content matches a tree (JSON Schema's pattern, minLength, maxLength), an integer in a
// range (minimum, maximum and their exclusive forms).
//
// Pure functions over values.
#pragma once

#include <cstdint>
#include <optional>

#include "sampling/regex_syntax.h"

namespace xinfer {

// The JSON text of a string, quotes included, whose content matches `content`: each character
// spelled raw where JSON allows it, or by its short escape (\" \\ \b \f \n \r \t). Not \uXXXX, so
// that every character has one or two spellings; characters only \uXXXX could spell (the other
// control characters) are left out.
RegexNode JsonStringOf(const RegexNode& content);

// The JSON text of every integer in [lo, hi] (nullopt: no bound), in its canonical form: no
// leading zeros, no "-0", no fraction or exponent. lo <= hi when both are given.
RegexNode JsonIntegerIn(std::optional<int64_t> lo, std::optional<int64_t> hi);

// A bound of a number: x >= value (x > value when strict) as a lower one, x <= value (<) as an
// upper one. Integral, within +-10^18.
struct NumberBound {
  int64_t value = 0;
  bool strict = false;
};

// The JSON text of every number within `lower` and `upper` (nullopt: no bound), spelled without an
// exponent: an integer part without leading zeros, then an optional fraction; no "-0". Matches
// nothing when no number lies within them.
RegexNode JsonNumberIn(std::optional<NumberBound> lower, std::optional<NumberBound> upper);

}  // namespace xinfer
