// Test helper: random quantized weights made with the plain reference quantizers.
#pragma once

#include <random>
#include <vector>

#include "backend/backend.h"
#include "tensor/quant.h"
#include "tensor/quant_blocks.h"

namespace xinfer {

// A [rows, cols] weight of `type` quantized from N(0, 1) values; `dequantized` (optional)
// receives what the engine should see (DequantizeRow of every row). AWQ4 uses `group_size`.
// Generated row by row, so lm_head-sized weights need no full-precision copy.
inline QuantTensor MakeQuant(Backend& be, QuantType type, int64_t rows, int64_t cols, uint32_t seed,
                             std::vector<float>* dequantized, int64_t group_size = 32) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist;
  std::vector<float> w(cols);
  QuantTensor q;
  q.type = type;
  q.rows = rows;
  q.cols = cols;
  const int64_t groups = type == QuantType::kAwq4 ? cols / group_size : 0;
  if (type == QuantType::kAwq4) {
    q.group_size = group_size;
    q.data = be.NewTensor(DType::kU8, {rows, cols / 2});
    q.scales = be.NewTensor(DType::kF32, {rows, groups});
    q.zeros = be.NewTensor(DType::kF32, {rows, groups});
  } else {
    q.data = be.NewTensor(DType::kU8, {rows, cols / QuantBlockElems(type) * QuantBlockBytes(type)});
  }
  std::vector<uint8_t> nib(type == QuantType::kAwq4 ? group_size : 0);
  for (int64_t r = 0; r < rows; ++r) {
    for (auto& v : w) v = dist(rng);
    uint8_t* dst = const_cast<uint8_t*>(q.row(r));
    if (type != QuantType::kAwq4) {
      QuantizeBlocksRef(type, w.data(), cols, dst);
      continue;
    }
    for (int64_t g = 0; g < groups; ++g) {
      AwqGroup ag = QuantizeAwqGroupRef(&w[g * group_size], group_size, nib.data());
      q.scales.data<float>()[r * groups + g] = F16ToF32(ag.scale_f16);
      q.zeros.data<float>()[r * groups + g] = ag.zero;
      for (int64_t i = 0; i < group_size / 2; ++i)
        dst[g * group_size / 2 + i] = static_cast<uint8_t>(nib[2 * i] | (nib[2 * i + 1] << 4));
    }
  }
  if (dequantized != nullptr) {
    dequantized->resize(rows * cols);
    for (int64_t r = 0; r < rows; ++r) DequantizeRow(q, r, dequantized->data() + r * cols);
  }
  return q;
}

// A copy of the row-major weight `w` as CpuBackend::PlaceWeights stores it for the AVX2 int8
// broadcast-x kernel (tensor.h): AWQ's codes, scales and zero points in kDwordTiles, Q4_0's
// blocks in kQ4_0Tiles.
inline QuantTensor PanelTiledCopy(Backend& be, const QuantTensor& w) {
  QuantTensor tiled = w;
  const Layout layout = w.type == QuantType::kAwq4 ? Layout::kDwordTiles : Layout::kQ4_0Tiles;
  for (Tensor* part : {&tiled.data, &tiled.scales, &tiled.zeros}) {
    if (part->empty()) continue;
    Tensor packed = be.NewTensor(part->dtype(), part->shape());
    PackRowTiles(layout, static_cast<const uint8_t*>(part->raw()),
                 static_cast<uint8_t*>(packed.raw()), part->dim(0), RowBytes(*part), 0,
                 (part->dim(0) + kDwordTileRows - 1) / kDwordTileRows);
    *part = Tensor(packed.buffer(), 0, part->dtype(), part->shape(), layout);
  }
  return tiled;
}

}  // namespace xinfer
