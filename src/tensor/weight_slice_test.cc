// Weight::Rows / Columns (the shards of tensor parallelism): every element of a slice is the
// element of the whole weight it stands for, in every dense dtype and quantized format, and row
// slices share the whole weight's storage.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "tensor/quant.h"
#include "tensor/quant_blocks.h"

namespace xinfer {
namespace {

std::vector<float> Dequantized(const Weight& w) {
  std::vector<float> out(w.rows() * w.cols());
  for (int64_t r = 0; r < w.rows(); ++r) {
    if (w.quantized()) {
      DequantizeRow(w.quant(), r, out.data() + r * w.cols());
      continue;
    }
    const Tensor& t = w.dense();
    for (int64_t c = 0; c < w.cols(); ++c) {
      const int64_t i = r * w.cols() + c;
      out[i] = t.dtype() == DType::kF32    ? t.data<float>()[i]
               : t.dtype() == DType::kBF16 ? Bf16ToF32(t.data<uint16_t>()[i])
                                           : F16ToF32(t.data<uint16_t>()[i]);
    }
  }
  return out;
}

// Checks w.Rows(r0, r1).Columns(c0, c1) against the same elements of w.
void ExpectSliceOf(const Weight& w, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  const Weight rows = w.Rows(r0, r1);
  EXPECT_TRUE(r0 != 0 || rows.SameStorage(w));
  const Weight slice = rows.Columns(c0, c1);
  ASSERT_EQ(slice.rows(), r1 - r0);
  ASSERT_EQ(slice.cols(), c1 - c0);
  const std::vector<float> whole = Dequantized(w), part = Dequantized(slice);
  for (int64_t r = r0; r < r1; ++r)
    for (int64_t c = c0; c < c1; ++c)
      ASSERT_EQ(part[(r - r0) * (c1 - c0) + (c - c0)], whole[r * w.cols() + c])
          << w.TypeName() << " rows [" << r0 << "," << r1 << ") cols [" << c0 << "," << c1
          << ") at " << r << "," << c;
}

TEST(WeightSliceTest, DenseSlicesHoldTheirElements) {
  std::mt19937 rng(1);
  std::normal_distribution<float> dist;
  for (DType dt : {DType::kF32, DType::kBF16, DType::kF16}) {
    Tensor t = NewHostTensor(dt, {7, 13});
    for (int64_t i = 0; i < t.numel(); ++i) {
      const float v = dist(rng);
      if (dt == DType::kF32) t.data<float>()[i] = v;
      if (dt == DType::kBF16) t.data<uint16_t>()[i] = F32ToBf16(v);
      if (dt == DType::kF16) t.data<uint16_t>()[i] = F32ToF16(v);
    }
    const Weight w(t);
    EXPECT_EQ(w.ColumnGranularity(), 1);
    ExpectSliceOf(w, 0, 7, 0, 13);
    ExpectSliceOf(w, 2, 5, 3, 11);
    ExpectSliceOf(w, 6, 7, 12, 13);
  }
}

TEST(WeightSliceTest, QuantizedSlicesHoldTheirBlocks) {
  std::mt19937 rng(2);
  std::normal_distribution<float> dist;
  for (QuantType type : {QuantType::kQ8_0, QuantType::kQ4_0, QuantType::kQ5_0, QuantType::kQ4_1,
                         QuantType::kQ5_1, QuantType::kQ4_K, QuantType::kQ5_K, QuantType::kQ6_K}) {
    const int64_t be = QuantBlockElems(type), rows = 5, cols = 3 * be;
    QuantTensor q;
    q.type = type;
    q.rows = rows;
    q.cols = cols;
    q.data = NewHostTensor(DType::kU8, {rows, cols / be * QuantBlockBytes(type)});
    std::vector<float> row(cols);
    for (int64_t r = 0; r < rows; ++r) {
      for (float& v : row) v = dist(rng);
      QuantizeBlocksRef(type, row.data(), cols,
                        static_cast<uint8_t*>(q.data.raw()) + r * q.row_bytes());
    }
    const Weight w(q);
    EXPECT_EQ(w.ColumnGranularity(), be) << QuantTypeName(type);
    ExpectSliceOf(w, 0, rows, be, 3 * be);
    ExpectSliceOf(w, 1, 4, 0, be);
    ExpectSliceOf(w, 3, 5, be, 2 * be);
  }
}

TEST(WeightSliceTest, AwqSlicesTakeTheirGroupsScalesAndZeros) {
  std::mt19937 rng(3);
  const int64_t group = 32, rows = 6, cols = 4 * group;
  QuantTensor q;
  q.type = QuantType::kAwq4;
  q.rows = rows;
  q.cols = cols;
  q.group_size = group;
  q.data = NewHostTensor(DType::kU8, {rows, cols / 2});
  q.scales = NewHostTensor(DType::kF32, {rows, cols / group});
  q.zeros = NewHostTensor(DType::kF32, {rows, cols / group});
  for (int64_t i = 0; i < q.data.numel(); ++i) q.data.data<uint8_t>()[i] = rng() & 0xFF;
  for (int64_t i = 0; i < q.scales.numel(); ++i) {
    q.scales.data<float>()[i] = 0.01f * (1 + rng() % 100);
    q.zeros.data<float>()[i] = static_cast<float>(rng() % 16);
  }
  const Weight w(q);
  EXPECT_EQ(w.ColumnGranularity(), group);
  ExpectSliceOf(w, 0, rows, group, 3 * group);
  ExpectSliceOf(w, 2, 3, 3 * group, 4 * group);
  ExpectSliceOf(w, 1, 6, 0, 2 * group);
}

}  // namespace
}  // namespace xinfer
