// Conformance of the optimized CPU kernels (FastCpuOps) with the plain reference (CpuOps, and a
// double-precision evaluation for Linear) over random shapes with odd sizes and tails, every
// weight dtype; and bitwise batch invariance: a row's result must not depend on how many rows
// share the call, where the row sits, or how many threads run.
#include "backend/cpu/fast_cpu_ops.h"

#include <gtest/gtest.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/linear_test_util.h"
#include "backend/cpu/quant_ops.h"
#include "backend/cpu/quant_test_util.h"
#include "tensor/quant.h"

namespace xinfer {
namespace {

class FastCpuOpsTest : public ::testing::Test {
 protected:
  Tensor Random(DType dtype, Shape shape, float scale = 1.f) {
    return RandomTensor(*backend_, dtype, std::move(shape), rng_, scale);
  }
  static double At(const Tensor& t, int64_t i) {
    if (t.dtype() == DType::kBF16) return Bf16ToF32(t.data<uint16_t>()[i]);
    if (t.dtype() == DType::kF16) return F16ToF32(t.data<uint16_t>()[i]);
    return t.data<float>()[i];
  }
  Tensor Copy(const Tensor& t) {
    Tensor c = backend_->NewTensor(t.dtype(), t.shape());
    std::memcpy(c.raw(), t.raw(), t.size_bytes());
    return c;
  }
  // Runs linear(ops, xs, ys) on row chunks of x of each size in `chunks`, each size on one thread
  // count, cycling 1, 2, 3 (every size and every count at a third of the cost of all pairs: these
  // tests run under qemu, on SVE, too), and expects every chunk bitwise equal to its rows of
  // `full` (x times the same weight in one call). `what` names the case in failures.
  template <class LinearFn>
  void ExpectChunksBitwise(const Tensor& x, const Tensor& full, bool bf16_activations,
                           std::initializer_list<int64_t> chunks, const std::string& what,
                           LinearFn&& linear) {
    const int64_t t = x.dim(0), n = full.dim(1);
    int threads = 0;
    for (int64_t chunk : chunks) {
      threads = threads % 3 + 1;
      FastCpuOps ops(bf16_activations, threads);
      for (int64_t r = 0; r < t; r += chunk) {
        const int64_t e = std::min(t, r + chunk);
        Tensor xs = Copy(x.Slice0(r, e));
        Tensor ys = backend_->NewTensor(DType::kF32, {e - r, n});
        linear(ops, xs, ys);
        ASSERT_TRUE(BitwiseEqual(ys.data<float>(), full.data<float>() + r * n, (e - r) * n))
            << what << " rows " << r << ".." << e << " threads " << threads << " bf16_activations "
            << bf16_activations;
      }
    }
  }
  // A copy of the row-major weight `w` in a tiled `layout` (tensor.h).
  Tensor Tiled(const Tensor& w, Layout layout) {
    Tensor t = backend_->NewTensor(w.dtype(), w.shape());
    const int64_t rows = TileGeometryOf(layout).rows;
    PackRowTiles(layout, static_cast<const uint8_t*>(w.raw()), static_cast<uint8_t*>(t.raw()),
                 w.dim(0), RowBytes(w), 0, (w.dim(0) + rows - 1) / rows);
    return Tensor(t.buffer(), 0, w.dtype(), w.shape(), layout);
  }
  Tensor RowTiled(const Tensor& w) { return Tiled(w, Layout::kRowTiles); }
  // The layouts of `w` whose kernels the dense tests must cover: row-major, and the 16-row
  // panels where `ops` stores weights in them (AVX2 and AVX-512 CPUs: their broadcast-x kernels
  // sum in another order than the row-major ones; BF16 under vdpbf16ps in k-pair panels). Row
  // tiles need no entry: they are bitwise row-major
  // (RowTiledWeightsGiveBitwiseTheRowMajorResults). Elsewhere (ARM64) only row-major.
  std::vector<Tensor> KernelLayouts(const FastCpuOps& ops, const Tensor& w) {
    std::vector<Tensor> out = {w};
    const Layout layout = ops.DenseLayoutFor(w);
    if (layout != Layout::kRowMajor && layout != Layout::kRowTiles) out.push_back(Tiled(w, layout));
    return out;
  }
  static std::string LayoutLabel(const Tensor& w) {
    return w.layout() == Layout::kRowMajor ? " row-major" : " panels";
  }
  void ExpectLinearManyMatchesSeparate(Ops& ops, const Tensor& x, const std::vector<Weight>& w,
                                       const std::vector<Tensor>& b, const std::string& label) {
    xinfer::ExpectLinearManyMatchesSeparate(*backend_, ops, x, w, b, label);
  }

  std::unique_ptr<Backend> backend_ = CreateCpuBackend();
  FastCpuOps fast_;
  CpuOps ref_;
  std::mt19937 rng_{7};
};

// Which kernels this process runs: on ARM64 (NEON everywhere) and under XINFER_ISA=avx2|sse4 the
// Highway ones, so that the suites below test them there (CTest's backend_tests_simd_* runs).
TEST_F(FastCpuOpsTest, KernelsInUse) {
  const cpu::CpuFeatures& f = cpu::DetectCpuFeatures();
  const std::string name = cpu::KernelIsaName();
  RecordProperty("kernels", name);
  std::printf("kernels in use: %s\n", name.c_str());
  const char* cap = std::getenv("XINFER_ISA");
  const std::string isa = cap != nullptr ? cap : "";
#if defined(__aarch64__)
  EXPECT_TRUE(f.simd);
  EXPECT_EQ(name.rfind("simd-", 0), 0u) << name;
#endif
  // (An x86 CPU without AVX2 gets Highway's SSE4 target under XINFER_ISA=avx2.)
  const std::string expected = isa == "avx2"       ? (f.avx2 ? "simd-AVX2" : "simd-SSE4")
                               : isa == "sse4"     ? "simd-SSE4"
                               : isa == "portable" ? "portable"
                                                   : name;
  EXPECT_EQ(name, expected);
  EXPECT_EQ(f.avx512, name.rfind("avx512", 0) == 0) << name;
}

// Both BF16 paths: F32 activations (default) and, with bf16_activations, activations rounded to
// BF16 (the reference rounds them too; on CPUs without AVX512-BF16 that option has no effect).
TEST_F(FastCpuOpsTest, LinearMatchesDoubleReferenceAllDtypesOddShapes) {
  for (bool bf16_activations : {false, true}) {
    FastCpuOps ops(bf16_activations);
    const bool bf16_dot = ops.bf16_path() == cpu::Bf16Path::kBf16Dot;
    if (bf16_activations && cpu::DetectCpuFeatures().avx512_bf16) {
      ASSERT_TRUE(bf16_dot);
    }
    for (DType dt : {DType::kF32, DType::kBF16, DType::kF16}) {
      for (int64_t k : {1, 7, 16, 17, 31, 32, 33, 100, 129, 901}) {
        for (auto [t, n] : {std::pair{1, 1}, std::pair{1, 13}, std::pair{3, 7}, std::pair{4, 6},
                            std::pair{5, 37}, std::pair{9, 64}, std::pair{17, 131}}) {
          Tensor x = Random(DType::kF32, {t, k});
          Tensor row_major = Random(dt, {n, k});
          Tensor b = Random(DType::kBF16, {n});
          for (const Tensor& w : KernelLayouts(ops, row_major)) {
            Tensor y = backend_->NewTensor(DType::kF32, {t, n});
            ops.Linear(x, w, &b, y);
            for (int i = 0; i < t; ++i)
              for (int j = 0; j < n; ++j) {
                double ref = At(b, j), mag = std::fabs(ref);
                for (int c = 0; c < k; ++c) {
                  double xv = At(x, i * k + c);
                  if (dt == DType::kBF16 && bf16_dot)
                    xv = Bf16ToF32(F32ToBf16(static_cast<float>(xv)));
                  ref += xv * At(row_major, j * k + c);
                  mag += std::fabs(xv * At(row_major, j * k + c));
                }
                ASSERT_NEAR(y.data<float>()[i * n + j], ref, 1e-5 * mag + 1e-6)
                    << DTypeName(dt) << LayoutLabel(w) << " T=" << t << " K=" << k << " N=" << n
                    << " at " << i << "," << j << " bf16_activations " << bf16_activations;
              }
          }
        }
      }
    }
  }
}

// The batch-invariance property the engine relies on: Linear of a row is bitwise the same
// whether it runs alone, in any slice of a batch, with any thread count.
TEST_F(FastCpuOpsTest, LinearRowsAreBitwiseBatchInvariant) {
  // 4864: 37 BF16 rows of x exceed the AVX-512 BF16-dot kernel's streaming size (256 KiB; the
  // others' 64 KiB is past at 896 already), so only CPUs with AVX-512 need it.
  const bool avx512 = cpu::DetectCpuFeatures().avx512;
  for (bool bf16_activations : {false, true}) {
    FastCpuOps ops(bf16_activations);
    for (DType dt : {DType::kF32, DType::kBF16, DType::kF16}) {
      for (int64_t k : {64, 129, 896, 4864}) {
        if (k == 4864 && !avx512) continue;
        const int64_t t = 37, n = 203;
        Tensor x = Random(DType::kF32, {t, k});
        Tensor b = Random(DType::kF32, {n});
        for (const Tensor& w : KernelLayouts(ops, Random(dt, {n, k}))) {
          Tensor full = backend_->NewTensor(DType::kF32, {t, n});
          ops.Linear(x, w, &b, full);
          ExpectChunksBitwise(
              x, full, bf16_activations, {1, 2, 3, 4, 5, 16, 37},
              std::string(DTypeName(dt)) + LayoutLabel(w) + " K=" + std::to_string(k),
              [&](FastCpuOps& o, Tensor& xs, Tensor& ys) { o.Linear(xs, w, &b, ys); });
          if (HasFatalFailure()) return;
        }
      }
    }
  }
}

// Row tiles (tensor.h) change where a weight's bytes lie, not the arithmetic: Linear on tiled
// weights is bitwise Linear on the same weights row-major, for every AVX-512 path (F32 FMA on
// F32/F16/BF16 weights, BF16 widen, BF16 dot) and Highway's (AVX2, SSE4 under XINFER_ISA, NEON),
// a short last tile (N = 203: 5 rows), decode, streamed and L2-blocked row counts and several
// thread counts. The reference ops (Linear, Embedding) read either layout.
TEST_F(FastCpuOpsTest, RowTiledWeightsGiveBitwiseTheRowMajorResults) {
  const cpu::CpuFeatures& f = cpu::DetectCpuFeatures();
  if (!f.avx512 && !f.simd) GTEST_SKIP() << "row tiles are for the SIMD kernels";
  const int64_t n = 203;
  for (bool bf16_activations : {false, true}) {
    for (DType dt : {DType::kF32, DType::kBF16, DType::kF16}) {
      // K 1344: 42 units; T 26 rows of x are past the 64 KiB streamed limit (L2-blocked loop)
      // at K >= 896. Sizes kept small: the test runs on SVE under qemu too.
      for (int64_t k : {64, 896, 1344}) {
        Tensor w = Random(dt, {n, k});
        Tensor tiled = RowTiled(w);
        ASSERT_NE(std::memcmp(w.raw(), tiled.raw(), w.size_bytes()), 0);  // really reordered
        // A kernel reads the tiles (FastCpuOps would otherwise fall back to the reference):
        // every AVX-512 and fixed-width Highway target; SVE only up to 512-bit vectors.
        const bool reads = f.avx512 || cpu::simd::RowTilesFit(DTypeSize(dt));
        // What the backend stores: panels on AVX2 and AVX-512 CPUs (the other kernels still read
        // row tiles there: XINFER_DENSE_PANELS=0) — k-pair groups (kDwordTiles64) for BF16
        // weights under vdpbf16ps —, row tiles elsewhere.
        const bool bf16_dot = dt == DType::kBF16 &&
                              cpu::SelectBf16Path(f, bf16_activations) == cpu::Bf16Path::kBf16Dot;
        const Layout want = !cpu::DensePanelsSupport(dt, f)
                                ? (reads ? Layout::kRowTiles : Layout::kRowMajor)
                            : bf16_dot ? Layout::kDwordTiles64
                                       : cpu::DensePanelsLayout(dt, f);
        ASSERT_EQ(FastCpuOps(bf16_activations, 1).DenseLayoutFor(w), want) << DTypeName(dt);
        if (!reads) continue;
        Tensor b = Random(DType::kF32, {n});
        for (int64_t t : {1, 5, 16, 26}) {
          Tensor x = Random(DType::kF32, {t, k});
          for (int threads : {1, 3}) {
            FastCpuOps ops(bf16_activations, threads);
            Tensor want = backend_->NewTensor(DType::kF32, {t, n});
            Tensor got = backend_->NewTensor(DType::kF32, {t, n});
            ops.Linear(x, w, &b, want);
            ops.Linear(x, tiled, &b, got);
            ASSERT_TRUE(BitwiseEqual(got.data<float>(), want.data<float>(), t * n))
                << DTypeName(dt) << " K=" << k << " T=" << t << " threads " << threads
                << " bf16_activations " << bf16_activations;
          }
        }
      }
    }
  }
  CpuOps ref;
  Tensor w = Random(DType::kBF16, {n, 64});
  Tensor tiled = RowTiled(w);
  Tensor x = Random(DType::kF32, {3, 64});
  Tensor want = backend_->NewTensor(DType::kF32, {3, n}),
         got = backend_->NewTensor(DType::kF32, {3, n});
  ref.Linear(x, w, nullptr, want);
  ref.Linear(x, tiled, nullptr, got);
  EXPECT_TRUE(BitwiseEqual(got.data<float>(), want.data<float>(), 3 * n));
  const std::vector<int32_t> ids = {0, 5, 6, 197, 198, 202};
  Tensor ew = backend_->NewTensor(DType::kF32, {6, 64}),
         eg = backend_->NewTensor(DType::kF32, {6, 64});
  ref.Embedding(w, ids, ew);
  FastCpuOps fast;
  fast.Embedding(tiled, ids, eg);
  EXPECT_TRUE(BitwiseEqual(eg.data<float>(), ew.data<float>(), 6 * 64));
}

// The dense panels (cpu_kernels_dense_panels_avx2.cc, _avx512.cc: whichever this CPU runs;
// CTest's XINFER_ISA=avx2 run takes the AVX2 one) compute each element as documented:
// acc = fma(x[k], w[k], acc) over k from 0, then acc + bias, bitwise, for every path of the kernel
// (AVX2: rows of x against 1..3 panels at once, 1..6-row tiles; AVX-512: 1..6-row tiles on 64-row
// groups; several tiles of x, streamed and L2-blocked orders, the partial last panel or group
// — 11 and 48 rows —, groups past L2 at K = 4864, whose streamed order carries the sums across
// k-blocks of uneven length), every dtype, with and without a bias, 1 and 3 threads. A change of
// the lane order (BF16's even/odd rows), of the summation order or of the bias step fails it.
TEST_F(FastCpuOpsTest, DensePanelsAreBitwiseTheDocumentedFmaSequence) {
  const cpu::CpuFeatures& f = cpu::DetectCpuFeatures();
  if (!cpu::DensePanelsSupport(DType::kF32, f))
    GTEST_SKIP() << "the dense panels are for AVX2 and AVX-512 CPUs";
  for (DType dt : {DType::kF32, DType::kBF16, DType::kF16}) {
    for (auto [n, k] : {std::pair{203, 5}, std::pair{112, 33}, std::pair{128, 4864}}) {
      Tensor w = Random(dt, {n, k});
      Tensor panels = Tiled(w, cpu::DensePanelsLayout(dt, f));
      Tensor b = Random(DType::kF32, {n});
      for (int64_t t : {1, 2, 3, 4, 6, 7, 8, 13, 17}) {
        Tensor x = Random(DType::kF32, {t, k});
        std::vector<float> want(t * n);
        for (bool with_bias : {true, false}) {
          for (int64_t i = 0; i < t; ++i)
            for (int64_t j = 0; j < n; ++j) {
              float acc = 0.f;
              for (int64_t c = 0; c < k; ++c)
                acc =
                    std::fma(x.data<float>()[i * k + c], static_cast<float>(At(w, j * k + c)), acc);
              want[i * n + j] = with_bias ? acc + b.data<float>()[j] : acc;
            }
          for (int threads : {1, 3}) {
            FastCpuOps ops(false, threads);
            Tensor y = backend_->NewTensor(DType::kF32, {t, n});
            ops.Linear(x, panels, with_bias ? &b : nullptr, y);
            ASSERT_TRUE(BitwiseEqual(y.data<float>(), want.data(), t * n))
                << DTypeName(dt) << " N=" << n << " K=" << k << " T=" << t << " bias " << with_bias
                << " threads " << threads;
          }
        }
      }
    }
  }
}

#if defined(__x86_64__)
// One lane of vdpbf16ps per k-pair of x and w (BF16), in k order from zero: the BF16-dot panels'
// documented sequence, evaluated with the instruction itself (its rounding is the CPU's).
__attribute__((target("avx512f,avx512bf16"))) float Bf16DotChain(const uint16_t* x,
                                                                 const uint16_t* w, int64_t k) {
  __m512 acc = _mm512_setzero_ps();
  for (int64_t c = 0; c < k; c += 2) {
    uint32_t xp, wp;
    std::memcpy(&xp, x + c, sizeof(xp));
    std::memcpy(&wp, w + c, sizeof(wp));
    __m512i xv = _mm512_set1_epi32(static_cast<int>(xp)),
            wv = _mm512_set1_epi32(static_cast<int>(wp));
    acc = _mm512_dpbf16_ps(acc, reinterpret_cast<__m512bh&>(xv), reinterpret_cast<__m512bh&>(wv));
  }
  return _mm512_cvtss_f32(acc);
}

// The BF16-dot panels (`--dtype bfloat16` on AVX512-BF16 CPUs: BF16 weights in 64-row groups of
// k-pairs, x rounded to BF16) compute each element as documented: one vdpbf16ps per k-pair in k
// order, then the bias, bitwise, for every path (1..6-row tiles, several tiles of x in streamed
// and L2-blocked order, the partial last group of 11, 48 or 37 rows, K = 4864: streamed in
// k-blocks of 271 and 264 pairs, the sums carried in out between them), with and without
// a bias, 1 and 3 threads. Pairs taken in another order, or the bias folded in first, fail it.
TEST_F(FastCpuOpsTest, Bf16DotPanelsAreBitwiseTheDocumentedDotSequence) {
  if (!cpu::DetectCpuFeatures().avx512_bf16) GTEST_SKIP() << "needs AVX512-BF16";
  for (auto [n, k] :
       {std::pair{203, 6}, std::pair{112, 34}, std::pair{37, 896}, std::pair{128, 4864}}) {
    Tensor w = Random(DType::kBF16, {n, k});
    FastCpuOps layout_ops(true, 1);
    ASSERT_EQ(layout_ops.DenseLayoutFor(w), Layout::kDwordTiles64);
    Tensor panels = Tiled(w, Layout::kDwordTiles64);
    Tensor b = Random(DType::kF32, {n});
    for (int64_t t : {1, 2, 3, 4, 6, 7, 8, 13, 17, 33}) {
      if (t == 33 && k != 4864) continue;  // past 256 KiB of BF16 x: the L2-blocked order
      Tensor x = Random(DType::kF32, {t, k});
      std::vector<uint16_t> xb(t * k);
      for (int64_t i = 0; i < t * k; ++i) xb[i] = F32ToBf16(x.data<float>()[i]);
      std::vector<float> dots(t * n);
      for (int64_t i = 0; i < t; ++i)
        for (int64_t j = 0; j < n; ++j)
          dots[i * n + j] = Bf16DotChain(&xb[i * k], w.data<uint16_t>() + j * k, k);
      for (bool with_bias : {true, false}) {
        std::vector<float> want(dots);
        if (with_bias)
          for (int64_t i = 0; i < t * n; ++i) want[i] += b.data<float>()[i % n];
        for (int threads : {1, 3}) {
          FastCpuOps ops(true, threads);
          Tensor y = backend_->NewTensor(DType::kF32, {t, n});
          ops.Linear(x, panels, with_bias ? &b : nullptr, y);
          ASSERT_TRUE(BitwiseEqual(y.data<float>(), want.data(), t * n))
              << "N=" << n << " K=" << k << " T=" << t << " bias " << with_bias << " threads "
              << threads;
        }
      }
    }
  }
}
#endif  // defined(__x86_64__)

// LinearMany (q/k/v and gate/up as one job) gives bitwise what separate Linear calls give: every
// kernel path, both layouts, ranges that straddle two parts, per-part biases (BF16: converted
// into separate scratch), several thread counts; a quantized part makes it fall back to
// separate calls, as does the reference.
TEST_F(FastCpuOpsTest, LinearManyIsBitwiseSeparateLinears) {
  const int64_t k = 128;
  for (bool bf16_activations : {false, true}) {
    for (DType dt : {DType::kF32, DType::kBF16, DType::kF16}) {
      for (bool tiles : {false, true}) {
        std::vector<Weight> w;
        std::vector<Tensor> b;
        for (int64_t n : {203, 37, 37}) {
          Tensor d = Random(dt, {n, k});
          // tiles: the layout the backend stores for this CPU's kernels (row tiles or panels).
          const Layout layout = FastCpuOps(bf16_activations).DenseLayoutFor(d);
          w.emplace_back(tiles && layout != Layout::kRowMajor ? Tiled(d, layout) : d);
          b.push_back(Random(DType::kBF16, {n}));
        }
        for (int64_t t : {1, 5, 37}) {
          Tensor x = Random(DType::kF32, {t, k});
          for (int threads : {1, 2, 3}) {
            FastCpuOps ops(bf16_activations, threads);
            ExpectLinearManyMatchesSeparate(ops, x, w, b,
                                            std::string(DTypeName(dt)) + " tiles " +
                                                std::to_string(tiles) + " threads " +
                                                std::to_string(threads) + " bf16_activations " +
                                                std::to_string(bf16_activations));
            if (HasFatalFailure()) return;
          }
        }
      }
    }
  }
  // AWQ g128 and Q4_0 parts (the vdpbf16ps 4-bit kernel on AVX512-BF16 CPUs: one job), with
  // BF16 biases on two parts.
  for (QuantType type : {QuantType::kAwq4, QuantType::kQ4_0}) {
    for (bool bf16_activations : {false, true}) {
      const int64_t kq = 256;
      std::vector<Weight> w;
      std::vector<Tensor> b;
      for (int64_t n : {203, 37, 40}) {
        w.emplace_back(MakeQuant(*backend_, type, n, kq, static_cast<uint32_t>(n), nullptr, 128));
        b.push_back(Random(DType::kBF16, {n}));
      }
      for (int64_t t : {1, 5}) {
        Tensor x = Random(DType::kF32, {t, kq});
        for (int threads : {1, 3}) {
          FastCpuOps ops(bf16_activations, threads);
          ExpectLinearManyMatchesSeparate(ops, x, w, b,
                                          std::string(QuantTypeName(type)) + " threads " +
                                              std::to_string(threads) + " bf16_activations " +
                                              std::to_string(bf16_activations));
          if (HasFatalFailure()) return;
        }
      }
    }
  }
  // A quantized part, and the reference ops: separate calls.
  Weight q(MakeQuant(*backend_, QuantType::kQ8_0, 40, k, 3, nullptr));
  Weight d(Random(DType::kBF16, {24, k}));
  Tensor x = Random(DType::kF32, {3, k});
  for (bool reference : {false, true}) {
    std::unique_ptr<Ops> ops = reference ? std::unique_ptr<Ops>(new CpuOps(2))
                                         : std::unique_ptr<Ops>(new FastCpuOps(false, 2));
    Tensor wq = backend_->NewTensor(DType::kF32, {3, 40}),
           wd = backend_->NewTensor(DType::kF32, {3, 24});
    Tensor gq = backend_->NewTensor(DType::kF32, {3, 40}),
           gd = backend_->NewTensor(DType::kF32, {3, 24});
    ops->Linear(x, q, nullptr, wq);
    ops->Linear(x, d, nullptr, wd);
    const Ops::LinearOut parts[] = {{&q, nullptr, &gq}, {&d, nullptr, &gd}};
    ops->LinearMany(x, parts);
    EXPECT_TRUE(BitwiseEqual(gq.data<float>(), wq.data<float>(), 3 * 40)) << reference;
    EXPECT_TRUE(BitwiseEqual(gd.data<float>(), wd.data<float>(), 3 * 24)) << reference;
  }
}

// Quantized Linear (Q8_0, Q4_0, AWQ4 with several group sizes): close to the plain reference
// (QuantLinearRef) for odd row counts and both kernel paths (direct for <= 3 rows of x, dequantized
// panel above), and bitwise the same for a row whatever the batch around it and the thread count.
// With bf16_activations the vdpbf16ps 4-bit kernels (AVX512-BF16 CPUs) take x rounded to BF16,
// and so does the reference they are compared with.
// Without AVX-512, Highway's kernels (every format) take the same checks, and with it the formats
// the AVX-512 kernels do not take (Q5_0, Q4_1, Q5_1, K-quants); the dequantized rows they multiply
// must equal DequantizeRow's exactly: the result is bitwise Highway's Linear over those rows.
TEST_F(FastCpuOpsTest, QuantLinearMatchesReferenceAndIsBitwiseBatchInvariant) {
  const cpu::CpuFeatures& features = cpu::DetectCpuFeatures();
  if (!features.avx512 && !features.simd)
    GTEST_SKIP() << "no SIMD kernels on this CPU: FastCpuOps uses the reference";
  struct Case {
    QuantType type;
    int64_t group;
  };
  for (bool bf16_activations : {false, true}) {
    FastCpuOps ops(bf16_activations);
    for (Case c :
         {Case{QuantType::kQ8_0, 0}, Case{QuantType::kQ4_0, 0}, Case{QuantType::kAwq4, 32},
          Case{QuantType::kAwq4, 64}, Case{QuantType::kAwq4, 128}, Case{QuantType::kQ4_K, 0},
          Case{QuantType::kQ6_K, 0}, Case{QuantType::kQ5_0, 0}, Case{QuantType::kQ4_1, 0},
          Case{QuantType::kQ5_1, 0}, Case{QuantType::kQ5_K, 0}}) {
      const bool k_quant =
          c.type == QuantType::kQ4_K || c.type == QuantType::kQ5_K || c.type == QuantType::kQ6_K;
      // The AVX-512 kernels take Q8_0, Q4_0 and AWQ4; the other formats run Highway's panel path.
      const bool avx512_kernel =
          c.type == QuantType::kQ8_0 || c.type == QuantType::kQ4_0 || c.type == QuantType::kAwq4;
      for (int64_t k : {128, 384, 512, 896}) {
        if (c.group > 0 && k % c.group != 0) continue;
        if (k_quant != (k % 256 == 0)) continue;
        const int64_t t = 19, n = 77;
        std::vector<float> wd;
        QuantTensor w = MakeQuant(*backend_, c.type, n, k, static_cast<uint32_t>(k + c.group), &wd,
                                  c.group > 0 ? c.group : 32);
        if (features.avx512) {
          ASSERT_EQ(cpu::avx512::QuantKernelSupports(w), avx512_kernel);
        }
        Tensor x = Random(DType::kF32, {t, k});
        Tensor b = Random(DType::kF32, {n});
        Tensor full = backend_->NewTensor(DType::kF32, {t, n});
        ops.QuantLinear(x, w, &b, full);
        const bool rounds_x = ops.bf16_path() == cpu::Bf16Path::kBf16Dot && features.avx512 &&
                              cpu::avx512::NibbleBf16Supports(w, features);
        Tensor xr = Copy(x);
        if (rounds_x)
          for (int64_t i = 0; i < xr.numel(); ++i)
            xr.data<float>()[i] = Bf16ToF32(F32ToBf16(xr.data<float>()[i]));
        Tensor ref = backend_->NewTensor(DType::kF32, {t, n});
        cpu::QuantLinearRef(xr, w, &b, ref);
        for (int64_t i = 0; i < t * n; ++i) {
          double mag = std::fabs(At(b, i % n));
          for (int64_t j = 0; j < k; ++j)
            mag += std::fabs(x.data<float>()[i / n * k + j] * wd[i % n * k + j]);
          ASSERT_NEAR(full.data<float>()[i], ref.data<float>()[i], 1e-5 * mag)
              << QuantTypeName(c.type) << " g" << c.group << " K=" << k << " at " << i
              << " bf16_activations " << bf16_activations;
        }
        // Highway's kernels multiply rows equal to DequantizeRow's with Linear's F32 tiles: the
        // same bits as Highway's Linear over the dequantized weight, for every row count (the
        // chunks below), so a dequantizer that rounds differently fails here.
        if (!(features.avx512 && avx512_kernel)) {
          std::vector<float> dense(n * k);
          for (int64_t r = 0; r < n; ++r) DequantizeRow(w, r, dense.data() + r * k);
          Tensor expect = backend_->NewTensor(DType::kF32, {t, n});
          cpu::LinearTask lt;
          lt.x = x.data<float>();
          lt.ldx = k;
          lt.w = dense.data();
          lt.k = k;
          lt.bias = b.data<float>();
          lt.out = expect.data<float>();
          lt.ldo = n;
          cpu::simd::Linear(lt, 0, t, 0, n);
          ASSERT_TRUE(BitwiseEqual(full.data<float>(), expect.data<float>(), t * n))
              << QuantTypeName(c.type) << " g" << c.group << " K=" << k << " on "
              << cpu::simd::TargetName() << " bf16_activations " << bf16_activations;
        }
        ExpectChunksBitwise(
            x, full, bf16_activations, {1, 2, 3, 4, 7, 19},
            std::string(QuantTypeName(c.type)) + " g" + std::to_string(c.group) +
                " K=" + std::to_string(k),
            [&](FastCpuOps& o, Tensor& xs, Tensor& ys) { o.QuantLinear(xs, w, &b, ys); });
        if (HasFatalFailure()) return;
      }
    }
  }
}

TEST_F(FastCpuOpsTest, ElementwiseOpsMatchReference) {
  for (int64_t n : {1, 15, 16, 17, 64, 896, 4864 * 3 + 5, 70001}) {
    Tensor a = Random(DType::kF32, {n}, 4.f);
    Tensor b = Random(DType::kF32, {n});
    Tensor o1 = backend_->NewTensor(DType::kF32, {n});
    Tensor o2 = backend_->NewTensor(DType::kF32, {n});
    fast_.SiluMul(a, b, o1);
    ref_.SiluMul(a, b, o2);
    for (int64_t i = 0; i < n; ++i)
      ASSERT_NEAR(o1.data<float>()[i], o2.data<float>()[i],
                  2e-6 * (1 + std::fabs(o2.data<float>()[i])))
          << n << " " << i;
    fast_.Add(a, b, o1);
    ref_.Add(a, b, o2);
    ASSERT_TRUE(BitwiseEqual(o1.data<float>(), o2.data<float>(), n));
  }
  // exp over the whole useful range, including underflow to 0 and the clamp near overflow.
  std::vector<float> x, y(2001);
  for (int i = 0; i <= 2000; ++i) x.push_back(-110.f + i * 0.0992f);  // up to 88.4
  const cpu::CpuFeatures& f = cpu::DetectCpuFeatures();
  for (int impl = 0; impl < 2; ++impl) {
    if (impl == 0 && !f.avx512) continue;
    if (impl == 1 && !f.simd) continue;
    std::fill(y.begin(), y.end(), 0.f);
    if (impl == 0) cpu::avx512::Exp(x.data(), static_cast<int64_t>(x.size()), y.data());
    if (impl == 1) cpu::simd::Exp(x.data(), static_cast<int64_t>(x.size()), y.data());
    for (size_t i = 0; i < x.size(); ++i) {
      const double ref = std::exp(static_cast<double>(x[i]));
      ASSERT_NEAR(y[i], ref, 4e-7 * ref + 1e-37) << x[i] << (impl == 0 ? " avx512" : " simd");
    }
  }
}

TEST_F(FastCpuOpsTest, RmsNormAndRopeMatchReference) {
  for (DType dt : {DType::kF32, DType::kBF16, DType::kF16}) {
    for (auto [rows, n] :
         {std::pair{1, 7}, std::pair{3, 64}, std::pair{37, 896}, std::pair{5, 33}}) {
      Tensor x = Random(DType::kF32, {rows, n}, 3.f);
      Tensor w = Random(dt, {n});
      Tensor o1 = backend_->NewTensor(DType::kF32, {rows, n});
      Tensor o2 = backend_->NewTensor(DType::kF32, {rows, n});
      fast_.RmsNorm(x, w, 1e-6f, o1);
      ref_.RmsNorm(x, w, 1e-6f, o2);
      for (int64_t i = 0; i < rows * n; ++i)
        ASSERT_NEAR(o1.data<float>()[i], o2.data<float>()[i],
                    1e-6 * (1 + std::fabs(o2.data<float>()[i])));
      fast_.RmsNorm(x, w, 1e-6f, x);  // in place
      ASSERT_TRUE(BitwiseEqual(x.data<float>(), o1.data<float>(), rows * n));
    }
  }
  for (int64_t dim : {8, 64, 128}) {
    // The fast op caches its cos/sin table: a spec that differs only in its scale or in one
    // frequency, and the first one again, must each get their own table.
    const RopeSpec plain = PlainRope(1e6, dim);
    RopeSpec scaled = plain;
    scaled.scale = 1.1386;
    RopeSpec stretched = scaled;
    stretched.inv_freq.back() /= 4;
    for (const RopeSpec* rope :
         std::initializer_list<const RopeSpec*>{&plain, &scaled, &stretched, &plain}) {
      Tensor x = Random(DType::kF32, {5, 3, dim});
      Tensor y = Copy(x);
      std::vector<int32_t> pos = {0, 7, 4095, 4096, 70000};
      fast_.Rope(x, pos, *rope);
      ref_.Rope(y, pos, *rope);
      for (int64_t i = 0; i < x.numel(); ++i)
        ASSERT_NEAR(x.data<float>()[i], y.data<float>()[i],
                    1e-6 * (1 + std::fabs(y.data<float>()[i])));
    }
  }
}

// Random sequences with scattered blocks; the fast kernel against the reference, then bitwise:
// every query row computed in one batch equals the same row computed alone.
TEST_F(FastCpuOpsTest, PagedAttentionMatchesReferenceAndIsBatchInvariant) {
  // d 56 and 8: the portable kernel's weighted sum in blocks of 4 + 2 + 1 and 1 vectors (AVX2).
  for (auto [hq, hkv, d] :
       {std::tuple{4, 2, 64}, std::tuple{14, 2, 64}, std::tuple{2, 2, 32}, std::tuple{8, 8, 128},
        std::tuple{3, 1, 48}, std::tuple{6, 2, 56}, std::tuple{2, 1, 8}}) {
    const int block = 16, num_blocks = 64, max_blocks = 12;
    std::vector<int32_t> ctx = {1, 37, 150, 16, 191};
    const int seqs = static_cast<int>(ctx.size());
    const std::vector<int32_t> tables =
        ScatteredBlockTables(ctx, block, num_blocks, max_blocks, rng_);
    Tensor kc = Random(DType::kF32, {num_blocks * block, hkv, d});
    Tensor vc = Random(DType::kF32, {num_blocks * block, hkv, d});
    // Queries: the last min(ctx, 5) positions of each sequence (a prefill chunk or a decode).
    std::vector<int32_t> qstart = {0}, positions;
    for (int s = 0; s < seqs; ++s) {
      for (int p = std::max(0, ctx[s] - 5); p < ctx[s]; ++p) positions.push_back(p);
      qstart.push_back(static_cast<int32_t>(positions.size()));
    }
    const int64_t t = static_cast<int64_t>(positions.size());
    Tensor q = Random(DType::kF32, {t, hq, d});
    Tensor o1 = backend_->NewTensor(DType::kF32, {t, hq, d});
    Tensor o2 = backend_->NewTensor(DType::kF32, {t, hq, d});
    Ops::PagedAttentionBatch batch{qstart, positions, tables, max_blocks, block};
    fast_.PagedAttention(q, kc, vc, batch, o1);
    ref_.PagedAttention(q, kc, vc, batch, o2);
    for (int64_t i = 0; i < q.numel(); ++i)
      ASSERT_NEAR(o1.data<float>()[i], o2.data<float>()[i], 2e-6) << hq << "/" << hkv << "/" << d;
    for (int s = 0; s < seqs; ++s) {
      for (int32_t r = qstart[s]; r < qstart[s + 1]; ++r) {
        std::vector<int32_t> one_start = {0, 1}, one_pos = {positions[r]};
        std::vector<int32_t> one_table(tables.begin() + s * max_blocks,
                                       tables.begin() + (s + 1) * max_blocks);
        Tensor q1 = Copy(q.Slice0(r, r + 1));
        Tensor out1 = backend_->NewTensor(DType::kF32, {1, hq, d});
        Ops::PagedAttentionBatch one{one_start, one_pos, one_table, max_blocks, block};
        fast_.PagedAttention(q1, kc, vc, one, out1);
        ASSERT_TRUE(BitwiseEqual(out1.data<float>(), o1.data<float>() + r * hq * d, hq * d))
            << "row " << r << " of sequence " << s;
      }
    }
  }
}

using AttentionGroupKernel = void (*)(const float*, int64_t, int, const float*, const float*,
                                      const int64_t*, int64_t, int64_t, float, float*, float*,
                                      int64_t);

// A grouped attention kernel (up to max_heads query heads per call): a head's output is the same
// bits whichever heads share its call (its score is reduced alone, its weighted sum has its own
// accumulators), and near softmax(q . k * scale) . v in double.
void ExpectGroupHeadsIndependentAndNearReference(AttentionGroupKernel kernel, int64_t d,
                                                 int max_heads) {
  std::mt19937 rng(7);
  std::normal_distribution<float> dist(0.f, 1.f);
  for (int64_t n : {1, 2, 3, 7, 33, 300}) {
    // Keys scattered over a cache of 2n rows, in a shuffled order.
    std::vector<float> k(2 * n * d), v(2 * n * d), q(max_heads * d);
    for (float& x : k) x = dist(rng);
    for (float& x : v) x = dist(rng);
    for (float& x : q) x = dist(rng);
    std::vector<int64_t> rows(2 * n);
    for (int64_t i = 0; i < 2 * n; ++i) rows[i] = i;
    std::shuffle(rows.begin(), rows.end(), rng);
    std::vector<int64_t> off(n);
    for (int64_t p = 0; p < n; ++p) off[p] = rows[p] * d;
    const float scale = 1.f / std::sqrt(static_cast<float>(d));
    std::vector<float> scratch(4 * (n + 3)), all(max_heads * d), one(d), rest((max_heads - 1) * d);
    kernel(q.data(), d, max_heads, k.data(), v.data(), off.data(), n, d, scale, scratch.data(),
           all.data(), d);
    if (max_heads > 1) {  // all heads but the first: the last lane(s) idle
      kernel(q.data() + d, d, max_heads - 1, k.data(), v.data(), off.data(), n, d, scale,
             scratch.data(), rest.data(), d);
      ASSERT_TRUE(BitwiseEqual(rest.data(), all.data() + d, (max_heads - 1) * d)) << d << " " << n;
    }
    for (int h = 0; h < max_heads; ++h) {
      kernel(q.data() + h * d, d, 1, k.data(), v.data(), off.data(), n, d, scale, scratch.data(),
             one.data(), d);
      ASSERT_TRUE(BitwiseEqual(one.data(), all.data() + h * d, d)) << d << " " << n << " " << h;
      std::vector<double> s(n);
      double mx = -INFINITY, den = 0;
      for (int64_t p = 0; p < n; ++p) {
        double dot = 0;
        for (int64_t c = 0; c < d; ++c) dot += double{q[h * d + c]} * k[off[p] + c];
        s[p] = dot * scale;
        mx = std::max(mx, s[p]);
      }
      for (double& x : s) den += (x = std::exp(x - mx));
      for (int64_t c = 0; c < d; ++c) {
        double o = 0;
        for (int64_t p = 0; p < n; ++p) o += s[p] * v[off[p] + c];
        ASSERT_NEAR(one[c], o / den, 2e-6) << d << " " << n << " " << h << " " << c;
      }
    }
  }
}

TEST_F(FastCpuOpsTest, Avx2AttentionGroupHeadDoesNotDependOnItsNeighbours) {
  if (!cpu::DetectCpuFeatures().avx2) GTEST_SKIP() << "needs AVX2";
  for (int64_t d : {64, 56, 128, 8})
    ExpectGroupHeadsIndependentAndNearReference(cpu::avx2::AttentionGroup, d, 4);
}

// The AVX-512 grouped kernel likewise, 4 heads per call at d = 32 and 64, 2 at d = 128 (two keys
// per score reduction there).
TEST_F(FastCpuOpsTest, Avx512AttentionGroupHeadDoesNotDependOnItsNeighbours) {
  if (!cpu::DetectCpuFeatures().avx512) GTEST_SKIP() << "needs AVX-512";
  for (int64_t d : {32, 64, 128}) {
    ASSERT_TRUE(cpu::avx512::AttentionGroupSupports(d));
    ExpectGroupHeadsIndependentAndNearReference(cpu::avx512::AttentionGroup, d,
                                                cpu::avx512::AttentionGroupMaxHeads(d));
  }
  EXPECT_EQ(cpu::avx512::AttentionGroupMaxHeads(128), 2);
}

}  // namespace
}  // namespace xinfer
