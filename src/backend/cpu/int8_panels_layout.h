// Where the broadcast-x kernels (int8 activations: cpu_kernels_int8_panels_avx2.cc, _avx512.cc;
// AWQ with F32 activations: cpu_kernels_w4a16_panels_avx2.cc, _avx512.cc) find the pieces of a
// weight that CpuBackend placed for them (tensor.h): AWQ g128's codes, scales and zero points in
// kDwordTiles, GGUF Q4_0's blocks in kQ4_0Tiles, 16-row tiles either way. The kernels of one kind
// read the same bytes and give the same bits; this is the one description of where (and the
// prefetch of the next call's rows they share). ISA-neutral, no vector code.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "base/check.h"
#include "tensor/quant.h"
#include "tensor/tensor.h"

namespace xinfer::cpu::int8_panels {

constexpr int64_t kGroup = 128;                // the AWQ group size the panels take
constexpr int64_t kGroupBlocks = kGroup / 32;  // x's blocks of 32 per AWQ group
constexpr int64_t kTileRows = kDwordTileRows;  // rows per tile

inline Layout LayoutOf(QuantType type) {
  return type == QuantType::kAwq4 ? Layout::kDwordTiles : Layout::kQ4_0Tiles;
}

// Checks that `w` lies in these layouts (an invariant: only QuantLayoutFor places weights so).
inline void CheckPlaced(const QuantTensor& w) {
  XI_CHECK(w.data.layout() == LayoutOf(w.type));
  if (w.type == QuantType::kAwq4) {
    XI_CHECK(w.group_size == kGroup && w.scales.layout() == Layout::kDwordTiles &&
             w.zeros.layout() == Layout::kDwordTiles);
  } else {
    XI_CHECK(w.type == QuantType::kQ4_0);
  }
}

// Tile j of w: rows 16j.. (16, or fewer in the weight's last one: `lanes`).
struct Tile {
  const uint8_t* base;  // the tile's first byte (its first row in row-major order)
  const float* s;       // AWQ: the tile's scales and zero points of group 0 (group g: + g * lanes)
  const float* z;
  int64_t lanes;
};

inline Tile TileOf(const QuantTensor& w, int64_t j) {
  const int64_t first = j * kTileRows;
  Tile tile{static_cast<const uint8_t*>(w.data.raw()) + first * static_cast<int64_t>(w.row_bytes()),
            nullptr, nullptr, std::min(kTileRows, w.rows - first)};
  if (w.type == QuantType::kAwq4) {
    const int64_t at = first * (w.cols / kGroup);
    tile.s = w.scales.data<float>() + at;
    tile.z = w.zeros.data<float>() + at;
  }
  return tile;
}

// Half-panel h: weight rows 8h..8h+7 (8 lanes of an AVX2 vector), half `part` of the 16-row tile
// they lie in.
struct Half {
  Tile tile;
  int64_t part;  // 0: the tile's first 8 rows, 1: the others
  int rows;      // rows of this half (8, or fewer at the end)
};

inline Half HalfOf(const QuantTensor& w, int64_t h) {
  const Tile tile = TileOf(w, h / 2);
  const int64_t part = h % 2;
  return {tile, part, static_cast<int>(std::min<int64_t>(8, tile.lanes - part * 8))};
}

// Block kb (32 weights) of a tile: dword c (0..3) of each of its rows at units + (c x lanes + row)
// x 4 bytes. AWQ: the block's group's scales and zero points, one F32 per row side by side. Q4_0:
// the block's F16 scales, one per row side by side (the block's first 2 x lanes bytes).
struct AwqBlock {
  const uint8_t* units;
  const float* scale;
  const float* zero;
};
inline AwqBlock AwqBlockOf(const Tile& tile, int64_t kb) {
  const int64_t g = kb / 4;
  return {tile.base + kb * 16 * tile.lanes, tile.s + g * tile.lanes, tile.z + g * tile.lanes};
}
struct Q4_0Block {
  const uint8_t* units;
  const uint8_t* scale;
};
inline Q4_0Block Q4_0BlockOf(const Tile& tile, int64_t kb) {
  const uint8_t* block = tile.base + kb * 18 * tile.lanes;
  return {block + 2 * tile.lanes, block};
}

// Sweeps `rows` weight rows starting at `first` (the range the next kernel call reads: tiles and
// half-panels lie in row order) into L2 a block's share at a time, so that they arrive while this
// call computes.
class NextRowsPrefetch {
 public:
  NextRowsPrefetch(const QuantTensor& w, const uint8_t* first, int64_t rows)
      : from_(first), step_(rows * static_cast<int64_t>(w.row_bytes()) / (w.cols / 32)) {}
  // Block kb (of 32 weights per row) is about to be read.
  void Block(int64_t kb) const {
    for (int64_t o = 0; o < step_; o += 64) __builtin_prefetch(from_ + kb * step_ + o, 0, 2);
  }

 private:
  const uint8_t* from_;
  int64_t step_;
};

// AWQ with int8 x: the zero point's term of x over group g, X_g = the sum over the group's 4
// blocks b of d_b x (block b's int8 sum), from a row of x's aux (per block: d, then the int8
// sum), in this order and with these roundings (std::fma is exactly rounded whatever the target).
// avx2::Int8PrepareX stores X_g after the row's block pairs, at AwqGroupXTermAt(k) + g, once per
// call; every AWQ int8 panel kernel reads it there.
inline float AwqGroupXTerm(const float* aux, int64_t g) {
  const float* a = aux + 2 * kGroupBlocks * g;
  float sum = a[0] * a[1];
  for (int64_t b = 1; b < kGroupBlocks; ++b) sum = std::fma(a[2 * b], a[2 * b + 1], sum);
  return sum;
}
inline constexpr int64_t AwqGroupXTermAt(int64_t k) { return 2 * (k / 32); }

// x bytes (avx2::Int8PrepareX's kAwqPanels / kQ4_0Panels layouts) that the low and high nibbles
// of dword c meet within a block of 32.
struct AwqX {
  static constexpr int64_t kLow(int c) { return 8 * c; }
  static constexpr int64_t kHigh(int c) { return 8 * c + 4; }
};
struct Q4_0X {
  static constexpr int64_t kLow(int c) { return 4 * c; }
  static constexpr int64_t kHigh(int c) { return 16 + 4 * c; }
};

}  // namespace xinfer::cpu::int8_panels
