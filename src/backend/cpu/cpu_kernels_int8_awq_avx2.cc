// AWQ g128 weights meeting int8 activations on AVX2 CPUs without AVX512-VNNI (Hygon C86, Zen 1-3,
// Intel before Ice Lake), broadcast-x form: the codes, scales and zero points kept in dword tiles
// (tensor.h: 16 rows' dwords side by side, stored so at load by CpuBackend::PlaceWeights), one
// output row per 32-bit lane, x broadcast. Without it AWQ runs Highway's dequantize-to-a-panel
// path with F32 activations on these CPUs.
//
// Why broadcast x: a row-major int8 kernel gives each vpmaddubsw 32 weights of one row, and needs
// a horizontal sum per row and F32 work per block of 32 and row. Here one vpmaddubsw multiplies
// 4 nibbles of each of 8 rows with 4 x values broadcast to every lane; the codes are unsigned
// (0..15), so no sign trick, and the 16-bit pair sums of a block's 8 vpmaddubsw (32 products per
// row, |sum| <= 32 x 15 x 127 = 60960 over two 16-bit lanes, <= 30480 in each) add up in 16 bits
// without saturating; one vpmaddwd per block and 8 rows makes them int32. The x block scale, the
// group scale and the zero point then apply to 8 rows per instruction.
//
// x (Int8PrepareX with awq_order): blocks of 32 quantized as for the GGUF formats (d = max|x| /
// 127, q = round-to-nearest-even(x / d), aux per block: d and the block's int8 sum), each
// 8-element chunk stored as its even elements, then its odd ones. Dword c of a row's group holds
// elements 8c..8c+7 as nibbles, element 8c + 2j in byte j's low nibble and 8c + 2j + 1 in its high
// one: the low nibbles meet x bytes 8c..8c+3 and the high ones 8c+4..8c+7 — the weights are used
// as stored.
//
// Per output element, group g and block b: isum_b = the exact integer dot of the codes with x,
// dot = float(isum_b) - z_g x (the block's int8 sum) — exact, both are integers below 2^17, so
// the zero point costs no precision however large x's sum — and acc = fma(dot, s_g x d_b, acc);
// out = acc + bias. That sequence depends on K only, not on the tile, the rows of x in the call or
// the threads (batch invariance).
#if defined(__x86_64__)  // x86 only; cpu_kernels_avx512_absent.cc elsewhere

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "backend/cpu/cpu_kernels.h"

#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,bmi2")

namespace xinfer::cpu::avx2 {
namespace {

constexpr int64_t kGroup = 128;
constexpr int64_t kPanelRows = kDwordTileRows;  // 16 rows per tile; a register holds half of it

inline __m256i Broadcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

// Where half-panel h (weight rows 8h..8h+7, of the dword tile 16 rows wide) lies.
struct Half {
  const uint8_t* q;  // its dwords of unit 0: unit u at q + u * 4 * lanes
  const float* s;    // its scales of group 0: group g at s + g * lanes
  const float* z;
  int64_t lanes;  // rows of its dword tile (16, or fewer in the weight's last one)
  int rows;       // rows of it (8, or fewer at the end)
};

inline Half HalfOf(const QuantTensor& w, int64_t h) {
  const int64_t panel = h / 2, part = h % 2, first = panel * kPanelRows;
  const int64_t lanes = std::min(kPanelRows, w.rows - first);
  const int64_t groups = w.cols / kGroup;
  return {static_cast<const uint8_t*>(w.data.raw()) + first * (w.cols / 2) + part * 32,
          w.scales.data<float>() + first * groups + part * 8,
          w.zeros.data<float>() + first * groups + part * 8, lanes,
          static_cast<int>(std::min<int64_t>(8, lanes - part * 8))};
}

inline __m256i RowMask(int rows) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(rows), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// MR rows of x (r0..) times NH half-panels (h0..). kFull: the halves lie in whole 16-row tiles
// (every stride a constant); otherwise one half of the weight's short last tile, masked to its
// rows.
template <int MR, int NH, bool kFull>
void AwqTile(const QuantLinearTask& t, int64_t r0, int64_t h0) {
  const QuantTensor& w = *t.w;
  const int64_t groups = w.cols / kGroup;
  const Half first = HalfOf(w, h0);
  const int64_t lanes = kFull ? kPanelRows : first.lanes;
  const int64_t unit_bytes = 4 * lanes;  // one unit (dword column) of a tile
  const __m256i mask = RowMask(kFull ? 8 : first.rows);
  const uint8_t* q[NH];
  const float* sc[NH];
  const float* zp[NH];
#pragma GCC unroll 4
  for (int h = 0; h < NH; ++h) {
    const Half half = h == 0 ? first : HalfOf(w, h0 + h);
    q[h] = half.q;
    sc[h] = half.s;
    zp[h] = half.z;
  }
  const int8_t* xq[MR];
  const float* aux[MR];
#pragma GCC unroll 4
  for (int i = 0; i < MR; ++i) {
    xq[i] = t.xq + (r0 + i) * t.ldxq;
    aux[i] = t.xaux + (r0 + i) * t.ldxaux;
  }
  __m256 acc[MR][NH];
#pragma GCC unroll 4
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int h = 0; h < NH; ++h) acc[i][h] = _mm256_setzero_ps();
  const __m256i low4 = _mm256_set1_epi8(0x0F), ones = _mm256_set1_epi16(1);
  // The tile's rows are one contiguous range (half-panels lie in row order); sweep the next
  // tile's range a group's share at a time, one tile ahead.
  const int64_t tile_bytes = NH * 8 * (w.cols / 2);
  const uint8_t* prefetch_from =
      static_cast<const uint8_t*>(w.data.raw()) + h0 * 8 * (w.cols / 2) + tile_bytes;
  const int64_t prefetch_step = tile_bytes / groups;
  for (int64_t g = 0; g < groups; ++g) {
    for (int64_t o = 0; o < prefetch_step; o += 64)
      __builtin_prefetch(prefetch_from + g * prefetch_step + o, 0, 2);
#pragma GCC unroll 4
    for (int b = 0; b < 4; ++b) {
      __m256i isum[MR][NH];
#pragma GCC unroll 4
      for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
        for (int h = 0; h < NH; ++h) isum[i][h] = _mm256_setzero_si256();
#pragma GCC unroll 4
      for (int cc = 0; cc < 4; ++cc) {
        const int64_t c = 16 * g + 4 * b + cc;  // unit of the row
#pragma GCC unroll 4
        for (int h = 0; h < NH; ++h) {
          const auto* unit = reinterpret_cast<const int*>(q[h] + c * unit_bytes);
          const __m256i v = kFull ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(unit))
                                  : _mm256_maskload_epi32(unit, mask);
          const __m256i lo = _mm256_and_si256(v, low4);
          const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), low4);
#pragma GCC unroll 4
          for (int i = 0; i < MR; ++i) {
            const int8_t* xc = xq[i] + 8 * c;
            isum[i][h] = _mm256_add_epi16(
                isum[i][h], _mm256_add_epi16(_mm256_maddubs_epi16(lo, Broadcast4(xc)),
                                             _mm256_maddubs_epi16(hi, Broadcast4(xc + 4))));
            // Keeps GCC from reassociating the 16-bit sums into a tree of pending products,
            // which spilled most of them (the sums are exact in any order).
            __asm__("" : "+x"(isum[i][h]));
          }
        }
      }
#pragma GCC unroll 4
      for (int i = 0; i < MR; ++i) {
        const float* a = aux[i] + 2 * (4 * g + b);  // the block's d and int8 sum
        const __m256 d = _mm256_set1_ps(a[0]), x_sum = _mm256_set1_ps(a[1]);
#pragma GCC unroll 4
        for (int h = 0; h < NH; ++h) {
          const __m256 s = kFull ? _mm256_loadu_ps(sc[h] + g * lanes)
                                 : _mm256_maskload_ps(sc[h] + g * lanes, mask);
          const __m256 z = kFull ? _mm256_loadu_ps(zp[h] + g * lanes)
                                 : _mm256_maskload_ps(zp[h] + g * lanes, mask);
          // isum - z x sum: integers below 2^17, exact in F32.
          const __m256 dot =
              _mm256_fnmadd_ps(z, x_sum, _mm256_cvtepi32_ps(_mm256_madd_epi16(isum[i][h], ones)));
          acc[i][h] = _mm256_fmadd_ps(dot, _mm256_mul_ps(s, d), acc[i][h]);
        }
      }
    }
  }
#pragma GCC unroll 4
  for (int h = 0; h < NH; ++h) {
    const int64_t n = (h0 + h) * 8;
    const __m256 bias = t.bias == nullptr ? _mm256_setzero_ps()
                        : kFull           ? _mm256_loadu_ps(t.bias + n)
                                          : _mm256_maskload_ps(t.bias + n, mask);
#pragma GCC unroll 4
    for (int i = 0; i < MR; ++i) {
      float* out = t.out + (r0 + i) * t.ldo + n;
      const __m256 v = _mm256_add_ps(acc[i][h], bias);
      if (kFull) {
        _mm256_storeu_ps(out, v);
      } else {
        _mm256_maskstore_ps(out, mask, v);
      }
    }
  }
}

using AwqTileFn = void (*)(const QuantLinearTask&, int64_t, int64_t);
// Up to 4 rows of x on one half-panel (each unpacked weight register serves every row; the x
// broadcasts are used at once, so 16 registers hold it), or one row on four half-panels (four
// accumulator chains).
constexpr int kMr = 4;
constexpr AwqTileFn kRowTiles[kMr] = {AwqTile<1, 1, true>, AwqTile<2, 1, true>, AwqTile<3, 1, true>,
                                      AwqTile<4, 1, true>};
constexpr AwqTileFn kGemvTiles[4] = {AwqTile<1, 1, true>, AwqTile<1, 2, true>, AwqTile<1, 3, true>,
                                     AwqTile<1, 4, true>};
constexpr AwqTileFn kShortTiles[kMr] = {AwqTile<1, 1, false>, AwqTile<2, 1, false>,
                                        AwqTile<3, 1, false>, AwqTile<4, 1, false>};

}  // namespace

bool Int8AwqPanelsSupports(const QuantTensor& w, const CpuFeatures& f) {
  return f.avx2 && w.type == QuantType::kAwq4 && w.group_size == kGroup && w.cols % kGroup == 0;
}

void QuantLinearInt8AwqPanels(const QuantLinearTask& t, int64_t t0, int64_t t1, int64_t n0,
                              int64_t n1) {
  const QuantTensor& w = *t.w;
  XI_CHECK(w.type == QuantType::kAwq4 && w.group_size == kGroup &&
           w.data.layout() == Layout::kDwordTiles && w.scales.layout() == Layout::kDwordTiles &&
           w.zeros.layout() == Layout::kDwordTiles);
  XI_CHECK_MSG(n0 % kPanelRows == 0 && (n1 % kPanelRows == 0 || n1 == w.rows),
               "an AWQ panel range must start and end at 16-row panels");
  // Half-panels [h_begin, h_full) lie in whole 16-row tiles; those of the weight's short last
  // tile (fewer than 16 rows) go masked, one at a time.
  const int64_t h_begin = n0 / 8, h_full = std::min(n1, w.rows / kPanelRows * kPanelRows) / 8;
  // Blocks of weight rows that stay in L2 while every row of x passes over them.
  const int64_t block = std::max<int64_t>(4, (256 << 10) / (8 * w.cols / 2) / 4 * 4);
  for (int64_t bs = h_begin; bs < h_full; bs += block) {
    const int64_t be = std::min(h_full, bs + block);
    if (t1 - t0 == 1) {
      for (int64_t h = bs; h < be; h += 4) kGemvTiles[std::min<int64_t>(4, be - h) - 1](t, t0, h);
      continue;
    }
    for (int64_t r = t0; r < t1; r += kMr) {
      const AwqTileFn tile = kRowTiles[std::min<int64_t>(kMr, t1 - r) - 1];
      for (int64_t h = bs; h < be; ++h) tile(t, r, h);
    }
  }
  for (int64_t h = std::max(h_begin, h_full); h * 8 < n1; ++h)
    for (int64_t r = t0; r < t1; r += kMr) kShortTiles[std::min<int64_t>(kMr, t1 - r) - 1](t, r, h);
}

}  // namespace xinfer::cpu::avx2

#pragma GCC pop_options

#endif  // defined(__x86_64__)
