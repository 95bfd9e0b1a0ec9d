// The BF16 KV cache (`--kv-cache-dtype bfloat16`): WriteKvSlots rounds K/V to nearest even and
// touches only the slots it is given; every attention kernel widens BF16 exactly, so attention
// over a BF16 cache is bitwise attention over an F32 cache holding the same rounded values — on
// whichever kernel this process runs (AVX-512 here; CTest reruns the suite with XINFER_ISA=avx2
// and sse4 for the AVX2 grouped kernel and Highway's, and make test-arm64 on NEON / SVE).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <tuple>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/fast_cpu_ops.h"
#include "backend/cpu/linear_test_util.h"

namespace xinfer {
namespace {

class KvCacheDTypeTest : public ::testing::Test {
 protected:
  Tensor RandomF32(Shape shape, float scale = 1.f) {
    Tensor t = backend_->NewTensor(DType::kF32, shape);
    std::normal_distribution<float> dist(0.f, scale);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(rng_);
    return t;
  }
  // `f32` rounded to BF16 (as a BF16 tensor), and the same values widened back to F32.
  std::pair<Tensor, Tensor> Rounded(const Tensor& f32) {
    Tensor b = backend_->NewTensor(DType::kBF16, f32.shape());
    Tensor r = backend_->NewTensor(DType::kF32, f32.shape());
    for (int64_t i = 0; i < f32.numel(); ++i) {
      b.data<uint16_t>()[i] = F32ToBf16(f32.data<float>()[i]);
      r.data<float>()[i] = Bf16ToF32(b.data<uint16_t>()[i]);
    }
    return {b, r};
  }

  std::unique_ptr<Backend> backend_ = CreateCpuBackend();
  std::mt19937 rng_{11};
};

TEST_F(KvCacheDTypeTest, WriteKvSlotsRoundsToNearestEvenAndTouchesOnlyItsSlots) {
  const int64_t slots = 8, hkv = 2, d = 16;
  Tensor kc = backend_->NewTensor(DType::kBF16, {slots, hkv, d});
  Tensor vc = backend_->NewTensor(DType::kBF16, {slots, hkv, d});
  for (int64_t i = 0; i < kc.numel(); ++i) kc.data<uint16_t>()[i] = vc.data<uint16_t>()[i] = 0x7777;
  Tensor k = RandomF32({2, hkv, d}, 3.f), v = RandomF32({2, hkv, d}, 3.f);
  // Ties: 1 + 2^-8 lies halfway between two BF16 values and rounds to the even one (1.0);
  // 1 + 3 * 2^-8 rounds up to 1 + 2^-6. Infinities and NaN survive.
  k.data<float>()[0] = 1.f + std::ldexp(1.f, -8);
  k.data<float>()[1] = 1.f + 3 * std::ldexp(1.f, -8);
  k.data<float>()[2] = std::numeric_limits<float>::infinity();
  v.data<float>()[0] = std::numeric_limits<float>::quiet_NaN();
  const std::vector<int32_t> where = {5, 2};
  CpuOps().WriteKvSlots(k, v, where, kc, vc);
  const int64_t row = hkv * d;
  EXPECT_EQ(Bf16ToF32(kc.data<uint16_t>()[5 * row + 0]), 1.f);
  EXPECT_EQ(Bf16ToF32(kc.data<uint16_t>()[5 * row + 1]), 1.f + std::ldexp(1.f, -6));
  EXPECT_TRUE(std::isinf(Bf16ToF32(kc.data<uint16_t>()[5 * row + 2])));
  EXPECT_TRUE(std::isnan(Bf16ToF32(vc.data<uint16_t>()[5 * row + 0])));
  for (int64_t s = 0; s < slots; ++s) {
    const int t = s == 5 ? 0 : s == 2 ? 1 : -1;
    for (int64_t i = 0; i < row; ++i) {
      const uint16_t kb = kc.data<uint16_t>()[s * row + i], vb = vc.data<uint16_t>()[s * row + i];
      if (t < 0) {
        ASSERT_EQ(kb, 0x7777) << "slot " << s << " was not written to";
        ASSERT_EQ(vb, 0x7777) << "slot " << s << " was not written to";
        continue;
      }
      if (!(t == 0 && i == 0)) {  // the NaN checked above
        ASSERT_EQ(vb, F32ToBf16(v.data<float>()[t * row + i])) << s << " " << i;
      }
      ASSERT_EQ(kb, F32ToBf16(k.data<float>()[t * row + i])) << s << " " << i;
    }
  }
  // FastCpuOps writes the same bits (it shares the reference's WriteKvSlots).
  Tensor kc2 = backend_->NewTensor(DType::kBF16, {slots, hkv, d});
  Tensor vc2 = backend_->NewTensor(DType::kBF16, {slots, hkv, d});
  std::memcpy(kc2.raw(), kc.raw(), kc.size_bytes());
  std::memcpy(vc2.raw(), vc.raw(), vc.size_bytes());
  FastCpuOps().WriteKvSlots(k, v, where, kc2, vc2);
  EXPECT_EQ(std::memcmp(kc2.raw(), kc.raw(), kc.size_bytes()), 0);
  EXPECT_EQ(std::memcmp(vc2.raw(), vc.raw(), vc.size_bytes()), 0);
}

// Random sequences over scattered blocks (as FastCpuOpsTest's attention suite), decode rows and
// prefill chunks; the GQA shapes of Qwen2.5 (14/2), Qwen3 (16/8 at d 128) and odd head dims.
TEST_F(KvCacheDTypeTest, AttentionOnBf16CacheIsBitwiseF32CacheOfTheRoundedValues) {
  for (auto [hq, hkv, d] :
       {std::tuple{14, 2, 64}, std::tuple{4, 2, 64}, std::tuple{2, 2, 32}, std::tuple{16, 8, 128},
        std::tuple{3, 1, 48}, std::tuple{6, 2, 56}, std::tuple{2, 1, 8}}) {
    const int block = 16, num_blocks = 48, max_blocks = 10;
    const std::vector<int32_t> ctx = {1, 37, 150, 16};
    const int seqs = static_cast<int>(ctx.size());
    const std::vector<int32_t> tables =
        ScatteredBlockTables(ctx, block, num_blocks, max_blocks, rng_);
    auto [kb, kr] = Rounded(RandomF32({num_blocks * block, hkv, d}, 2.f));
    auto [vb, vr] = Rounded(RandomF32({num_blocks * block, hkv, d}));
    std::vector<int32_t> qstart = {0}, positions;
    for (int s = 0; s < seqs; ++s) {
      for (int p = std::max(0, ctx[s] - 4); p < ctx[s]; ++p) positions.push_back(p);
      qstart.push_back(static_cast<int32_t>(positions.size()));
    }
    const int64_t t = static_cast<int64_t>(positions.size());
    Tensor q = RandomF32({t, hq, d});
    const Ops::PagedAttentionBatch batch{qstart, positions, tables, max_blocks, block};
    for (int threads : {1, 2}) {
      FastCpuOps fast(/*bf16_activations=*/false, threads);
      Tensor on_bf16 = backend_->NewTensor(DType::kF32, {t, hq, d});
      Tensor on_f32 = backend_->NewTensor(DType::kF32, {t, hq, d});
      fast.PagedAttention(q, kb, vb, batch, on_bf16);
      fast.PagedAttention(q, kr, vr, batch, on_f32);
      ASSERT_TRUE(BitwiseEqual(on_bf16.data<float>(), on_f32.data<float>(), q.numel()))
          << "fast kernels " << hq << "/" << hkv << "/" << d << " threads " << threads;
    }
    CpuOps ref;
    Tensor ref_bf16 = backend_->NewTensor(DType::kF32, {t, hq, d});
    Tensor ref_f32 = backend_->NewTensor(DType::kF32, {t, hq, d});
    ref.PagedAttention(q, kb, vb, batch, ref_bf16);
    ref.PagedAttention(q, kr, vr, batch, ref_f32);
    ASSERT_TRUE(BitwiseEqual(ref_bf16.data<float>(), ref_f32.data<float>(), q.numel()))
        << "reference " << hq << "/" << hkv << "/" << d;
    // And the fast kernels near the reference on the BF16 cache itself: a few F32 ulps of the
    // output (K is drawn at scale 2, so outputs reach ~2; the reference sums in another order).
    Tensor fast_bf16 = backend_->NewTensor(DType::kF32, {t, hq, d});
    FastCpuOps().PagedAttention(q, kb, vb, batch, fast_bf16);
    for (int64_t i = 0; i < q.numel(); ++i) {
      const float want = ref_bf16.data<float>()[i];
      ASSERT_NEAR(fast_bf16.data<float>()[i], want, 4e-6 * std::max(1.f, std::fabs(want)))
          << hq << "/" << hkv << "/" << d << " element " << i;
    }
  }
}

}  // namespace
}  // namespace xinfer
