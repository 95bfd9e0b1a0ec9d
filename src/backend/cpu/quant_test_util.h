// Test helper: random quantized weights made with the plain reference quantizers.
#pragma once

#include <random>
#include <vector>

#include "backend/backend.h"
#include "tensor/quant.h"
#include "tensor/quant_blocks.h"

namespace xinfer {

// A [rows, cols] weight of `type` quantized from N(0, 1) values; `dequantized` receives what the
// engine should see (DequantizeRow of every row). AWQ4 uses `group_size`.
inline QuantTensor MakeQuant(Backend& be, QuantType type, int64_t rows, int64_t cols, uint32_t seed,
                             std::vector<float>* dequantized, int64_t group_size = 32) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist;
  std::vector<float> w(rows * cols);
  for (auto& v : w) v = dist(rng);
  QuantTensor q;
  q.type = type;
  q.rows = rows;
  q.cols = cols;
  if (type == QuantType::kAwq4) {
    q.group_size = group_size;
    const int64_t groups = cols / group_size;
    q.data = be.NewTensor(DType::kU8, {rows, cols / 2});
    q.scales = be.NewTensor(DType::kF32, {rows, groups});
    q.zeros = be.NewTensor(DType::kF32, {rows, groups});
    std::vector<uint8_t> nib(group_size);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t g = 0; g < groups; ++g) {
        AwqGroup ag = QuantizeAwqGroupRef(&w[r * cols + g * group_size], group_size, nib.data());
        q.scales.data<float>()[r * groups + g] = F16ToF32(ag.scale_f16);
        q.zeros.data<float>()[r * groups + g] = ag.zero;
        for (int64_t i = 0; i < group_size / 2; ++i)
          q.data.data<uint8_t>()[r * cols / 2 + g * group_size / 2 + i] =
              static_cast<uint8_t>(nib[2 * i] | (nib[2 * i + 1] << 4));
      }
  } else {
    const int64_t rb = cols / QuantBlockElems(type) * QuantBlockBytes(type);
    q.data = be.NewTensor(DType::kU8, {rows, rb});
    for (int64_t r = 0; r < rows; ++r)
      QuantizeBlocksRef(type, &w[r * cols], cols, q.data.data<uint8_t>() + r * rb);
  }
  dequantized->resize(rows * cols);
  for (int64_t r = 0; r < rows; ++r) DequantizeRow(q, r, dequantized->data() + r * cols);
  return q;
}

}  // namespace xinfer
