// Vector math over vocab-sized arrays for the sampler, with Google Highway: compiled for every
// SIMD target Highway knows and chosen at run time (as the CPU backend's portable kernels are),
// so a random draw over a 152K vocabulary does not pay glibc's scalar exp per token (~550 us per
// sequence and step in double, against ~50 here). Pure functions; thread-safe.
#pragma once

#include <cstdint>

namespace xinfer::vocab {

// out[i] = exp(x[i]) in float for i in [0, n): Highway's Exp (about 1 ulp), with x clamped to
// [-100, 0] first (the range a softmax weight's exponent has; below about -87.3 the result is 0 or
// subnormal). out may alias x.
void ExpOfNonPositive(const float* x, int64_t n, float* out);

}  // namespace xinfer::vocab
