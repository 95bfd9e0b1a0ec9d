// Portable SIMD kernels written once with Google Highway and compiled for every target it knows
// (x86 SSE4 / AVX2 / AVX-512, ARM NEON / SVE, ...), chosen at run time by HWY_DYNAMIC_DISPATCH.
// FastCpuOps uses them on CPUs without the hand-written AVX-512 kernels: AVX2 servers and the
// ARM64 (Kunpeng) machines this project targets. This file: Linear on dense and quantized
// weights; the other ops are in cpu_kernels_hwy_ops.cc.
//
// Batch invariance, as in cpu_kernels.h: an output element of Linear is one accumulator vector
// over K in steps of Lanes(), the K tail through a zero-padded buffer with the same vector code,
// then SumOfLanes and the bias; a tile computes each element the same way whatever its size or
// place.
//
// Sizeless vectors (SVE) cannot live in arrays or lambda captures, hence the named accumulators
// and macros below.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "backend/cpu/cpu_kernels.h"
#include "tensor/dtype.h"
#include "tensor/quant.h"
#include "tensor/quant_blocks.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backend/cpu/cpu_kernels_hwy.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// foreach_target.h must come first.
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace xinfer::cpu {
namespace HWY_NAMESPACE {
namespace {

namespace hn = hwy::HWY_NAMESPACE;
using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;
constexpr size_t kMaxLanes = HWY_MAX_BYTES / sizeof(float);

// Rows of x per Linear tile: 4 x 4 accumulators + 4 x + 1 w need the 32 registers of NEON, SVE
// and AVX-512; AVX2 and SSE4 have 16 (2 x 4 accumulators + 2 x + 1 w).
#if HWY_ARCH_ARM || (HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3)
constexpr int kMr = 4;
#else
constexpr int kMr = 2;
#endif
constexpr int kNr = 4;  // weight rows per tile

HWY_INLINE VF LoadW(DF df, const float* p) { return hn::LoadU(df, p); }
HWY_INLINE VF LoadW(DF df, const hwy::bfloat16_t* p) {
  const hn::Rebind<hwy::bfloat16_t, DF> dbf;
  return hn::PromoteTo(df, hn::LoadU(dbf, p));
}
HWY_INLINE VF LoadW(DF df, const hwy::float16_t* p) {
  const hn::Rebind<hwy::float16_t, DF> dh;
  return hn::PromoteTo(df, hn::LoadU(dh, p));
}

// The K tail of a weight row, widened to F32 into a zero-padded buffer.
void WidenTail(const float* p, int64_t n, float* out) { std::memcpy(out, p, n * sizeof(float)); }
void WidenTail(const hwy::bfloat16_t* p, int64_t n, float* out) {
  const uint16_t* s = reinterpret_cast<const uint16_t*>(p);
  for (int64_t i = 0; i < n; ++i) out[i] = Bf16ToF32(s[i]);
}
void WidenTail(const hwy::float16_t* p, int64_t n, float* out) {
  const uint16_t* s = reinterpret_cast<const uint16_t*>(p);
  for (int64_t i = 0; i < n; ++i) out[i] = F16ToF32(s[i]);
}

// One k-step of the tile: weight row J (loaded by LOADW) meets every x row of the tile.
#define XI_HWY_ROW(J, LOADW)                                  \
  {                                                           \
    const VF wv = LOADW;                                      \
    a0##J = hn::MulAdd(xv0, wv, a0##J);                       \
    if constexpr (MR > 1) a1##J = hn::MulAdd(xv1, wv, a1##J); \
    if constexpr (MR > 2) a2##J = hn::MulAdd(xv2, wv, a2##J); \
    if constexpr (MR > 3) a3##J = hn::MulAdd(xv3, wv, a3##J); \
  }
// Element (I, J) of a tile: accumulator aIJ reduced, plus the bias; columns past nr are not stored.
#define XI_HWY_STORE(I, J) \
  if (nr > J) out[I * ldo + J] = hn::GetLane(hn::SumOfLanes(df, a##I##J)) + (bias ? bias[J] : 0.f);
#define XI_HWY_STORE_ROW(I)                                                     \
  if (MR > I) {                                                                 \
    XI_HWY_STORE(I, 0) XI_HWY_STORE(I, 1) XI_HWY_STORE(I, 2) XI_HWY_STORE(I, 3) \
  }

// A tile's operands: weight rows w0..w3 (STRIDE elements of type T apart; rows past nr repeat
// row 0), x rows x0..x3 (rows past MR repeat row 0) and the 16 accumulators aIJ.
#define XI_HWY_TILE_SETUP(T, STRIDE)                      \
  const T* w0 = w;                                        \
  const T* w1 = nr > 1 ? w + (STRIDE) : w;                \
  const T* w2 = nr > 2 ? w + 2 * (STRIDE) : w;            \
  const T* w3 = nr > 3 ? w + 3 * (STRIDE) : w;            \
  const float* x0 = x;                                    \
  const float* x1 = MR > 1 ? x + ldx : x;                 \
  const float* x2 = MR > 2 ? x + 2 * ldx : x;             \
  const float* x3 = MR > 3 ? x + 3 * ldx : x;             \
  VF a00 = hn::Zero(df), a01 = a00, a02 = a00, a03 = a00; \
  VF a10 = a00, a11 = a00, a12 = a00, a13 = a00;          \
  VF a20 = a00, a21 = a00, a22 = a00, a23 = a00;          \
  VF a30 = a00, a31 = a00, a32 = a00, a33 = a00;

// MR rows of x times nr (<= 4) weight rows; missing weight rows repeat row 0 and are not stored.
template <int MR, typename TW>
HWY_NOINLINE void Tile(const float* HWY_RESTRICT x, int64_t ldx, const TW* HWY_RESTRICT w,
                       int64_t k, int64_t nr, const float* HWY_RESTRICT bias,
                       float* HWY_RESTRICT out, int64_t ldo, bool prefetch) {
  const DF df;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  XI_HWY_TILE_SETUP(TW, k)
  const int64_t row_bytes = k * static_cast<int64_t>(sizeof(TW));
  const int64_t pf_dist = PrefetchDistance<kNr>(row_bytes);
  int64_t kk = 0;
  for (; kk + lanes <= k; kk += lanes) {
    const int64_t byte = kk * static_cast<int64_t>(sizeof(TW));
    if (prefetch && (byte & 63) < lanes * static_cast<int64_t>(sizeof(TW)))
      PrefetchAhead<kNr>(w, pf_dist, row_bytes, byte & ~int64_t{63});
    const VF xv0 = hn::LoadU(df, x0 + kk);
    const VF xv1 = MR > 1 ? hn::LoadU(df, x1 + kk) : xv0;
    const VF xv2 = MR > 2 ? hn::LoadU(df, x2 + kk) : xv0;
    const VF xv3 = MR > 3 ? hn::LoadU(df, x3 + kk) : xv0;
    XI_HWY_ROW(0, LoadW(df, w0 + kk))
    XI_HWY_ROW(1, LoadW(df, w1 + kk))
    XI_HWY_ROW(2, LoadW(df, w2 + kk))
    XI_HWY_ROW(3, LoadW(df, w3 + kk))
  }
  if (kk < k) {
    const int64_t rem = k - kk;
    HWY_ALIGN float xt[4][kMaxLanes] = {};
    HWY_ALIGN float wt[4][kMaxLanes] = {};
    const float* xs[4] = {x0, x1, x2, x3};
    const TW* ws[4] = {w0, w1, w2, w3};
    for (int i = 0; i < MR; ++i) std::memcpy(xt[i], xs[i] + kk, rem * sizeof(float));
    for (int j = 0; j < kNr; ++j) WidenTail(ws[j] + kk, rem, wt[j]);
    const VF xv0 = hn::Load(df, xt[0]);
    const VF xv1 = hn::Load(df, xt[MR > 1 ? 1 : 0]);
    const VF xv2 = hn::Load(df, xt[MR > 2 ? 2 : 0]);
    const VF xv3 = hn::Load(df, xt[MR > 3 ? 3 : 0]);
    XI_HWY_ROW(0, hn::Load(df, wt[0]))
    XI_HWY_ROW(1, hn::Load(df, wt[1]))
    XI_HWY_ROW(2, hn::Load(df, wt[2]))
    XI_HWY_ROW(3, hn::Load(df, wt[3]))
  }
  XI_HWY_STORE_ROW(0)
  XI_HWY_STORE_ROW(1)
  XI_HWY_STORE_ROW(2)
  XI_HWY_STORE_ROW(3)
}

template <typename TW>
using TileFn = void (*)(const float*, int64_t, const TW*, int64_t, int64_t, const float*, float*,
                        int64_t, bool);
template <typename TW>
constexpr TileFn<TW> kTiles[4] = {Tile<1, TW>, Tile<kMr >= 2 ? 2 : 1, TW>,
                                  Tile<kMr >= 3 ? 3 : 1, TW>, Tile<kMr >= 4 ? 4 : 1, TW>};

// Row tiles (tensor.h: kRowTiles): a group of kTileRows weight rows keeps each 64-byte unit of
// its rows side by side, so a GEMV over the group reads one sequential stream instead of six
// short ones. On AVX2 (2-core Zen 3, 151936 x 896 F16 lm_head) that took a decode GEMV from
// ~21 GB/s in row-major (with the prefetch above) to the plain read's ~28 GB/s; no software
// prefetch is needed on a single stream. An element's arithmetic is the row-major Tile's: one
// accumulator over K in steps of Lanes() (the unit is a whole number of vectors: RowTilesFit),
// so results are bitwise the same in either layout.
constexpr int kTileNr = static_cast<int>(kTileRows);
static_assert(kTileNr == 6, "the tile below names six accumulators per row of x");

#define XI_HWY_STORE_ROW6(I) \
  if (MR > I) {              \
    XI_HWY_STORE(I, 0)       \
    XI_HWY_STORE(I, 1)       \
    XI_HWY_STORE(I, 2)       \
    XI_HWY_STORE(I, 3)       \
    XI_HWY_STORE(I, 4)       \
    XI_HWY_STORE(I, 5)       \
  }

// MR rows of x times the nr (<= 6) rows of the row-tile group at g; rows past nr repeat row 0
// and are not stored.
template <int MR, typename TW>
HWY_NOINLINE void TiledTile(const float* HWY_RESTRICT x, int64_t ldx, const TW* HWY_RESTRICT g,
                            int64_t k, int64_t nr, const float* HWY_RESTRICT bias,
                            float* HWY_RESTRICT out, int64_t ldo) {
  const DF df;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  constexpr int64_t kUnit = kTileUnitBytes / static_cast<int64_t>(sizeof(TW));  // elements
  const TW* w0 = g;
  const TW* w1 = g + (nr > 1 ? 1 : 0) * kUnit;
  const TW* w2 = g + (nr > 2 ? 2 : 0) * kUnit;
  const TW* w3 = g + (nr > 3 ? 3 : 0) * kUnit;
  const TW* w4 = g + (nr > 4 ? 4 : 0) * kUnit;
  const TW* w5 = g + (nr > 5 ? 5 : 0) * kUnit;
  const float* x0 = x;
  const float* x1 = MR > 1 ? x + ldx : x;
  const float* x2 = MR > 2 ? x + 2 * ldx : x;
  const float* x3 = MR > 3 ? x + 3 * ldx : x;
  VF a00 = hn::Zero(df), a01 = a00, a02 = a00, a03 = a00, a04 = a00, a05 = a00;
  VF a10 = a00, a11 = a00, a12 = a00, a13 = a00, a14 = a00, a15 = a00;
  VF a20 = a00, a21 = a00, a22 = a00, a23 = a00, a24 = a00, a25 = a00;
  VF a30 = a00, a31 = a00, a32 = a00, a33 = a00, a34 = a00, a35 = a00;
  const int64_t unit_stride = nr * kUnit;  // from one unit of a row to its next
  for (int64_t u = 0, kk = 0; kk < k; ++u) {
    const int64_t at = u * unit_stride;
    for (int64_t s = 0; s < kUnit; s += lanes, kk += lanes) {
      const VF xv0 = hn::LoadU(df, x0 + kk);
      const VF xv1 = MR > 1 ? hn::LoadU(df, x1 + kk) : xv0;
      const VF xv2 = MR > 2 ? hn::LoadU(df, x2 + kk) : xv0;
      const VF xv3 = MR > 3 ? hn::LoadU(df, x3 + kk) : xv0;
      XI_HWY_ROW(0, LoadW(df, w0 + at + s))
      XI_HWY_ROW(1, LoadW(df, w1 + at + s))
      XI_HWY_ROW(2, LoadW(df, w2 + at + s))
      XI_HWY_ROW(3, LoadW(df, w3 + at + s))
      XI_HWY_ROW(4, LoadW(df, w4 + at + s))
      XI_HWY_ROW(5, LoadW(df, w5 + at + s))
    }
  }
  XI_HWY_STORE_ROW6(0)
  XI_HWY_STORE_ROW6(1)
  XI_HWY_STORE_ROW6(2)
  XI_HWY_STORE_ROW6(3)
}

template <typename TW>
using TiledTileFn = void (*)(const float*, int64_t, const TW*, int64_t, int64_t, const float*,
                             float*, int64_t);
template <typename TW>
constexpr TiledTileFn<TW> kTiledTiles[4] = {TiledTile<1, TW>, TiledTile<kMr >= 2 ? 2 : 1, TW>,
                                            TiledTile<kMr >= 3 ? 3 : 1, TW>,
                                            TiledTile<kMr >= 4 ? 4 : 1, TW>};

template <typename TW>
void LinearTyped(const LinearTask& t, int64_t t0, int64_t t1, int64_t n0, int64_t n1) {
  const TW* w = static_cast<const TW*>(t.w);
  const int64_t row_bytes = t.k * static_cast<int64_t>(sizeof(TW));
  // Small batches (decode) stream each weight tile past all rows of x while it is in L1; larger
  // ones (prefill) keep a block of weight rows in L2 while every tile of x passes over it. Only
  // the loop order differs, never an element's arithmetic.
  const bool stream = (t1 - t0) * t.ldx * 4 <= (64 << 10);
  if (t.tiled) {
    // n0 is a group's first row (ColumnUnit) and blocks are whole groups, so every tile is one
    // group, of nr = its row count (shorter only for the matrix's last group).
    const int64_t block =
        stream ? kTileNr : std::max<int64_t>(kTileNr, (256 << 10) / row_bytes / kTileNr * kTileNr);
    ForEachTile<kMr, kTileNr>(
        t0, t1, n0, n1, block, [&](int64_t r, int64_t mr, int64_t n, int64_t nr) {
          kTiledTiles<TW>[mr - 1](t.x + r * t.ldx, t.ldx, w + n * t.k, t.k, nr,
                                  t.bias != nullptr ? t.bias + n : nullptr, t.out + r * t.ldo + n,
                                  t.ldo);
        });
    return;
  }
  const int64_t block = stream ? kNr : std::max<int64_t>(kNr, (256 << 10) / row_bytes / kNr * kNr);
  ForEachTile<kMr, kNr>(t0, t1, n0, n1, block, [&](int64_t r, int64_t mr, int64_t n, int64_t nr) {
    kTiles<TW>[mr - 1](t.x + r * t.ldx, t.ldx, w + n * t.k, t.k, nr,
                       t.bias != nullptr ? t.bias + n : nullptr, t.out + r * t.ldo + n, t.ldo,
                       stream || r == t0);
  });
}

// The F16 scale stored at p (a block header), converted to F32 in every lane by the target's
// vector instruction (F16C, NEON): exact, like every F16 -> F32 conversion. The scalar F16ToF32
// was 11 % of a Q4_0 decode, and assembling four scales in memory for one conversion stalled on
// store forwarding (30 % of the tile's samples).
HWY_INLINE VF F16Scale(const uint8_t* p) {
  const DF df;
  const hn::Rebind<uint16_t, DF> du16;
  const hn::Rebind<hwy::float16_t, DF> dh;
  uint16_t bits;
  std::memcpy(&bits, p, 2);
  return hn::PromoteTo(df, hn::BitCast(dh, hn::Set(du16, bits)));
}

// Bit i of a 32-bit word, for lane-wise bit tests (the 5th bits of Q5_0 and Q5_1).
alignas(64) constexpr int32_t kBit[32] = {
    1 << 0,  1 << 1,  1 << 2,  1 << 3,  1 << 4,  1 << 5,  1 << 6,  1 << 7,
    1 << 8,  1 << 9,  1 << 10, 1 << 11, 1 << 12, 1 << 13, 1 << 14, 1 << 15,
    1 << 16, 1 << 17, 1 << 18, 1 << 19, 1 << 20, 1 << 21, 1 << 22, 1 << 23,
    1 << 24, 1 << 25, 1 << 26, 1 << 27, 1 << 28, 1 << 29, 1 << 30, INT32_MIN};

// The descriptors the dequantizers use (empty types: no code).
struct DequantTags {
  DF df;
  hn::RebindToSigned<DF> di;
  hn::Rebind<int8_t, DF> d8;
  hn::Rebind<uint8_t, DF> du8;
};

// The 32-element block formats (quant.h), as laid out in a block of `bytes`: F16 d at 0, then an
// F16 min (Q4_1, Q5_1), the 5th bits qh (5-bit formats; bit i: element i) and the 16 bytes of
// nibbles at `q` (element i < 16 in the low nibble of byte i, 16 + i in its high one).
struct Block32 {
  int64_t bytes;
  bool min;  // x = d * q + m; otherwise x = d * (q - offset)
  int qh;    // offset of qh, < 0 for 4-bit codes
  int q;
};
constexpr Block32 Block32Layout(QuantType type) {
  switch (type) {
    case QuantType::kQ4_0:
      return {18, false, -1, 2};
    case QuantType::kQ5_0:
      return {22, false, 2, 6};
    case QuantType::kQ4_1:
      return {20, true, -1, 4};
    default:  // kQ5_1
      return {24, true, 4, 8};
  }
}

// A row of 32-element blocks (Q4_0, Q5_0, Q4_1, Q5_1; lanes <= 16), each value with the
// reference's operations in its order: d * (q - 8) or d * (q - 16), d * q + m. d * q is exact (an
// F16 d times a code of <= 5 bits), so an FMA the compiler may fuse d * q + m into rounds the same.
template <QuantType kType>
void DequantBlocks32(const uint8_t* HWY_RESTRICT src, int64_t cols, float* HWY_RESTRICT out) {
  constexpr Block32 kL = Block32Layout(kType);
  const DequantTags tags;
  const auto& [df, di, d8, du8] = tags;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  const auto mask = hn::Set(di, 15), sixteen = hn::Set(di, 16), zero = hn::Zero(di);
  const auto offset = hn::Set(di, kL.qh < 0 ? 8 : 16);
  for (int64_t b = 0; b < cols / 32; ++b) {
    const uint8_t* blk = src + b * kL.bytes;
    if ((b * kL.bytes & 63) < kL.bytes) __builtin_prefetch(blk + kQuantPrefetchBytes, 0, 3);
    const VF d = F16Scale(blk);
    const VF m = kL.min ? F16Scale(blk + 2) : d;
    int32_t qh = 0;
    if constexpr (kL.qh >= 0) std::memcpy(&qh, blk + kL.qh, 4);
    const auto vqh = hn::Set(di, qh);
    for (int64_t c = 0; c < 16; c += lanes) {
      const auto v = hn::PromoteTo(di, hn::LoadU(du8, blk + kL.q + c));
      auto lo = hn::And(v, mask), hi = hn::ShiftRight<4>(v);
      if constexpr (kL.qh >= 0) {
        // The 5th bits: lane i tests bit c + i (and 16 + c + i) of qh.
        const auto bit_lo = hn::And(vqh, hn::LoadU(di, kBit + c));
        const auto bit_hi = hn::And(vqh, hn::LoadU(di, kBit + 16 + c));
        lo = hn::Or(lo, hn::IfThenElseZero(hn::Ne(bit_lo, zero), sixteen));
        hi = hn::Or(hi, hn::IfThenElseZero(hn::Ne(bit_hi, zero), sixteen));
      }
      if constexpr (kL.min) {
        hn::StoreU(hn::Add(hn::Mul(d, hn::ConvertTo(df, lo)), m), df, out + b * 32 + c);
        hn::StoreU(hn::Add(hn::Mul(d, hn::ConvertTo(df, hi)), m), df, out + b * 32 + 16 + c);
      } else {
        hn::StoreU(hn::Mul(hn::ConvertTo(df, hn::Sub(lo, offset)), d), df, out + b * 32 + c);
        hn::StoreU(hn::Mul(hn::ConvertTo(df, hn::Sub(hi, offset)), d), df, out + b * 32 + 16 + c);
      }
    }
  }
}

// One Q4_K or Q5_K block (256 values, quant_blocks.cc): y = (d * sc) * q - dmin * m per sub-block
// of 32, the reference's operations in its order, so the values are DequantizeRow's (d * sc and
// (d * sc) * q are exact, so an FMA the compiler may fuse the product and the difference into
// rounds the same). Q5_K's 5th bits of chunk c (64 values) are bits 2c and 2c + 1 of qh[l].
template <bool kQ5>
void DequantK(const uint8_t* HWY_RESTRICT blk, float* HWY_RESTRICT y) {
  const DequantTags tags;
  const auto& [df, di, d8, du8] = tags;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  PrefetchRange(blk + kQuantPrefetchBytes, kQ5 ? 176 : 144);
  uint16_t bits[2];
  std::memcpy(bits, blk, 4);
  const float d = F16ToF32(bits[0]), dmin = F16ToF32(bits[1]);
  const uint8_t* qh = blk + 16;
  const uint8_t* q = blk + (kQ5 ? 48 : 16);
  const auto mask = hn::Set(di, 15), sixteen = hn::Set(di, 16);
  for (int c = 0; c < 4; ++c) {
    int sc0, m0, sc1, m1;
    ScaleMinK4(2 * c, blk + 4, &sc0, &m0);
    ScaleMinK4(2 * c + 1, blk + 4, &sc1, &m1);
    const VF d0 = hn::Set(df, d * sc0), dm0 = hn::Set(df, dmin * m0);
    const VF d1 = hn::Set(df, d * sc1), dm1 = hn::Set(df, dmin * m1);
    for (int64_t l = 0; l < 32; l += lanes) {
      const auto v = hn::PromoteTo(di, hn::LoadU(du8, q + 32 * c + l));
      auto lo = hn::And(v, mask), hi = hn::ShiftRight<4>(v);
      if constexpr (kQ5) {  // bit 2c (2c + 1) of qh[l], moved to bit 4
        const auto h = hn::ShiftLeft<4>(hn::PromoteTo(di, hn::LoadU(du8, qh + l)));
        lo = hn::Or(lo, hn::And(hn::ShiftRightSame(h, 2 * c), sixteen));
        hi = hn::Or(hi, hn::And(hn::ShiftRightSame(h, 2 * c + 1), sixteen));
      }
      hn::StoreU(hn::Sub(hn::Mul(d0, hn::ConvertTo(df, lo)), dm0), df, y + 64 * c + l);
      hn::StoreU(hn::Sub(hn::Mul(d1, hn::ConvertTo(df, hi)), dm1), df, y + 64 * c + 32 + l);
    }
  }
}

// One Q6_K block (256 values in two halves of 128): y = (d * sc) * (q - 32), as the reference.
void DequantQ6K(const uint8_t* HWY_RESTRICT blk, float* HWY_RESTRICT y) {
  const DequantTags tags;
  const auto& [df, di, d8, du8] = tags;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  PrefetchRange(blk + kQuantPrefetchBytes, 210);
  uint16_t bits;
  std::memcpy(&bits, blk + 208, 2);
  const float d = F16ToF32(bits);
  const auto mask = hn::Set(di, 15), three = hn::Set(di, 3), bias = hn::Set(di, 32);
  const uint8_t* ql = blk;
  const uint8_t* qh = blk + 128;
  const int8_t* sc = reinterpret_cast<const int8_t*>(blk + 192);
  for (int h = 0; h < 2; ++h, y += 128, ql += 64, qh += 32, sc += 8) {
    for (int64_t r = 0; r < 128; r += lanes) {  // lanes <= 16: one scale per chunk
      const auto low = r < 64 ? hn::And(hn::PromoteTo(di, hn::LoadU(du8, ql + r)), mask)
                              : hn::ShiftRight<4>(hn::PromoteTo(di, hn::LoadU(du8, ql + r - 64)));
      const auto high = hn::And(
          hn::ShiftRightSame(hn::PromoteTo(di, hn::LoadU(du8, qh + r % 32)), 2 * (r / 32)), three);
      const auto q = hn::Sub(hn::Or(low, hn::ShiftLeft<4>(high)), bias);
      hn::StoreU(hn::Mul(hn::Set(df, d * sc[r / 16]), hn::ConvertTo(df, q)), df, y + r);
    }
  }
}

// Row r of a quantized weight as F32 (w.cols floats), the same values DequantizeRow gives: every
// format with vectors, except on targets whose vectors are too wide for the format's block layout
// (more than 16 or 32 floats), which go through DequantizeRow.
void DequantRow(const QuantTensor& w, int64_t r, float* HWY_RESTRICT out) {
  const DequantTags tags;
  const auto& [df, di, d8, du8] = tags;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  const uint8_t* src = w.row(r);
  if (w.type == QuantType::kQ8_0 && lanes <= 32) {
    for (int64_t b = 0; b < w.cols / 32; ++b) {
      const uint8_t* blk = src + b * 34;
      if ((b * 34 & 63) < 34) __builtin_prefetch(blk + kQuantPrefetchBytes, 0, 3);
      const VF d = F16Scale(blk);
      const int8_t* q = reinterpret_cast<const int8_t*>(blk + 2);
      for (int64_t c = 0; c < 32; c += lanes)
        hn::StoreU(hn::Mul(hn::ConvertTo(df, hn::PromoteTo(di, hn::LoadU(d8, q + c))), d), df,
                   out + b * 32 + c);
    }
    return;
  }
  if (lanes <= 16) {  // half a 32-element block per vector at most
    switch (w.type) {
      case QuantType::kQ4_0:
        return DequantBlocks32<QuantType::kQ4_0>(src, w.cols, out);
      case QuantType::kQ5_0:
        return DequantBlocks32<QuantType::kQ5_0>(src, w.cols, out);
      case QuantType::kQ4_1:
        return DequantBlocks32<QuantType::kQ4_1>(src, w.cols, out);
      case QuantType::kQ5_1:
        return DequantBlocks32<QuantType::kQ5_1>(src, w.cols, out);
      default:
        break;
    }
  }
  if (w.type == QuantType::kAwq4 && w.group_size % (2 * lanes) == 0) {
    const int64_t gs = w.group_size, groups = w.cols / gs;
    const float* scales = w.scales.data<float>() + r * groups;
    const float* zeros = w.zeros.data<float>() + r * groups;
    const auto mask = hn::Set(di, 15);
    for (int64_t g = 0; g < groups; ++g) {
      const VF s = hn::Set(df, scales[g]), z = hn::Set(df, zeros[g]);
      const uint8_t* q = src + g * gs / 2;
      for (int64_t i = 0; i < gs / 2; i += lanes) {
        // Rows stream from DRAM: keep a linear prefetch kQuantPrefetchBytes ahead (the row is
        // read once; without it AWQ decode ran at half the speed, as the in-register tiles did).
        if (((q - src + i) & 63) < lanes) __builtin_prefetch(q + i + kQuantPrefetchBytes, 0, 3);
        const auto v = hn::PromoteTo(di, hn::LoadU(du8, q + i));
        const VF even = hn::Mul(hn::Sub(hn::ConvertTo(df, hn::And(v, mask)), z), s);
        const VF odd = hn::Mul(hn::Sub(hn::ConvertTo(df, hn::ShiftRight<4>(v)), z), s);
        hn::StoreInterleaved2(even, odd, df, out + g * gs + 2 * i);
      }
    }
    return;
  }
  if (w.type == QuantType::kQ4_K && lanes <= 32) {
    for (int64_t b = 0; b < w.cols / 256; ++b) DequantK<false>(src + b * 144, out + b * 256);
    return;
  }
  if (w.type == QuantType::kQ5_K && lanes <= 32) {
    for (int64_t b = 0; b < w.cols / 256; ++b) DequantK<true>(src + b * 176, out + b * 256);
    return;
  }
  if (w.type == QuantType::kQ6_K && lanes <= 16) {
    for (int64_t b = 0; b < w.cols / 256; ++b) DequantQ6K(src + b * 210, out + b * 256);
    return;
  }
  xinfer::DequantizeRow(w, r, out);
}

// Q8_0 / Q4_0 weight rows dequantized in registers, for decode-sized batches (no panel store and
// reload). Each weight vector holds exactly the values DequantRow writes, in the same k order
// (a Q4_0 block's low nibbles are its elements 0..15, the high ones 16..31), and meets x through
// the same MulAdd chain, SumOfLanes and bias as Tile<MR, float> on the panel: both paths give the
// same bits, so which one a call takes never changes a result.
template <int MR, bool kQ4>
HWY_NOINLINE void QuantTileInRegisters(const float* HWY_RESTRICT x, int64_t ldx,
                                       const uint8_t* HWY_RESTRICT w, int64_t row_bytes, int64_t k,
                                       int64_t nr, const float* HWY_RESTRICT bias,
                                       float* HWY_RESTRICT out, int64_t ldo) {
  const DequantTags tags;
  const auto& [df, di, d8, du8] = tags;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  constexpr int64_t kBlockBytes = kQ4 ? 18 : 34;
  XI_HWY_TILE_SETUP(uint8_t, row_bytes)
  const auto mask = hn::Set(di, 15), eight = hn::Set(di, 8);

  // Element e (a multiple of lanes) of the block at `blk`, times the block's scale d.
#define XI_HWY_DEQ(BLK, D)                                                                        \
  (kQ4 ? hn::Mul(hn::ConvertTo(                                                                   \
                     df, e < 16 ? hn::Sub(hn::And(hn::PromoteTo(di, hn::LoadU(du8, BLK + 2 + e)), \
                                                  mask),                                          \
                                          eight)                                                  \
                                : hn::Sub(hn::ShiftRight<4>(hn::PromoteTo(                        \
                                              di, hn::LoadU(du8, BLK + 2 + e - 16))),             \
                                          eight)),                                                \
                 D)                                                                               \
       : hn::Mul(hn::ConvertTo(                                                                   \
                     df, hn::PromoteTo(                                                           \
                             di, hn::LoadU(d8, reinterpret_cast<const int8_t*>(BLK + 2) + e))),   \
                 D))
  const int64_t pf_dist = PrefetchDistance<kNr>(row_bytes);
  for (int64_t b = 0; b < k / 32; ++b) {
    // One prefetch per 64-byte line of each row, one tile (>= 8 KiB) ahead.
    if ((b * kBlockBytes & 63) < kBlockBytes)
      PrefetchAhead<kNr>(w, pf_dist, row_bytes, b * kBlockBytes & ~int64_t{63});
    const uint8_t* b0 = w0 + b * kBlockBytes;
    const uint8_t* b1 = w1 + b * kBlockBytes;
    const uint8_t* b2 = w2 + b * kBlockBytes;
    const uint8_t* b3 = w3 + b * kBlockBytes;
    const VF d0 = F16Scale(b0), d1 = F16Scale(b1), d2 = F16Scale(b2), d3 = F16Scale(b3);
    for (int64_t e = 0; e < 32; e += lanes) {
      const int64_t kk = b * 32 + e;
      const VF xv0 = hn::LoadU(df, x0 + kk);
      const VF xv1 = MR > 1 ? hn::LoadU(df, x1 + kk) : xv0;
      const VF xv2 = MR > 2 ? hn::LoadU(df, x2 + kk) : xv0;
      const VF xv3 = MR > 3 ? hn::LoadU(df, x3 + kk) : xv0;
      XI_HWY_ROW(0, XI_HWY_DEQ(b0, d0))
      XI_HWY_ROW(1, XI_HWY_DEQ(b1, d1))
      XI_HWY_ROW(2, XI_HWY_DEQ(b2, d2))
      XI_HWY_ROW(3, XI_HWY_DEQ(b3, d3))
    }
  }
#undef XI_HWY_DEQ
  XI_HWY_STORE_ROW(0)
  XI_HWY_STORE_ROW(1)
  XI_HWY_STORE_ROW(2)
  XI_HWY_STORE_ROW(3)
}
#undef XI_HWY_ROW
#undef XI_HWY_STORE_ROW
#undef XI_HWY_STORE_ROW6
#undef XI_HWY_STORE
#undef XI_HWY_TILE_SETUP

using QuantTileFn = void (*)(const float*, int64_t, const uint8_t*, int64_t, int64_t, int64_t,
                             const float*, float*, int64_t);
template <bool kQ4>
constexpr QuantTileFn kQuantTiles[4] = {
    QuantTileInRegisters<1, kQ4>, QuantTileInRegisters<kMr >= 2 ? 2 : 1, kQ4>,
    QuantTileInRegisters<kMr >= 3 ? 3 : 1, kQ4>, QuantTileInRegisters<kMr >= 4 ? 4 : 1, kQ4>};

}  // namespace

void Linear(const LinearTask& t, int64_t t0, int64_t t1, int64_t n0, int64_t n1) {
  switch (t.wdtype) {
    case DType::kF32:
      return LinearTyped<float>(t, t0, t1, n0, n1);
    case DType::kBF16:
      return LinearTyped<hwy::bfloat16_t>(t, t0, t1, n0, n1);
    default:
      return LinearTyped<hwy::float16_t>(t, t0, t1, n0, n1);
  }
}

void QuantLinear(const QuantLinearTask& t, int64_t t0, int64_t t1, int64_t n0, int64_t n1,
                 float* panel, int64_t panel_rows) {
  const int64_t k = t.w->cols;
  const QuantType type = t.w->type;
  // Up to one tile of x rows (decode): Q8_0 and Q4_0 dequantize in registers, same bits.
  if ((type == QuantType::kQ8_0 || type == QuantType::kQ4_0) && t1 - t0 <= kMr &&
      hn::Lanes(DF()) <= 16) {
    const QuantTileFn* tiles = type == QuantType::kQ4_0 ? kQuantTiles<true> : kQuantTiles<false>;
    const int64_t row_bytes = static_cast<int64_t>(t.w->row_bytes());
    const uint8_t* w = t.w->row(0);
    ForEachTile<kMr, kNr>(t0, t1, n0, n1, kNr, [&](int64_t r, int64_t mr, int64_t n, int64_t nr) {
      tiles[mr - 1](t.x + r * t.ldx, t.ldx, w + n * row_bytes, row_bytes, k, nr,
                    t.bias != nullptr ? t.bias + n : nullptr, t.out + r * t.ldo + n, t.ldo);
    });
    return;
  }
  for (int64_t bs = n0; bs < n1; bs += panel_rows) {
    const int64_t be = std::min(n1, bs + panel_rows);
    for (int64_t r = bs; r < be; ++r) DequantRow(*t.w, r, panel + (r - bs) * k);
    LinearTask dense;
    dense.x = t.x;
    dense.ldx = t.ldx;
    dense.w = panel;
    dense.wdtype = DType::kF32;
    dense.k = k;
    dense.bias = t.bias != nullptr ? t.bias + bs : nullptr;
    dense.out = t.out + bs;
    dense.ldo = t.ldo;
    LinearTyped<float>(dense, t0, t1, 0, be - bs);
  }
}

// Whether the row-tiled kernel can take weights of this dtype: a 64-byte unit must be a whole
// number of vectors (every fixed-width target; SVE only up to 512 bits).
bool RowTilesFit(int64_t dtype_bytes) {
  const int64_t unit = kTileUnitBytes / dtype_bytes;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(DF()));
  return unit >= lanes && unit % lanes == 0;
}

}  // namespace HWY_NAMESPACE
}  // namespace xinfer::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace xinfer::cpu::simd {

HWY_EXPORT(Linear);
HWY_EXPORT(QuantLinear);
HWY_EXPORT(RowTilesFit);

bool RowTilesFit(int64_t dtype_bytes) { return HWY_DYNAMIC_DISPATCH(RowTilesFit)(dtype_bytes); }
void Linear(const LinearTask& task, int64_t t0, int64_t t1, int64_t n0, int64_t n1) {
  HWY_DYNAMIC_DISPATCH(Linear)(task, t0, t1, n0, n1);
}
int64_t QuantPanelRows(int64_t x_rows, int64_t k) {
  // Decode-sized x: 4 rows at a time, dequantized into L1 and met by all rows of x at once;
  // otherwise an L2-sized panel that every tile of x passes over.
  if (x_rows * k * 4 <= (64 << 10)) return 4;
  return std::max<int64_t>(4, (256 << 10) / (k * 4) / 4 * 4);
}
void QuantLinear(const QuantLinearTask& task, int64_t t0, int64_t t1, int64_t n0, int64_t n1,
                 float* panel, int64_t panel_rows) {
  HWY_DYNAMIC_DISPATCH(QuantLinear)(task, t0, t1, n0, n1, panel, panel_rows);
}

}  // namespace xinfer::cpu::simd
#endif  // HWY_ONCE
