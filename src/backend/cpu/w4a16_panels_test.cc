// AWQ g128 with F32 activations on the W4A16 broadcast-x kernels (cpu_kernels_w4a16_panels_avx2.cc
// and, on AVX-512 CPUs, cpu_kernels_w4a16_panels_avx512.cc): bitwise the per-element sequence the
// AVX2 file comment documents (written here as plain scalar std::fma loops over the row-major
// weight), so the two kernels give the same bits; within F32 rounding of a float64 evaluation of
// the dequantized weight; bitwise invariant to the rows of x per call, the column ranges and the
// threads; and through FastCpuOps, which places AWQ g128 in the panel tiles on every CPU with
// AVX2 (CTest's XINFER_ISA=avx2 run takes the AVX2 kernel on AVX-512 hosts).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "backend/backend.h"
#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/fast_cpu_ops.h"
#include "backend/cpu/linear_test_util.h"
#include "backend/cpu/quant_test_util.h"
#include "tensor/quant.h"

namespace xinfer {
namespace {

class W4A16PanelsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!features_.avx2) GTEST_SKIP() << "the W4A16 panel kernel needs AVX2";
  }
  Tensor RandomX(int64_t t, int64_t k) {
    Tensor x = backend_->NewTensor(DType::kF32, {t, k});
    std::normal_distribution<float> dist;
    for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = dist(rng_);
    return x;
  }
  // The group sum W4A16PrepareX stores: 8 lane sums over the group's 16 chunks of 8, then
  // ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)).
  static float GroupSum(const float* x) {
    float l[8] = {};
    for (int c = 0; c < 16; ++c)
      for (int j = 0; j < 8; ++j) l[j] += x[8 * c + j];
    return ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]));
  }
  // The documented sequence for out[i, r] from the row-major weight: per group, chains a0 / a1
  // of fma(q, x) over the even / odd elements of each 8-element chunk in k order, then
  // acc = fma(s, fma(-z, xsum, a0 + a1), acc); out = acc + bias.
  static std::vector<float> Documented(const QuantTensor& w, const Tensor& x, const float* bias) {
    const int64_t t = x.dim(0), n = w.rows, k = w.cols, groups = k / 128;
    std::vector<float> out(t * n);
    for (int64_t i = 0; i < t; ++i) {
      const float* xr = x.data<float>() + i * k;
      for (int64_t r = 0; r < n; ++r) {
        float acc = 0.f;
        for (int64_t g = 0; g < groups; ++g) {
          float a[2] = {0.f, 0.f};
          for (int64_t e = 128 * g; e < 128 * (g + 1); ++e) {
            const uint8_t byte = w.row(r)[e / 2];
            const float q = static_cast<float>(e % 2 == 0 ? byte & 15 : byte >> 4);
            a[e % 2] = std::fma(q, xr[e], a[e % 2]);
          }
          const float s = w.scales.data<float>()[r * groups + g];
          const float z = w.zeros.data<float>()[r * groups + g];
          acc = std::fma(s, std::fma(-z, GroupSum(xr + 128 * g), a[0] + a[1]), acc);
        }
        out[i * n + r] = acc + (bias != nullptr ? bias[r] : 0.f);
      }
    }
    return out;
  }
  using KernelFn = void (*)(const cpu::QuantLinearTask&, int64_t, int64_t, int64_t, int64_t);
  struct NamedKernel {
    const char* name;
    KernelFn run;
  };
  // The W4A16 kernels this CPU runs: AVX2's, and AVX-512's where it has AVX-512.
  std::vector<NamedKernel> Kernels() const {
    std::vector<NamedKernel> out = {{"avx2", cpu::avx2::QuantLinearW4A16Panels}};
    if (features_.avx512) out.push_back({"avx512", cpu::avx512::QuantLinearW4A16Panels});
    return out;
  }
  // `kernel` over rows [0, t) of x and the column ranges cut at `splits`.
  static std::vector<float> Kernel(const QuantTensor& tiled, const Tensor& x, const float* bias,
                                   const std::vector<int64_t>& splits = {},
                                   KernelFn kernel = cpu::avx2::QuantLinearW4A16Panels) {
    const int64_t t = x.dim(0), k = tiled.cols, n = tiled.rows;
    std::vector<float> xs(t * k), xsum(t * k / 128), out(t * n, -1.f);
    cpu::avx2::W4A16PrepareX(x.data<float>(), t, k, k, xs.data(), k, xsum.data(), k / 128);
    cpu::QuantLinearTask task;
    task.x = xs.data();
    task.ldx = k;
    RunSplit(task, tiled, xsum, bias, t, splits, kernel, out);
    return out;
  }
  // `kernel` on task (x set) with w, xsum, bias and out, over the column ranges cut at `splits`.
  static void RunSplit(cpu::QuantLinearTask& task, const QuantTensor& tiled,
                       const std::vector<float>& xsum, const float* bias, int64_t t,
                       const std::vector<int64_t>& splits, KernelFn kernel,
                       std::vector<float>& out) {
    task.xsum = xsum.data();
    task.ldxsum = tiled.cols / 128;
    task.w = &tiled;
    task.bias = bias;
    task.out = out.data();
    task.ldo = tiled.rows;
    int64_t n0 = 0;
    for (int64_t s : splits) {
      kernel(task, 0, t, n0, s);
      n0 = s;
    }
    kernel(task, 0, t, n0, tiled.rows);
  }

  // Through FastCpuOps(bf16_activations) as CpuBackend places AWQ g128 without int8 activations:
  // the layout is the panel tiles, QuantLinear gives `documented`'s bits for 19 rows of x (a zero
  // row gives the bias exactly) and for any rows of x per call and any threads, LinearMany of
  // such parts is bitwise the separate calls. Returns the placed weight.
  using DocumentedFn = std::vector<float> (*)(const QuantTensor&, const Tensor&, const float*);
  QuantTensor ExpectFastCpuOpsRunsAwqPanels(bool bf16_activations, DocumentedFn documented,
                                            uint32_t seed) {
    FastCpuOps ops(bf16_activations, 2);
    QuantTensor awq = MakeQuant(*backend_, QuantType::kAwq4, 77, 896, seed, nullptr, 128);
    EXPECT_EQ(ops.QuantLayoutFor(awq), Layout::kDwordTiles);
    QuantTensor tiled = PanelTiledCopy(*backend_, awq);
    EXPECT_FALSE(ops.UsesInt8Activations(tiled));
    const int64_t t = 19, n = awq.rows, k = awq.cols;
    Tensor x = RandomX(t, k);
    std::fill_n(x.data<float>() + 3 * k, k, 0.f);
    Tensor bias = RandomX(1, n);
    Tensor full = backend_->NewTensor(DType::kF32, {t, n});
    ops.QuantLinear(x, tiled, &bias, full);
    EXPECT_TRUE(
        BitwiseEqual(full.data<float>(), documented(awq, x, bias.data<float>()).data(), t * n));
    EXPECT_TRUE(BitwiseEqual(full.data<float>() + 3 * n, bias.data<float>(), n));
    ExpectQuantLinearBatchInvariant(
        *backend_,
        [bf16_activations](int threads) {
          return std::make_unique<FastCpuOps>(bf16_activations, threads);
        },
        tiled, x, &bias, full, "AWQ g128 on the panels");
    if (HasFatalFailure()) return tiled;
    std::vector<Weight> parts;
    std::vector<Tensor> biases;
    for (int64_t rows : {203, 37, 48}) {
      parts.emplace_back(
          PanelTiledCopy(*backend_, MakeQuant(*backend_, QuantType::kAwq4, rows, 256,
                                              static_cast<uint32_t>(rows + seed), nullptr, 128)));
      biases.push_back(RandomX(1, rows));
    }
    for (int64_t rows_x : {1, 5, 9}) {
      Tensor xm = RandomX(rows_x, 256);
      for (int threads : {1, 3}) {
        FastCpuOps ops_n(bf16_activations, threads);
        ExpectLinearManyMatchesSeparate(*backend_, ops_n, xm, parts, biases,
                                        "threads " + std::to_string(threads));
        if (HasFatalFailure()) return tiled;
      }
    }
    return tiled;
  }

  const cpu::CpuFeatures& features_ = cpu::DetectCpuFeatures();
  std::unique_ptr<Backend> backend_ = CreateCpuBackend();
  std::mt19937 rng_{23};
};

#if defined(__x86_64__)
// One lane of vdpbf16ps: acc + the products of two BF16 pairs (the CPU's own rounding).
__attribute__((target("avx512f,avx512bf16"))) float DpBf16(float acc, uint32_t x_pair,
                                                           uint32_t w_pair) {
  __m512i xv = _mm512_set1_epi32(static_cast<int>(x_pair));
  __m512i wv = _mm512_set1_epi32(static_cast<int>(w_pair));
  const __m512 sum = _mm512_dpbf16_ps(_mm512_set1_ps(acc), reinterpret_cast<__m512bh&>(xv),
                                      reinterpret_cast<__m512bh&>(wv));
  return _mm512_cvtss_f32(sum);
}

// The BF16-activation kernel (cpu_kernels_w4a16_bf16_panels_avx512.cc, AVX512-BF16 CPUs).
class W4A16Bf16PanelsTest : public W4A16PanelsTest {
 protected:
  void SetUp() override {
    if (!features_.avx512_bf16) GTEST_SKIP() << "the BF16 W4A16 panel kernel needs AVX512-BF16";
  }
  // The group sum W4A16Bf16PrepareX stores of the rounded x: 16 lane sums over the group's 8
  // runs of 16, then lanes l + (l + 8), + (l + 4), + (l + 2), + (l + 1).
  static float GroupSum(const float* xb) {
    float l[16] = {};
    for (int s = 0; s < 8; ++s)
      for (int j = 0; j < 16; ++j) l[j] += xb[16 * s + j];
    for (int width : {8, 4, 2, 1})
      for (int j = 0; j < width; ++j) l[j] += l[j + width];
    return l[0];
  }
  static std::vector<float> RoundedX(const Tensor& x) {
    std::vector<float> out(x.numel());
    for (int64_t i = 0; i < x.numel(); ++i) out[i] = Bf16ToF32(F32ToBf16(x.data<float>()[i]));
    return out;
  }
  // The documented sequence for out[i, r] from the row-major weight and x rounded to BF16: per
  // group, chain a_p of vdpbf16ps over the pairs (8c + p, 8c + p + 4) of each chunk in k order,
  // p = 0..3, the weights as 1 + q/16; then zz = fma(z, 1/16, 1),
  // acc = fma(s, fma(-zz, xsum, (a0 + a1) + (a2 + a3)), acc); out = 16 acc + bias.
  static std::vector<float> Documented(const QuantTensor& w, const Tensor& x, const float* bias) {
    const int64_t t = x.dim(0), n = w.rows, k = w.cols, groups = k / 128;
    const std::vector<float> xr_all = RoundedX(x);
    std::vector<float> out(t * n);
    auto code = [&](int64_t r, int64_t e) -> uint32_t {
      const uint8_t byte = w.row(r)[e / 2];
      return e % 2 == 0 ? byte & 15 : byte >> 4;
    };
    for (int64_t i = 0; i < t; ++i) {
      const float* xr = xr_all.data() + i * k;
      for (int64_t r = 0; r < n; ++r) {
        float acc = 0.f;
        for (int64_t g = 0; g < groups; ++g) {
          float a[4] = {0.f, 0.f, 0.f, 0.f};
          for (int64_t e0 = 128 * g; e0 < 128 * (g + 1); e0 += 8) {
            for (int p = 0; p < 4; ++p) {
              const uint32_t x_pair =
                  F32ToBf16(xr[e0 + p]) | static_cast<uint32_t>(F32ToBf16(xr[e0 + p + 4])) << 16;
              const uint32_t w_pair =
                  (0x3F80u | code(r, e0 + p) << 3) | (0x3F80u | code(r, e0 + p + 4) << 3) << 16;
              a[p] = DpBf16(a[p], x_pair, w_pair);
            }
          }
          const float s = w.scales.data<float>()[r * groups + g];
          const float zz = std::fma(w.zeros.data<float>()[r * groups + g], 0.0625f, 1.f);
          acc = std::fma(s, std::fma(-zz, GroupSum(xr + 128 * g), (a[0] + a[1]) + (a[2] + a[3])),
                         acc);
        }
        out[i * n + r] = 16.f * acc + (bias != nullptr ? bias[r] : 0.f);
      }
    }
    return out;
  }
  static std::vector<float> Kernel(const QuantTensor& tiled, const Tensor& x, const float* bias,
                                   const std::vector<int64_t>& splits = {}) {
    const int64_t t = x.dim(0), k = tiled.cols, n = tiled.rows;
    std::vector<uint16_t> xs(t * k);
    std::vector<float> xsum(t * k / 128), out(t * n, -1.f);
    cpu::avx512::W4A16Bf16PrepareX(x.data<float>(), t, k, k, xs.data(), k, xsum.data(), k / 128);
    cpu::QuantLinearTask task;
    task.xs = xs.data();
    task.ldxs = k;
    RunSplit(task, tiled, xsum, bias, t, splits, cpu::avx512::QuantLinearW4A16Bf16Panels, out);
    return out;
  }
};

// Every tile (1 row of x on whole tiles; 2..6 rows on one tile; more rows in calls of 6; the
// masked short last tile) against the documented sequence, bit for
// bit, and against float64 of the dequantized weight times the rounded x; column ranges that
// start past the first tile; with and without a bias. Another pair order, chain split, zero
// term or scaling fails it.
TEST_F(W4A16Bf16PanelsTest, KernelIsBitwiseTheDocumentedSequence) {
  for (int64_t k : {128, 256, 896}) {
    for (int64_t n : {16, 48, 77, 5, 29}) {
      std::vector<float> deq;
      QuantTensor w = MakeQuant(*backend_, QuantType::kAwq4, n, k,
                                static_cast<uint32_t>(11 * n + k), &deq, 128);
      QuantTensor tiled = PanelTiledCopy(*backend_, w);
      ASSERT_TRUE(cpu::avx512::W4A16Bf16PanelsSupports(tiled, features_));
      Tensor bias = RandomX(1, n);
      for (int64_t t : {1, 2, 3, 5, 6, 7, 9, 17}) {
        Tensor x = RandomX(t, k);
        const std::vector<float> xr = RoundedX(x);
        for (bool with_bias : {true, false}) {
          const float* b = with_bias ? bias.data<float>() : nullptr;
          const std::string label = "K=" + std::to_string(k) + " N=" + std::to_string(n) +
                                    " T=" + std::to_string(t) + " bias " +
                                    std::to_string(with_bias);
          const std::vector<float> got = Kernel(tiled, x, b);
          ASSERT_TRUE(BitwiseEqual(got.data(), Documented(w, x, b).data(), t * n)) << label;
          for (int64_t i = 0; i < t; ++i) {
            for (int64_t r = 0; r < n; ++r) {
              double want = b != nullptr ? b[r] : 0.0, mag = std::fabs(want);
              for (int64_t e = 0; e < k; ++e) {
                const double p = static_cast<double>(deq[r * k + e]) * xr[i * k + e];
                want += p;
                // The kernel's terms: 16 s x (1 + q/16) and 16 s x (1 + z/16), |q|, |z| <= 15.
                mag += 64.0 *
                       std::fabs(w.scales.data<float>()[r * (k / 128) + e / 128] * xr[i * k + e]);
              }
              ASSERT_NEAR(got[i * n + r], want, 2e-6 * mag + 1e-6)
                  << label << " row " << i << " col " << r;
            }
          }
          if (n > 16) {
            ASSERT_TRUE(BitwiseEqual(Kernel(tiled, x, b, {16}).data(), got.data(), t * n))
                << label << " split";
          }
        }
      }
    }
  }
}

// W4A16Bf16PrepareX: x rounded to BF16 (nearest even) in the pair order per chunk of 8, group
// sums of the rounded x in the documented order; rows independent.
TEST_F(W4A16Bf16PanelsTest, PrepareXRoundsPairsAndSumsGroups) {
  const int64_t t = 3, k = 384;
  Tensor x = RandomX(t, k);
  x.data<float>()[5] = 1.00390625f;  // halfway between two BF16 values: rounds to even (1.0)
  std::vector<uint16_t> xs(t * k);
  std::vector<float> xsum(t * 3);
  cpu::avx512::W4A16Bf16PrepareX(x.data<float>(), t, k, k, xs.data(), k, xsum.data(), 3);
  EXPECT_EQ(xs[3], 0x3F80) << "element 5 sits at word 3 of its chunk";
  const std::vector<float> xr = RoundedX(x);
  const int kFrom[8] = {0, 4, 1, 5, 2, 6, 3, 7};
  for (int64_t i = 0; i < t; ++i) {
    for (int64_t e = 0; e < k; ++e)
      ASSERT_EQ(xs[i * k + e], F32ToBf16(x.data<float>()[i * k + e / 8 * 8 + kFrom[e % 8]]))
          << "row " << i << " word " << e;
    for (int64_t g = 0; g < 3; ++g)
      ASSERT_EQ(xsum[i * 3 + g], GroupSum(xr.data() + i * k + 128 * g)) << i << " " << g;
  }
}

// Through FastCpuOps with BF16 activations (`--dtype bfloat16`): AWQ g128 is placed in the panel
// tiles and QuantLinear gives the BF16 kernel's bits for any rows of x per call and any threads;
// LinearMany of such parts is bitwise the separate calls; int8 activations still take the int8
// kernel.
TEST_F(W4A16Bf16PanelsTest, FastCpuOpsRunsAwqOnTheBf16Panels) {
  const QuantTensor tiled =
      ExpectFastCpuOpsRunsAwqPanels(/*bf16_activations=*/true, &W4A16Bf16PanelsTest::Documented, 5);
  if (HasFatalFailure()) return;
  FastCpuOps int8(true, 2, /*int8_activations=*/true);
  EXPECT_TRUE(int8.UsesInt8Activations(tiled));
}
#endif  // defined(__x86_64__)

// Every tile of each kernel (AVX2: 1 row of x on 1..4 half-panels, 2..4 rows on one; AVX-512: 1
// row on one tile, two groups' chains side by side, 2..6 rows on one tile; the masked short last
// tile) against the documented sequence, bit for bit, and against float64 of the dequantized
// weight; column ranges that start past the first tile; with and without a bias. A change of the
// prescaling, the chains' split, the group epilogue or its order fails it.
TEST_F(W4A16PanelsTest, KernelIsBitwiseTheDocumentedSequence) {
  for (const NamedKernel& kernel : Kernels()) {
    for (int64_t k : {128, 256, 896}) {
      for (int64_t n : {16, 32, 48, 64, 80, 77, 8, 5, 29}) {
        std::vector<float> deq;
        QuantTensor w = MakeQuant(*backend_, QuantType::kAwq4, n, k,
                                  static_cast<uint32_t>(7 * n + k), &deq, 128);
        QuantTensor tiled = PanelTiledCopy(*backend_, w);
        ASSERT_TRUE(cpu::avx2::W4A16PanelsSupports(tiled, features_));
        Tensor bias = RandomX(1, n);
        for (int64_t t : {1, 2, 3, 4, 5, 6, 7, 9, 13}) {
          Tensor x = RandomX(t, k);
          for (bool with_bias : {true, false}) {
            const float* b = with_bias ? bias.data<float>() : nullptr;
            const std::string label = std::string(kernel.name) + " K=" + std::to_string(k) +
                                      " N=" + std::to_string(n) + " T=" + std::to_string(t) +
                                      " bias " + std::to_string(with_bias);
            const std::vector<float> got = Kernel(tiled, x, b, {}, kernel.run);
            ASSERT_TRUE(BitwiseEqual(got.data(), Documented(w, x, b).data(), t * n)) << label;
            for (int64_t i = 0; i < t; ++i) {
              for (int64_t r = 0; r < n; ++r) {
                double want = b != nullptr ? b[r] : 0.0, mag = std::fabs(want);
                for (int64_t e = 0; e < k; ++e) {
                  const double p = static_cast<double>(deq[r * k + e]) * x.data<float>()[i * k + e];
                  want += p;
                  mag += std::fabs(p);
                }
                ASSERT_NEAR(got[i * n + r], want, 2e-6 * mag + 1e-6)
                    << label << " row " << i << " col " << r;
              }
            }
            if (n > 16) {  // ranges [0, 16), [16, n): the same bits
              ASSERT_TRUE(
                  BitwiseEqual(Kernel(tiled, x, b, {16}, kernel.run).data(), got.data(), t * n))
                  << label << " split";
            }
          }
        }
      }
    }
  }
}

// W4A16PrepareX: x prescaled by 16^-p per element 8c + p (p < 7), group sums in the documented
// order; the rows are independent (a row prepared with others is the row prepared alone).
TEST_F(W4A16PanelsTest, PrepareXPrescalesAndSumsGroups) {
  const int64_t t = 3, k = 384;
  Tensor x = RandomX(t, k);
  std::vector<float> xs(t * k), xsum(t * 3);
  cpu::avx2::W4A16PrepareX(x.data<float>(), t, k, k, xs.data(), k, xsum.data(), 3);
  for (int64_t i = 0; i < t; ++i) {
    for (int64_t e = 0; e < k; ++e) {
      const int p = static_cast<int>(e % 8);
      ASSERT_EQ(xs[i * k + e], std::ldexp(x.data<float>()[i * k + e], p < 7 ? -4 * p : 0))
          << "row " << i << " element " << e;
    }
    for (int64_t g = 0; g < 3; ++g)
      ASSERT_EQ(xsum[i * 3 + g], GroupSum(x.data<float>() + i * k + 128 * g)) << i << " " << g;
  }
}

// Through FastCpuOps as CpuBackend places AWQ g128 without int8 activations (every CPU with
// AVX2): the layout is the panel tiles, QuantLinear gives the kernel's bits (the documented
// sequence) for any rows of x per call and any threads, LinearMany of such parts is bitwise the
// separate calls. Other group sizes and formats stay row-major.
TEST_F(W4A16PanelsTest, FastCpuOpsPlacesAndRunsAwqOnThePanels) {
  const QuantTensor tiled =
      ExpectFastCpuOpsRunsAwqPanels(/*bf16_activations=*/false, &W4A16PanelsTest::Documented, 3);
  if (HasFatalFailure()) return;
  FastCpuOps ops(false, 2);
  EXPECT_EQ(ops.QuantLayoutFor(MakeQuant(*backend_, QuantType::kAwq4, 16, 256, 1, nullptr, 64)),
            Layout::kRowMajor);
  EXPECT_EQ(ops.QuantLayoutFor(MakeQuant(*backend_, QuantType::kQ4_0, 16, 256, 1, nullptr)),
            Layout::kRowMajor);
  // With int8 activations the same weight goes to the int8 kernel's tiles and kernel.
  FastCpuOps int8(false, 2, /*int8_activations=*/true);
  EXPECT_EQ(int8.QuantLayoutFor(MakeQuant(*backend_, QuantType::kAwq4, 77, 896, 3, nullptr, 128)),
            Layout::kDwordTiles);
  EXPECT_TRUE(int8.UsesInt8Activations(tiled));
}

}  // namespace
}  // namespace xinfer
