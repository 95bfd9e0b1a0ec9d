// Checks each reference CPU op (CpuOps, what the optimized kernels are tested against) against a
// direct double-precision evaluation of its definition.
#include "backend/cpu/cpu_ops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "backend/backend.h"

namespace xinfer {
namespace {

class CpuOpsTest : public ::testing::Test {
 protected:
  Tensor Random(DType dtype, Shape shape) {
    Tensor t = backend_->NewTensor(dtype, shape);
    std::normal_distribution<float> dist(0.f, 1.f);
    for (int64_t i = 0; i < t.numel(); ++i) {
      float v = dist(rng_);
      if (dtype == DType::kF32) t.data<float>()[i] = v;
      if (dtype == DType::kBF16) t.data<uint16_t>()[i] = F32ToBf16(v);
      if (dtype == DType::kF16) t.data<uint16_t>()[i] = F32ToF16(v);
    }
    return t;
  }
  static double At(const Tensor& t, int64_t i) {
    if (t.dtype() == DType::kBF16) return Bf16ToF32(t.data<uint16_t>()[i]);
    if (t.dtype() == DType::kF16) return F16ToF32(t.data<uint16_t>()[i]);
    return t.data<float>()[i];
  }
  std::unique_ptr<Backend> backend_ = CreateCpuBackend();
  CpuOps ops_;
  std::mt19937 rng_{42};
};

TEST_F(CpuOpsTest, CopyColumnsWritesOnlyItsColumns) {
  Tensor src = Random(DType::kF32, {3, 5});
  Tensor dst = Random(DType::kF32, {3, 11});
  std::vector<float> before(dst.data<float>(), dst.data<float>() + dst.numel());
  ops_.CopyColumns(src, dst, 4);
  for (int64_t r = 0; r < 3; ++r)
    for (int64_t c = 0; c < 11; ++c)
      EXPECT_EQ(dst.data<float>()[r * 11 + c],
                c >= 4 && c < 9 ? src.data<float>()[r * 5 + c - 4] : before[r * 11 + c])
          << r << "," << c;
}

TEST_F(CpuOpsTest, LinearAllWeightDtypesWithBias) {
  for (DType dt : {DType::kF32, DType::kBF16, DType::kF16}) {
    for (auto [t, k, n] : {std::tuple{1, 7, 5}, std::tuple{3, 64, 33}, std::tuple{5, 129, 17}}) {
      Tensor x = Random(DType::kF32, {t, k});
      Tensor w = Random(dt, {n, k});
      Tensor b = Random(DType::kF32, {n});
      Tensor y = backend_->NewTensor(DType::kF32, {t, n});
      ops_.Linear(x, w, &b, y);
      for (int i = 0; i < t; ++i)
        for (int j = 0; j < n; ++j) {
          double ref = At(b, j);
          for (int c = 0; c < k; ++c) ref += At(x, i * k + c) * At(w, j * k + c);
          ASSERT_NEAR(y.data<float>()[i * n + j], ref, 1e-4 * (1 + std::fabs(ref)))
              << DTypeName(dt) << " " << t << "x" << k << "x" << n;
        }
    }
  }
}

TEST_F(CpuOpsTest, RmsNormAndEmbedding) {
  Tensor x = Random(DType::kF32, {3, 10});
  Tensor w = Random(DType::kBF16, {10});
  Tensor y = backend_->NewTensor(DType::kF32, {3, 10});
  ops_.RmsNorm(x, w, 1e-6f, y);
  for (int r = 0; r < 3; ++r) {
    double ss = 0;
    for (int i = 0; i < 10; ++i) ss += At(x, r * 10 + i) * At(x, r * 10 + i);
    double inv = 1 / std::sqrt(ss / 10 + 1e-6);
    for (int i = 0; i < 10; ++i)
      EXPECT_NEAR(y.data<float>()[r * 10 + i], At(x, r * 10 + i) * inv * At(w, i), 1e-5);
  }
  Tensor table = Random(DType::kBF16, {6, 4});
  Tensor e = backend_->NewTensor(DType::kF32, {2, 4});
  std::vector<int32_t> ids = {5, 0};
  ops_.Embedding(table, ids, e);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(e.data<float>()[i], At(table, 5 * 4 + i));
    EXPECT_EQ(e.data<float>()[4 + i], At(table, i));
  }
}

TEST_F(CpuOpsTest, RopeRotateHalf) {
  Tensor x = Random(DType::kF32, {2, 3, 8});
  Tensor orig = backend_->NewTensor(DType::kF32, {2, 3, 8});
  ops_.CopyRows(x, orig, 0);
  std::vector<int32_t> pos = {0, 7};
  ops_.Rope(x, pos, PlainRope(10000.0, 8));
  for (int t = 0; t < 2; ++t)
    for (int h = 0; h < 3; ++h)
      for (int i = 0; i < 4; ++i) {
        double ang = pos[t] / std::pow(10000.0, 2.0 * i / 8);
        int64_t base = (t * 3 + h) * 8;
        double x1 = At(orig, base + i), x2 = At(orig, base + i + 4);
        EXPECT_NEAR(x.data<float>()[base + i], x1 * std::cos(ang) - x2 * std::sin(ang), 1e-5);
        EXPECT_NEAR(x.data<float>()[base + i + 4], x2 * std::cos(ang) + x1 * std::sin(ang), 1e-5);
      }
  // Any frequencies, and cos and sin scaled (YaRN's attention factor).
  const RopeSpec scaled{{0.5, 0.25, 0.01, 1e-5}, 1.25};
  ops_.CopyRows(orig, x, 0);
  ops_.Rope(x, pos, scaled);
  for (int t = 0; t < 2; ++t)
    for (int h = 0; h < 3; ++h)
      for (int i = 0; i < 4; ++i) {
        const double ang = pos[t] * scaled.inv_freq[i], c = 1.25 * std::cos(ang),
                     s = 1.25 * std::sin(ang);
        int64_t base = (t * 3 + h) * 8;
        double x1 = At(orig, base + i), x2 = At(orig, base + i + 4);
        EXPECT_NEAR(x.data<float>()[base + i], x1 * c - x2 * s, 1e-5);
        EXPECT_NEAR(x.data<float>()[base + i + 4], x2 * c + x1 * s, 1e-5);
      }
}

// Mixture-of-experts routing: rows gathered by index, and weighted rows added back in order.
TEST_F(CpuOpsTest, GatherAndScatterAddRows) {
  Tensor src = Random(DType::kF32, {4, 3});
  Tensor gathered = backend_->NewTensor(DType::kF32, {3, 3});
  const std::vector<int32_t> rows = {2, 0, 2};
  ops_.GatherRows(src, rows, gathered);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
      EXPECT_EQ(gathered.data<float>()[i * 3 + j], At(src, rows[i] * 3 + j));
  Tensor dst = backend_->NewTensor(DType::kF32, {4, 3});
  for (int64_t i = 0; i < 12; ++i) dst.data<float>()[i] = 1.f;
  const std::vector<float> weights = {0.5f, 2.f, 0.25f};
  ops_.ScatterAddRows(gathered, rows, weights, dst);
  for (int j = 0; j < 3; ++j) {
    EXPECT_FLOAT_EQ(dst.data<float>()[0 * 3 + j], 1.f + 2.f * At(src, j));
    EXPECT_FLOAT_EQ(dst.data<float>()[1 * 3 + j], 1.f);  // untouched
    EXPECT_FLOAT_EQ(dst.data<float>()[2 * 3 + j],
                    1.f + 0.5f * At(src, 6 + j) + 0.25f * At(src, 6 + j));
  }
}

// Two sequences with scattered, non-contiguous blocks; the reference reads the same keys from
// dense per-sequence arrays.
TEST_F(CpuOpsTest, PagedGqaAttentionMatchesDense) {
  const int hq = 4, hkv = 2, d = 8, block = 4, num_blocks = 8, max_blocks = 3;
  // Sequence 0: context 6 (queries at positions 4, 5); sequence 1: context 9 (query at 8).
  const std::vector<int32_t> ctx = {6, 9};
  const std::vector<int32_t> query_start = {0, 2, 3};
  const std::vector<int32_t> positions = {4, 5, 8};
  const std::vector<int32_t> tables = {5, 1, 0, /*seq 1*/ 7, 2, 3};
  Tensor dense_k[2], dense_v[2];
  Tensor kc = backend_->NewTensor(DType::kF32, {num_blocks * block, hkv, d});
  Tensor vc = backend_->NewTensor(DType::kF32, {num_blocks * block, hkv, d});
  for (int s = 0; s < 2; ++s) {
    dense_k[s] = Random(DType::kF32, {ctx[s], hkv, d});
    dense_v[s] = Random(DType::kF32, {ctx[s], hkv, d});
    std::vector<int32_t> slots;
    for (int p = 0; p < ctx[s]; ++p)
      slots.push_back(tables[s * max_blocks + p / block] * block + p % block);
    ops_.WriteKvSlots(dense_k[s], dense_v[s], slots, kc, vc);
  }
  Tensor q = Random(DType::kF32, {3, hq, d});
  Tensor o = backend_->NewTensor(DType::kF32, {3, hq, d});
  Ops::PagedAttentionBatch batch{query_start, positions, tables, max_blocks, block};
  ops_.PagedAttention(q, kc, vc, batch, o);
  for (int t = 0; t < 3; ++t) {
    const int s = t < 2 ? 0 : 1;
    for (int h = 0; h < hq; ++h) {
      int kvh = h / 2;
      std::vector<double> p(positions[t] + 1);
      double mx = -1e300, den = 0;
      for (int j = 0; j <= positions[t]; ++j) {
        double sc = 0;
        for (int i = 0; i < d; ++i)
          sc += At(q, (t * hq + h) * d + i) * At(dense_k[s], (j * hkv + kvh) * d + i);
        p[j] = sc / std::sqrt(d);
        mx = std::max(mx, p[j]);
      }
      for (auto& x : p) den += (x = std::exp(x - mx));
      for (int i = 0; i < d; ++i) {
        double ref = 0;
        for (int j = 0; j <= positions[t]; ++j)
          ref += p[j] / den * At(dense_v[s], (j * hkv + kvh) * d + i);
        EXPECT_NEAR(o.data<float>()[(t * hq + h) * d + i], ref, 1e-5);
      }
    }
  }
}

TEST_F(CpuOpsTest, SiluMulAndAdd) {
  Tensor a = Random(DType::kF32, {9});
  Tensor b = Random(DType::kF32, {9});
  Tensor o = backend_->NewTensor(DType::kF32, {9});
  ops_.SiluMul(a, b, o);
  for (int i = 0; i < 9; ++i)
    EXPECT_NEAR(o.data<float>()[i], At(a, i) / (1 + std::exp(-At(a, i))) * At(b, i), 1e-5);
  ops_.Add(a, b, o);
  for (int i = 0; i < 9; ++i) EXPECT_FLOAT_EQ(o.data<float>()[i], At(a, i) + At(b, i));
}

}  // namespace
}  // namespace xinfer
