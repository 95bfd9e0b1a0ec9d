// Paged attention with BF16 products (AttentionGroupBf16, FastCpuOps under bf16_activations on
// AVX512-BF16 CPUs with a BF16 cache): against a double-precision evaluation of the arithmetic
// cpu_kernels_attention_bf16_avx512.cc defines, a head's bits independent of the heads that share
// its call, and through FastCpuOps near the F32 reference and batch invariant.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <tuple>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/fast_cpu_ops.h"
#include "backend/cpu/linear_test_util.h"
#include "tensor/dtype.h"

namespace xinfer {
namespace {

bool HasAvx512Bf16() {
  const cpu::CpuFeatures f = cpu::DetectCpuFeatures();
  return f.avx512 && f.avx512_bf16;
}

float RoundBf16(float x) { return Bf16ToF32(F32ToBf16(x)); }

// Keys scattered over a cache of 2n rows of one KV head (BF16 bits), in shuffled order.
struct Keys {
  std::vector<uint16_t> k, v;
  std::vector<int64_t> off;
};
Keys RandomKeys(int64_t n, int64_t d, std::mt19937& rng, float v_value = NAN) {
  std::normal_distribution<float> dist(0.f, 1.f);
  Keys keys;
  keys.k.resize(2 * n * d);
  keys.v.resize(2 * n * d);
  for (auto& x : keys.k) x = F32ToBf16(2.f * dist(rng));
  for (auto& x : keys.v) x = F32ToBf16(std::isnan(v_value) ? dist(rng) : v_value);
  std::vector<int64_t> rows(2 * n);
  for (int64_t i = 0; i < 2 * n; ++i) rows[i] = i;
  std::shuffle(rows.begin(), rows.end(), rng);
  for (int64_t p = 0; p < n; ++p) keys.off.push_back(rows[p] * d);
  return keys;
}

// The kernel's arithmetic in double: exact scores (its two-part BF16 query is the F32 one to
// ~2^-17), weights rounded to BF16 and normalized by their sum.
std::vector<double> Expected(const float* q, const Keys& keys, int64_t n, int64_t d) {
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  std::vector<double> s(n), out(d, 0.0);
  double mx = -INFINITY, den = 0;
  for (int64_t p = 0; p < n; ++p) {
    double dot = 0;
    for (int64_t c = 0; c < d; ++c) dot += double{q[c]} * Bf16ToF32(keys.k[keys.off[p] + c]);
    s[p] = dot * scale;
    mx = std::max(mx, s[p]);
  }
  for (double& x : s) den += (x = RoundBf16(static_cast<float>(std::exp(x - mx))));
  for (int64_t c = 0; c < d; ++c) {
    for (int64_t p = 0; p < n; ++p) out[c] += s[p] * Bf16ToF32(keys.v[keys.off[p] + c]);
    out[c] /= den;
  }
  return out;
}

// Each head of a call is the same bits alone or beside others, and near the double evaluation
// (a weight's BF16 rounding can land one BF16 step apart from the double one when exp's last F32
// bit differs: at most 2^-8 of that weight's share of |v|).
TEST(AttentionBf16Test, HeadsMatchTheDefinitionAndDoNotDependOnTheirNeighbours) {
  if (!HasAvx512Bf16()) GTEST_SKIP() << "needs AVX512-BF16";
  std::mt19937 rng(5);
  std::normal_distribution<float> dist(0.f, 1.f);
  for (int64_t d : {32, 64, 128}) {
    const int max_heads = cpu::avx512::AttentionGroupBf16MaxHeads(d);
    for (int64_t n : {1, 2, 3, 4, 5, 7, 33, 300}) {
      const Keys keys = RandomKeys(n, d, rng);
      std::vector<float> q(max_heads * d), scratch(6 * (n + 3)), all(max_heads * d), one(d);
      for (float& x : q) x = dist(rng);
      const float scale = 1.f / std::sqrt(static_cast<float>(d));
      cpu::avx512::AttentionGroupBf16(q.data(), d, max_heads, keys.k.data(), keys.v.data(),
                                      keys.off.data(), n, d, scale, scratch.data(), all.data(), d);
      for (int h = 0; h < max_heads; ++h) {
        cpu::avx512::AttentionGroupBf16(q.data() + h * d, d, 1, keys.k.data(), keys.v.data(),
                                        keys.off.data(), n, d, scale, scratch.data(), one.data(),
                                        d);
        ASSERT_TRUE(BitwiseEqual(one.data(), all.data() + h * d, d)) << d << " " << n << " " << h;
        const std::vector<double> want = Expected(q.data() + h * d, keys, n, d);
        for (int64_t c = 0; c < d; ++c)
          ASSERT_NEAR(one[c], want[c], 5e-3) << d << " " << n << " " << h << " " << c;
      }
      if (max_heads > 2) {  // three heads: the fourth lane idle
        std::vector<float> three(3 * d);
        cpu::avx512::AttentionGroupBf16(q.data() + d, d, 3, keys.k.data(), keys.v.data(),
                                        keys.off.data(), n, d, scale, scratch.data(), three.data(),
                                        d);
        ASSERT_TRUE(BitwiseEqual(three.data(), all.data() + d, 3 * d)) << d << " " << n;
      }
    }
  }
}

// The weights are normalized by the sum of their rounded values: when every V row is the same
// vector, each output element is that value (to F32 rounding), whatever the number of keys (odd
// counts end on a half pair).
TEST(AttentionBf16Test, ConstantValuesComeBackUnchanged) {
  if (!HasAvx512Bf16()) GTEST_SKIP() << "needs AVX512-BF16";
  std::mt19937 rng(6);
  std::normal_distribution<float> dist(0.f, 3.f);
  for (int64_t d : {32, 64, 128}) {
    for (int64_t n : {1, 2, 9, 64, 257}) {
      const Keys keys = RandomKeys(n, d, rng, /*v_value=*/-1.375f);
      std::vector<float> q(d), scratch(6 * (n + 3)), out(d);
      for (float& x : q) x = dist(rng);
      cpu::avx512::AttentionGroupBf16(q.data(), d, 1, keys.k.data(), keys.v.data(), keys.off.data(),
                                      n, d, 0.125f, scratch.data(), out.data(), d);
      for (int64_t c = 0; c < d; ++c)
        ASSERT_NEAR(out[c], -1.375f, 2e-6) << d << " " << n << " " << c;
    }
  }
}

// FastCpuOps picks the kernel under bf16_activations on a BF16 cache: the GQA shapes of
// Qwen2.5-0.5B (14 / 2 at 64), Qwen3 (16 / 8 at 128) and others, decode rows and prefill
// chunks over scattered blocks; near the F32 reference on the same cache (the weights lose BF16
// precision: ~2^-9 relative), and each row computed alone is the same bits
// as in the batch, on one thread or two. Head dims the kernel does not take (48) keep the F32
// kernels, bitwise what F32 activations give.
TEST(AttentionBf16Test, FastCpuOpsUsesItUnderBf16ActivationsAndStaysBatchInvariant) {
  if (!HasAvx512Bf16()) GTEST_SKIP() << "needs AVX512-BF16";
  std::unique_ptr<Backend> backend = CreateCpuBackend();
  std::mt19937 rng(9);
  std::normal_distribution<float> dist(0.f, 1.f);
  auto random_bf16 = [&](Shape shape) {
    Tensor t = backend->NewTensor(DType::kBF16, shape);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<uint16_t>()[i] = F32ToBf16(dist(rng));
    return t;
  };
  for (auto [hq, hkv, d] : {std::tuple{14, 2, 64}, std::tuple{16, 8, 128}, std::tuple{4, 1, 32},
                            std::tuple{28, 4, 128}, std::tuple{3, 1, 48}}) {
    const int block = 16, num_blocks = 48, max_blocks = 12;
    const std::vector<int32_t> ctx = {1, 37, 150, 16, 2};
    const std::vector<int32_t> tables =
        ScatteredBlockTables(ctx, block, num_blocks, max_blocks, rng);
    Tensor kc = random_bf16({num_blocks * block, hkv, d});
    Tensor vc = random_bf16({num_blocks * block, hkv, d});
    std::vector<int32_t> qstart = {0}, positions;
    for (int32_t c : ctx) {
      for (int p = std::max(0, c - 4); p < c; ++p) positions.push_back(p);
      qstart.push_back(static_cast<int32_t>(positions.size()));
    }
    const int64_t t = static_cast<int64_t>(positions.size());
    Tensor q = backend->NewTensor(DType::kF32, {t, hq, d});
    for (int64_t i = 0; i < q.numel(); ++i) q.data<float>()[i] = dist(rng);
    const Ops::PagedAttentionBatch batch{qstart, positions, tables, max_blocks, block};
    Tensor want = backend->NewTensor(DType::kF32, {t, hq, d});
    CpuOps().PagedAttention(q, kc, vc, batch, want);
    Tensor f32_kernels = backend->NewTensor(DType::kF32, {t, hq, d});
    FastCpuOps(/*bf16_activations=*/false).PagedAttention(q, kc, vc, batch, f32_kernels);
    for (int threads : {1, 2}) {
      FastCpuOps fast(/*bf16_activations=*/true, threads);
      Tensor got = backend->NewTensor(DType::kF32, {t, hq, d});
      fast.PagedAttention(q, kc, vc, batch, got);
      double worst = 0;
      for (int64_t i = 0; i < q.numel(); ++i)
        worst = std::max(worst, double{std::fabs(got.data<float>()[i] - want.data<float>()[i])});
      EXPECT_LT(worst, 2e-2) << hq << "/" << hkv << "/" << d;
      const bool takes_it = cpu::avx512::AttentionGroupBf16Supports(d);
      EXPECT_EQ(BitwiseEqual(got.data<float>(), f32_kernels.data<float>(), q.numel()), !takes_it)
          << hq << "/" << hkv << "/" << d << ": BF16 products where the kernel takes d";
      for (size_t s = 0; s < ctx.size(); ++s) {
        for (int32_t r = qstart[s]; r < qstart[s + 1]; ++r) {
          const std::vector<int32_t> one_start = {0, 1}, one_pos = {positions[r]};
          const std::vector<int32_t> one_table(tables.begin() + s * max_blocks,
                                               tables.begin() + (s + 1) * max_blocks);
          Tensor q1 = backend->NewTensor(DType::kF32, {1, hq, d});
          std::copy_n(q.data<float>() + r * hq * d, hq * d, q1.data<float>());
          Tensor out1 = backend->NewTensor(DType::kF32, {1, hq, d});
          fast.PagedAttention(q1, kc, vc, {one_start, one_pos, one_table, max_blocks, block}, out1);
          ASSERT_TRUE(BitwiseEqual(out1.data<float>(), got.data<float>() + r * hq * d, hq * d))
              << hq << "/" << hkv << "/" << d << " row " << r << " threads " << threads;
        }
      }
    }
  }
}

}  // namespace
}  // namespace xinfer
