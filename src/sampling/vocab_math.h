// Vector math over vocab-sized arrays for the sampler, with Google Highway: compiled for every
// SIMD target Highway knows and chosen at run time (as the CPU backend's portable kernels are),
// so a random draw over a 152K vocabulary does not pay glibc's scalar exp per token (~550 us per
// sequence and step in double, against ~50 here). Pure functions; thread-safe.
#pragma once

#include <cstdint>

namespace xinfer::vocab {

// out[i] = exp(x[i]) in float for i in [0, n), x <= 0 (a softmax weight's exponent): Highway's
// Exp (about 1 ulp); exactly 0 where x is below log(FLT_MIN) ~ -87.34 (no subnormals), -inf or
// NaN. out may alias x. (Not the CPU backend's cpu::simd::Exp: sampling runs on the host
// whatever the backend, and only backend/cpu/ may name the CPU.)
void ExpOfNonPositive(const float* x, int64_t n, float* out);

}  // namespace xinfer::vocab
