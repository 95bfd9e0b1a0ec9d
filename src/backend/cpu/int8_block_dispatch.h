// What the block-order int8 kernels (cpu_kernels_int8_avx2.cc, cpu_kernels_int8_neon.cc) share:
// the GGUF formats they take, and the path from a QuantLinearTask to their 4 x 4 tiles. Plain C++;
// include it after the file's `#pragma GCC target(...)` so the instantiations get that ISA.
#pragma once

#include <cstdint>

#include "backend/cpu/cpu_kernels.h"

namespace xinfer::cpu::int8_block {

// The formats (and K) the block kernels take: the legacy block formats and the K-quants.
inline bool Supports(const QuantTensor& w) {
  switch (w.type) {
    case QuantType::kQ4_0:
    case QuantType::kQ5_0:
    case QuantType::kQ4_1:
    case QuantType::kQ5_1:
    case QuantType::kQ8_0:
      return w.cols % 32 == 0;
    case QuantType::kQ4_K:
    case QuantType::kQ5_K:
    case QuantType::kQ6_K:
      return w.cols % 256 == 0;
    default:
      return false;
  }
}

// Tiles<QT>::Run<MR, NR>(task, weight bytes, row bytes, first row of x, first weight row): an
// ISA's tile of MR rows of x by NR weight rows.
using TileFn = void (*)(const QuantLinearTask&, const uint8_t*, int64_t, int64_t, int64_t);
constexpr int kMr = 4;
constexpr int kNr = 4;
template <template <QuantType> class Tiles, QuantType QT, int MR>
constexpr TileFn kRow[kNr] = {&Tiles<QT>::template Run<MR, 1>, &Tiles<QT>::template Run<MR, 2>,
                              &Tiles<QT>::template Run<MR, 3>, &Tiles<QT>::template Run<MR, 4>};
template <template <QuantType> class Tiles, QuantType QT>
constexpr const TileFn* kTiles[kMr] = {kRow<Tiles, QT, 1>, kRow<Tiles, QT, 2>, kRow<Tiles, QT, 3>,
                                       kRow<Tiles, QT, 4>};

template <template <QuantType> class Tiles, QuantType QT>
void LinearOf(const QuantLinearTask& t, int64_t t0, int64_t t1, int64_t n0, int64_t n1) {
  const uint8_t* q = static_cast<const uint8_t*>(t.w->data.raw());
  const int64_t row_bytes = static_cast<int64_t>(t.w->row_bytes());
  // Weight rows in blocks that stay in L2 while every row of x passes over them.
  int64_t nb = (256 << 10) / row_bytes / kNr * kNr;
  if (nb < kNr) nb = kNr;
  ForEachTile<kMr, kNr>(t0, t1, n0, n1, nb, [&](int64_t r, int64_t mr, int64_t n, int64_t nr) {
    kTiles<Tiles, QT>[mr - 1][nr - 1](t, q, row_bytes, r, n);
  });
}

// QuantLinearInt8 over rows [t0, t1) of x and weight rows [n0, n1), for a weight Supports takes.
template <template <QuantType> class Tiles>
void Linear(const QuantLinearTask& t, int64_t t0, int64_t t1, int64_t n0, int64_t n1) {
  switch (t.w->type) {
    case QuantType::kQ4_0:
      return LinearOf<Tiles, QuantType::kQ4_0>(t, t0, t1, n0, n1);
    case QuantType::kQ5_0:
      return LinearOf<Tiles, QuantType::kQ5_0>(t, t0, t1, n0, n1);
    case QuantType::kQ4_1:
      return LinearOf<Tiles, QuantType::kQ4_1>(t, t0, t1, n0, n1);
    case QuantType::kQ5_1:
      return LinearOf<Tiles, QuantType::kQ5_1>(t, t0, t1, n0, n1);
    case QuantType::kQ4_K:
      return LinearOf<Tiles, QuantType::kQ4_K>(t, t0, t1, n0, n1);
    case QuantType::kQ5_K:
      return LinearOf<Tiles, QuantType::kQ5_K>(t, t0, t1, n0, n1);
    case QuantType::kQ6_K:
      return LinearOf<Tiles, QuantType::kQ6_K>(t, t0, t1, n0, n1);
    default:
      return LinearOf<Tiles, QuantType::kQ8_0>(t, t0, t1, n0, n1);
  }
}

}  // namespace xinfer::cpu::int8_block
