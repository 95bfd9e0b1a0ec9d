// Pieces shared by the AVX-512 tile kernels (cpu_kernels_*avx512.cc, cpu_kernels_nibble_bf16.cc).
// Include it after the file's `#pragma GCC target(...)` so that it compiles for that ISA.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace xinfer::cpu::avx512 {

// The end of every tile: out[i * ldo + j] = horizontal sum of acc[i][j] + bias[j] (bias may be
// null). The fixed reduction is part of each output element's one instruction sequence.
template <int MR, int NR>
inline void StoreTile(const __m512 (&acc)[MR][NR], const float* bias, float* out, int64_t ldo) {
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 8
    for (int j = 0; j < NR; ++j)
      out[i * ldo + j] = _mm512_reduce_add_ps(acc[i][j]) + (bias != nullptr ? bias[j] : 0.f);
}

}  // namespace xinfer::cpu::avx512
