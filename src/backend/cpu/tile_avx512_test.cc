// StoreTile must give, bit for bit, what one _mm512_reduce_add_ps per accumulator gives: it is
// part of every kernel's per-element instruction sequence, and tiles of every shape (including
// the partial groups of the edge tiles) must agree for batch invariance.
#if defined(__x86_64__)  // x86 only; cpu_kernels_avx512_absent.cc elsewhere

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>

#include "backend/cpu/cpu_kernels.h"

// Only intrinsics below the target pragma: no library templates get instantiated for AVX-512.
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl")
// GCC 12's intrinsics start from _mm512_undefined_ps(), which -Wuninitialized flags below -O3.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#include "backend/cpu/tile_avx512.h"

namespace xinfer::cpu::avx512 {
namespace {

// lanes: [MR][NR][16]; writes StoreTile's output to `out` (row stride ldo) and the per-element
// reference to want[MR][NR].
template <int MR, int NR>
void RunStoreTile(const float* lanes, const float* bias, float* out, int64_t ldo, float* want) {
  __m512 acc[MR][NR];
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) acc[i][j] = _mm512_loadu_ps(lanes + (i * NR + j) * 16);
  StoreTile(acc, bias, out, ldo);
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j)
      want[i * NR + j] = _mm512_reduce_add_ps(acc[i][j]) + (bias != nullptr ? bias[j] : 0.f);
}

}  // namespace
}  // namespace xinfer::cpu::avx512
#pragma GCC diagnostic pop
#pragma GCC pop_options

namespace xinfer::cpu::avx512 {
namespace {

uint32_t Bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

template <int MR, int NR>
void CheckStoreTile(std::mt19937& rng, bool with_bias) {
  // Magnitudes over many binades, and a signed zero, so that any change of summation order shows.
  std::uniform_real_distribution<float> mant(-1.f, 1.f);
  std::uniform_int_distribution<int> exp(-20, 20);
  float lanes[MR * NR * 16];
  for (float& v : lanes) v = std::ldexp(mant(rng), exp(rng));
  lanes[3] = -0.f;
  float bias[NR];
  for (float& b : bias) b = mant(rng);
  constexpr int64_t ldo = NR + 3;
  float out[MR * ldo];
  std::memset(out, 0x7f, sizeof(out));  // the gaps between rows must stay untouched
  float want[MR * NR];
  RunStoreTile<MR, NR>(lanes, with_bias ? bias : nullptr, out, ldo, want);
  for (int i = 0; i < MR; ++i) {
    for (int j = 0; j < NR; ++j)
      EXPECT_EQ(Bits(out[i * ldo + j]), Bits(want[i * NR + j]))
          << "MR " << MR << " NR " << NR << " at " << i << "," << j;
    for (int j = NR; j < ldo; ++j)
      EXPECT_EQ(Bits(out[i * ldo + j]), 0x7f7f7f7fu) << "wrote past the tile at " << i << "," << j;
  }
}

TEST(StoreTileTest, BitwiseEqualsOneReductionPerAccumulator) {
  if (!DetectCpuFeatures().avx512) GTEST_SKIP() << "this CPU has no AVX-512";
  std::mt19937 rng(7);
  for (int round = 0; round < 50; ++round) {
    for (bool bias : {false, true}) {
      CheckStoreTile<1, 1>(rng, bias);
      CheckStoreTile<1, 6>(rng, bias);
      CheckStoreTile<2, 3>(rng, bias);
      CheckStoreTile<3, 5>(rng, bias);
      CheckStoreTile<4, 4>(rng, bias);
      CheckStoreTile<4, 6>(rng, bias);
    }
  }
}

}  // namespace
}  // namespace xinfer::cpu::avx512

#endif  // defined(__x86_64__)
