// Quantized Linear / Embedding reference kernels: agreement with dequantize-then-dense, batch
// invariance, and the Weight front doors of Ops.
#include "backend/cpu/quant_ops.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "backend/backend.h"
#include "backend/cpu/quant_test_util.h"

namespace xinfer {
namespace {

class QuantOpsTest : public ::testing::TestWithParam<QuantType> {};

TEST_P(QuantOpsTest, LinearMatchesDequantizedDenseAndIsBatchInvariant) {
  auto be = CreateCpuBackend();
  const int64_t n = 48, k = 512, t = 5;
  std::vector<float> wd;
  QuantTensor q = MakeQuant(*be, GetParam(), n, k, 3, &wd);
  Tensor x = be->NewTensor(DType::kF32, {t, k});
  std::mt19937 rng(9);
  std::normal_distribution<float> dist;
  for (int64_t i = 0; i < t * k; ++i) x.data<float>()[i] = dist(rng);
  Tensor bias = be->NewTensor(DType::kF32, {n});
  for (int64_t i = 0; i < n; ++i) bias.data<float>()[i] = 0.1f * i;

  Tensor out = be->NewTensor(DType::kF32, {t, n});
  be->ops().Linear(x, Weight(q), &bias, out);
  for (int64_t r = 0; r < t; ++r)
    for (int64_t j = 0; j < n; ++j) {
      double ref = 0.1 * j;
      for (int64_t i = 0; i < k; ++i)
        ref += static_cast<double>(x.data<float>()[r * k + i]) * wd[j * k + i];
      EXPECT_NEAR(out.data<float>()[r * n + j], ref, 1e-3 * (1 + std::fabs(ref)));
    }
  // Each row alone (at a different offset, so a different alignment) gives the same bits.
  for (int64_t r = 0; r < t; ++r) {
    Tensor one = be->NewTensor(DType::kF32, {1, n});
    be->ops().Linear(x.Slice0(r, r + 1), Weight(q), &bias, one);
    EXPECT_EQ(std::memcmp(one.data<float>(), out.data<float>() + r * n, n * sizeof(float)), 0)
        << "row " << r;
  }
}

TEST_P(QuantOpsTest, EmbeddingDequantizesRows) {
  auto be = CreateCpuBackend();
  std::vector<float> wd;
  QuantTensor q = MakeQuant(*be, GetParam(), 10, 256, 4, &wd);
  std::vector<int32_t> ids = {7, 0, 7};
  Tensor out = be->NewTensor(DType::kF32, {3, 256});
  be->ops().Embedding(Weight(q), ids, out);
  for (int r = 0; r < 3; ++r)
    for (int i = 0; i < 256; ++i) EXPECT_EQ(out.data<float>()[r * 256 + i], wd[ids[r] * 256 + i]);
}

INSTANTIATE_TEST_SUITE_P(AllFormats, QuantOpsTest,
                         ::testing::Values(QuantType::kQ8_0, QuantType::kQ4_0, QuantType::kQ5_0,
                                           QuantType::kQ4_1, QuantType::kQ5_1, QuantType::kQ4_K,
                                           QuantType::kQ5_K, QuantType::kQ6_K, QuantType::kAwq4),
                         [](const auto& info) { return std::string(QuantTypeName(info.param)); });

TEST(WeightTest, DenseWeightsGoThroughTheDenseOps) {
  auto be = CreateCpuBackend();
  Tensor w = be->NewTensor(DType::kF32, {2, 3});
  for (int i = 0; i < 6; ++i) w.data<float>()[i] = static_cast<float>(i);
  Weight dense(w);
  EXPECT_FALSE(dense.quantized());
  EXPECT_EQ(dense.rows(), 2);
  EXPECT_EQ(dense.cols(), 3);
  EXPECT_EQ(dense.TypeName(), "F32");
  EXPECT_EQ(dense.size_bytes(), 24u);
  Tensor x = be->NewTensor(DType::kF32, {1, 3});
  x.data<float>()[0] = 1, x.data<float>()[1] = 1, x.data<float>()[2] = 1;
  Tensor out = be->NewTensor(DType::kF32, {1, 2});
  be->ops().Linear(x, dense, nullptr, out);
  EXPECT_EQ(out.data<float>()[0], 3.f);
  EXPECT_EQ(out.data<float>()[1], 12.f);
  EXPECT_TRUE(dense.SameStorage(Weight(w)));
}

}  // namespace
}  // namespace xinfer
