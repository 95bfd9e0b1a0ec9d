// GGUF Q4_0 / Q8_0 and AWQ g128 with int8 activations (cpu_kernels_int8_avx512.cc,
// `--int8-activations`): the kernel against a plain evaluation written from the formats'
// description (x quantized per block of 32 to d = max|x| / 127 and q = round(x / d); exact integer
// block dots; scaled sums in double), bitwise batch and thread invariance, and LinearMany against
// separate calls.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/fast_cpu_ops.h"
#include "backend/cpu/linear_test_util.h"
#include "backend/cpu/quant_test_util.h"
#include "tensor/dtype.h"
#include "tensor/quant.h"

namespace xinfer {
namespace {

// One block of 32 x values as llama.cpp's quantize_row_q8_0 rounds it (d kept in F32).
void QuantizeXBlock(const float* x, float& d, int8_t q[32]) {
  float amax = 0;
  for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[i]));
  d = amax / 127.f;
  const float id = d != 0.f ? 1.f / d : 0.f;
  for (int i = 0; i < 32; ++i)
    q[i] = static_cast<int8_t>(std::clamp(std::nearbyint(x[i] * id), -127.f, 127.f));
}

// Weight block b (32 elements) of row r as integers and its scale: Q4_0 (d F16, 16 bytes: element
// j in the low nibble of byte j, element j + 16 in the high one, value q - 8), Q8_0 (d F16, 32
// int8), AWQ4 (byte i: element 2i low, 2i + 1 high; value q - z, the group's zero point and scale).
void WeightBlock(const QuantTensor& w, int64_t r, int64_t b, float& d, int q[32], int* zero) {
  *zero = 0;
  if (w.type == QuantType::kAwq4) {
    const int64_t groups = w.cols / w.group_size, g = 32 * b / w.group_size;
    d = w.scales.data<float>()[r * groups + g];
    const int z = static_cast<int>(w.zeros.data<float>()[r * groups + g]);
    *zero = z;
    for (int j = 0; j < 32; ++j) {
      const int64_t e = 32 * b + j;
      const uint8_t byte = w.row(r)[e / 2];
      q[j] = (e % 2 == 0 ? byte & 15 : byte >> 4) - z;
    }
    return;
  }
  const uint8_t* p = w.row(r) + b * (w.type == QuantType::kQ4_0 ? 18 : 34);
  uint16_t h;
  std::memcpy(&h, p, 2);
  d = F16ToF32(h);
  for (int j = 0; j < 32; ++j) {
    if (w.type == QuantType::kQ4_0) {
      q[j] = (j < 16 ? p[2 + j] & 15 : p[2 + j - 16] >> 4) - 8;
    } else {
      q[j] = static_cast<int8_t>(p[2 + j]);
    }
  }
}

class Int8ActivationsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!features_.avx2 && !features_.neon_dotprod)
      GTEST_SKIP() << "no int8-activation kernel on this CPU (AVX2 or ARM64 DotProd at least)";
  }
  // Whether this CPU runs the AVX-512 int8 kernels (every format); otherwise the GGUF formats of
  // BlockKernelFormat take the AVX2 or the ARM64 DotProd kernel (CTest runs this suite under
  // XINFER_ISA=avx512 and avx2 too, and under qemu on a Neoverse N1).
  bool Avx512Int8() const {
    return features_.avx512 && features_.avx512_vnni && features_.avx512_vbmi;
  }
  static bool BlockKernelFormat(QuantType type) {
    return type != QuantType::kAwq4;  // every GGUF format of the AVX-512 kernels
  }
  Tensor RandomX(int64_t t, int64_t k, float scale = 1.f) {
    Tensor x = backend_->NewTensor(DType::kF32, {t, k});
    std::normal_distribution<float> dist(0.f, scale);
    for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = dist(rng_);
    return x;
  }
  // `got` = x w^T + bias as the plain int8 evaluation gives it (w row-major): Q4_0 / Q8_0 / AWQ
  // from integer block dots of the bytes as the formats describe them (exact_blocks), the other
  // formats from the engine's dequantized row (DequantizeRow, checked against ggml's bytes by the
  // round-trip tests) against the int8 x. Within 1e-5 of the sum of the blocks' magnitudes; with
  // zero_per_group (the AWQ panel kernels: x q summed, the zero point applied per group from x's
  // sums; cpu_kernels_int8_panels_avx2.cc) a block's magnitude is that of x q and z x, whose
  // difference x (q - z) is the block's term.
  static void ExpectMatchesPlainInt8(const QuantTensor& w, const Tensor& x, const Tensor& bias,
                                     const Tensor& got, bool exact_blocks, const std::string& label,
                                     bool zero_per_group = false) {
    const int64_t t = x.dim(0), n = w.rows, k = w.cols, blocks = k / 32;
    for (int64_t i = 0; i < t; ++i) {
      std::vector<float> xd(blocks);
      std::vector<int8_t> xq(k);
      for (int64_t b = 0; b < blocks; ++b)
        QuantizeXBlock(x.data<float>() + i * k + 32 * b, xd[b], &xq[32 * b]);
      for (int64_t r = 0; r < n; ++r) {
        double want = bias.data<float>()[r], mag = std::fabs(want);
        std::vector<float> row(k);
        if (!exact_blocks) DequantizeRow(w, r, row.data());
        for (int64_t b = 0; b < blocks; ++b) {
          double term = 0;
          if (exact_blocks) {
            float wd;
            int wq[32], zero;
            WeightBlock(w, r, b, wd, wq, &zero);
            int64_t dot = 0, xsum = 0;
            for (int j = 0; j < 32; ++j) {
              dot += static_cast<int64_t>(wq[j]) * xq[32 * b + j];
              xsum += xq[32 * b + j];
            }
            term = static_cast<double>(wd) * xd[b] * static_cast<double>(dot);
            const double zero_term =
                static_cast<double>(wd) * xd[b] * zero * static_cast<double>(xsum);
            mag += zero_per_group ? std::fabs(term + zero_term) + std::fabs(zero_term)
                                  : std::fabs(term);
          } else {
            for (int j = 0; j < 32; ++j) {
              const double p = static_cast<double>(row[32 * b + j]) * xq[32 * b + j] * xd[b];
              term += p;
              mag += std::fabs(p);
            }
          }
          want += term;
        }
        ASSERT_NEAR(got.data<float>()[i * n + r], want, 1e-5 * mag + 1e-6)
            << label << " row " << i << " col " << r;
      }
    }
  }
  // QuantLinear on ops with int8 activations is bitwise `full` for any rows of x per call and
  // any threads.
  void ExpectBitwiseBatchInvariant(const QuantTensor& w, const Tensor& x, const Tensor& bias,
                                   const Tensor& full, const std::string& label) {
    ExpectQuantLinearBatchInvariant(
        *backend_, [](int threads) { return std::make_unique<FastCpuOps>(false, threads, true); },
        w, x, &bias, full, label);
  }

  const cpu::CpuFeatures& features_ = cpu::DetectCpuFeatures();
  std::unique_ptr<Backend> backend_ = CreateCpuBackend();
  std::mt19937 rng_{11};
};

TEST_F(Int8ActivationsTest, MatchesThePlainInt8EvaluationAndIsBitwiseBatchInvariant) {
  struct Case {
    QuantType type;
    int64_t k;
  };
  for (Case c :
       {Case{QuantType::kQ4_0, 128},  Case{QuantType::kQ4_0, 896},  Case{QuantType::kQ8_0, 64},
        Case{QuantType::kQ8_0, 192},  Case{QuantType::kQ8_0, 896},  Case{QuantType::kAwq4, 128},
        Case{QuantType::kAwq4, 896},  Case{QuantType::kQ5_0, 128},  Case{QuantType::kQ5_0, 896},
        Case{QuantType::kQ4_K, 256},  Case{QuantType::kQ4_K, 1024}, Case{QuantType::kQ6_K, 256},
        Case{QuantType::kQ6_K, 1024}, Case{QuantType::kQ5_K, 256},  Case{QuantType::kQ5_K, 1024},
        Case{QuantType::kQ4_1, 128},  Case{QuantType::kQ4_1, 896},  Case{QuantType::kQ5_1, 128},
        Case{QuantType::kQ5_1, 896},  Case{QuantType::kQ4_0, 96},   Case{QuantType::kQ4_1, 96},
        Case{QuantType::kQ5_1, 96},   Case{QuantType::kQ5_0, 96},   Case{QuantType::kQ8_0, 96}}) {
    const bool exact_blocks =
        c.type == QuantType::kQ4_0 || c.type == QuantType::kQ8_0 || c.type == QuantType::kAwq4;
    const std::string label = std::string(QuantTypeName(c.type)) + " K=" + std::to_string(c.k);
    const int64_t t = 19, n = 77;  // tails of the 4 x 4 tiles in both directions
    QuantTensor w = MakeQuant(*backend_, c.type, n, c.k, static_cast<uint32_t>(c.k), nullptr, 128);
    Tensor x = RandomX(t, c.k);
    // A row of zeros (d = 0) and a row with one large value (the others round to 0 or +-1).
    std::fill_n(x.data<float>() + 3 * c.k, c.k, 0.f);
    x.data<float>()[5 * c.k + 7] = 1000.f;
    Tensor bias = RandomX(1, n);
    FastCpuOps ops(false, 2, /*int8_activations=*/true);
    // K = 96 (no multiple of 128 or 64) takes the AVX2 kernel, on AVX-512 CPUs too.
    if (!Avx512Int8() && !BlockKernelFormat(c.type)) continue;
    ASSERT_TRUE(ops.UsesInt8Activations(w)) << label;
    Tensor full = backend_->NewTensor(DType::kF32, {t, n});
    ops.QuantLinear(x, w, &bias, full);

    ExpectMatchesPlainInt8(w, x, bias, full, exact_blocks, label);
    if (HasFatalFailure()) return;
    // The zero row gives the bias exactly.
    ASSERT_TRUE(BitwiseEqual(full.data<float>() + 3 * n, bias.data<float>(), n)) << label;

    ExpectBitwiseBatchInvariant(w, x, bias, full, label);
    if (HasFatalFailure()) return;
  }
}

// AWQ g128 and Q4_0 as CpuBackend places them with int8 activations on AVX2 and AVX-512 CPUs:
// AWQ's codes, scales and zero points in dword tiles, Q4_0's blocks in Q4_0 tiles, for the
// broadcast-x kernels (cpu_kernels_int8_panels_avx512.cc on AVX512-VNNI CPUs, else
// cpu_kernels_int8_panels_avx2.cc; CTest's XINFER_ISA=avx2 run takes the AVX2 one). Against the
// plain int8 evaluation of the row-major weight; bitwise invariant to the rows of x per call, the
// threads and the LinearMany grouping; rows in whole 16-row tiles and a short last one;
// DequantizeRow reads the tiles.
TEST_F(Int8ActivationsTest, PanelTiledWeightsMatchThePlainInt8EvaluationAndAreBatchInvariant) {
  if (!features_.avx2) GTEST_SKIP() << "the broadcast-x kernel needs AVX2";
  for (QuantType type : {QuantType::kAwq4, QuantType::kQ4_0}) {
    const bool awq = type == QuantType::kAwq4;
    for (int64_t k : {128, 896}) {
      for (int64_t n : {16, 77, 160, 8, 5, 29}) {
        const std::string label = std::string(QuantTypeName(type)) + " K=" + std::to_string(k) +
                                  " N=" + std::to_string(n);
        const int64_t t = 19;
        QuantTensor w =
            MakeQuant(*backend_, type, n, k, static_cast<uint32_t>(n + k), nullptr, 128);
        QuantTensor tiled = PanelTiledCopy(*backend_, w);
        std::vector<float> a(k), b(k);
        for (int64_t r : {int64_t{0}, n / 2, n - 1}) {
          DequantizeRow(w, r, a.data());
          DequantizeRow(tiled, r, b.data());
          ASSERT_TRUE(BitwiseEqual(a.data(), b.data(), k)) << label << " DequantizeRow " << r;
        }
        Tensor x = RandomX(t, k);
        std::fill_n(x.data<float>() + 3 * k, k, 0.f);
        x.data<float>()[5 * k + 7] = 1000.f;
        Tensor bias = RandomX(1, n);
        FastCpuOps ops(false, 2, /*int8_activations=*/true);
        ASSERT_EQ(ops.QuantLayoutFor(w), awq ? Layout::kDwordTiles : Layout::kQ4_0Tiles) << label;
        ASSERT_EQ(ops.QuantLayoutFor(tiled), Layout::kRowMajor) << label;  // placed already
        ASSERT_TRUE(ops.UsesInt8Activations(tiled)) << label;
        Tensor full = backend_->NewTensor(DType::kF32, {t, n});
        ops.QuantLinear(x, tiled, &bias, full);
        ExpectMatchesPlainInt8(w, x, bias, full, /*exact_blocks=*/true, label,
                               /*zero_per_group=*/awq);
        if (HasFatalFailure()) return;
        ASSERT_TRUE(BitwiseEqual(full.data<float>() + 3 * n, bias.data<float>(), n)) << label;
        ExpectBitwiseBatchInvariant(tiled, x, bias, full, label);
        if (HasFatalFailure()) return;
      }
    }
    // q/k/v-like tiled parts as one LinearMany job: bitwise the separate calls.
    std::vector<Weight> parts;
    std::vector<Tensor> biases;
    for (int64_t n : {203, 37, 48}) {
      parts.emplace_back(PanelTiledCopy(
          *backend_, MakeQuant(*backend_, type, n, 256, static_cast<uint32_t>(n), nullptr, 128)));
      biases.push_back(RandomX(1, n));
    }
    for (int64_t t : {1, 5, 9}) {
      Tensor x = RandomX(t, 256);
      for (int threads : {1, 3}) {
        FastCpuOps ops(false, threads, true);
        ExpectLinearManyMatchesSeparate(
            *backend_, ops, x, parts, biases,
            std::string(QuantTypeName(type)) + " tiled threads " + std::to_string(threads));
        if (HasFatalFailure()) return;
      }
    }
    // Without int8 activations the weights stay row-major, but AWQ, which takes the W4A16 panel
    // kernels in the same tiles (w4a16_panels_test.cc).
    FastCpuOps plain(false, 2);
    EXPECT_EQ(plain.QuantLayoutFor(MakeQuant(*backend_, type, 16, 128, 1, nullptr, 128)),
              awq ? Layout::kDwordTiles : Layout::kRowMajor);
  }
}

// The AVX-512 broadcast-x kernel gives bitwise the AVX2 one's results on the same tiled weights
// and x (its contract): every path — one row of x (one tile at a time), 2..4 rows on two tiles
// or one, the weight's short last tile —, ranges that start past the first tile, AWQ g128 and
// Q4_0, with and without a bias. A change of the block epilogue's order fails it.
TEST_F(Int8ActivationsTest, Avx512PanelsAreBitwiseTheAvx2Panels) {
  if (!features_.avx512 || !features_.avx512_vnni) GTEST_SKIP() << "needs AVX512-VNNI";
  for (QuantType type : {QuantType::kAwq4, QuantType::kQ4_0}) {
    const bool awq = type == QuantType::kAwq4;
    for (int64_t k : {128, 896}) {
      for (int64_t n : {16, 48, 77, 5}) {
        QuantTensor w = PanelTiledCopy(
            *backend_,
            MakeQuant(*backend_, type, n, k, static_cast<uint32_t>(3 * n + k), nullptr, 128));
        ASSERT_TRUE(cpu::avx512::Int8PanelsSupports(w, features_));
        Tensor bias = RandomX(1, n);
        for (int64_t t : {1, 2, 3, 4, 5, 9}) {
          Tensor x = RandomX(t, k);
          std::vector<int8_t> xq(t * k);
          const cpu::avx2::Int8XLayout layout =
              awq ? cpu::avx2::Int8XLayout::kAwqPanels : cpu::avx2::Int8XLayout::kQ4_0Panels;
          const int64_t ldxaux = cpu::avx2::Int8AuxPerRow(layout, k);
          std::vector<float> aux(t * ldxaux);
          cpu::avx2::Int8PrepareX(x.data<float>(), t, k, k, xq.data(), k, aux.data(), ldxaux,
                                  layout);
          for (bool with_bias : {true, false}) {
            std::vector<float> want(t * n), got(t * n, -1.f);
            cpu::QuantLinearTask task;
            task.x = x.data<float>();
            task.ldx = k;
            task.xq = xq.data();
            task.ldxq = k;
            task.xaux = aux.data();
            task.ldxaux = ldxaux;
            task.w = &w;
            task.bias = with_bias ? bias.data<float>() : nullptr;
            task.ldo = n;
            task.out = want.data();
            cpu::avx2::QuantLinearInt8Panels(task, 0, t, 0, n);
            task.out = got.data();
            const int64_t split = n > 16 ? 16 : n;  // two ranges where the weight has two tiles
            cpu::avx512::QuantLinearInt8Panels(task, 0, t, 0, split);
            if (split < n) cpu::avx512::QuantLinearInt8Panels(task, 0, t, split, n);
            ASSERT_TRUE(BitwiseEqual(got.data(), want.data(), t * n))
                << QuantTypeName(type) << " K=" << k << " N=" << n << " T=" << t << " bias "
                << with_bias;
          }
        }
      }
    }
  }
}

// One row of x on the AVX-512 int8 panels takes one equal range per thread (one long weight
// stream each); batched calls, other kernels and the option off keep the shrinking ranges.
TEST_F(Int8ActivationsTest, OneRowOnTheAvx512PanelsTakesOneRangePerThread) {
  if (!features_.avx512 || !features_.avx512_vnni) GTEST_SKIP() << "needs AVX512-VNNI";
  using Ranges = FastCpuOps::Ranges;
  FastCpuOps int8(false, 2, /*int8_activations=*/true), plain(false, 2);
  const QuantTensor awq =
      PanelTiledCopy(*backend_, MakeQuant(*backend_, QuantType::kAwq4, 64, 256, 1, nullptr, 128));
  const QuantTensor q4_0 =
      PanelTiledCopy(*backend_, MakeQuant(*backend_, QuantType::kQ4_0, 64, 256, 2, nullptr));
  const QuantTensor q8_0 = MakeQuant(*backend_, QuantType::kQ8_0, 64, 256, 3, nullptr);
  EXPECT_EQ(int8.QuantRangesFor(awq, 1), Ranges::kEqual);
  EXPECT_EQ(int8.QuantRangesFor(q4_0, 1), Ranges::kEqual);
  EXPECT_EQ(int8.QuantRangesFor(awq, 2), Ranges::kShrinking);
  EXPECT_EQ(int8.QuantRangesFor(awq, 16), Ranges::kShrinking);
  EXPECT_EQ(int8.QuantRangesFor(q8_0, 1), Ranges::kShrinking);  // the row-major int8 kernel
  EXPECT_EQ(plain.QuantRangesFor(awq, 1), Ranges::kShrinking);  // W4A16 panels
}

// Without the option, and for formats the int8 kernel does not take, nothing changes: the
// results are bitwise those of the default ops.
TEST_F(Int8ActivationsTest, OnlyTheFormatsItKnowsWithTheOptionTakeIt) {
  FastCpuOps plain(false, 2), int8(false, 2, true);
  const int64_t t = 5, n = 40, k = 256;
  struct Case {
    QuantType type;
    int64_t group;
    bool takes;
  };
  for (Case c : {Case{QuantType::kQ4_0, 32, true}, Case{QuantType::kQ8_0, 32, true},
                 Case{QuantType::kAwq4, 128, true}, Case{QuantType::kAwq4, 64, false},
                 Case{QuantType::kQ5_0, 32, true}, Case{QuantType::kQ4_K, 32, true},
                 Case{QuantType::kQ6_K, 32, true}, Case{QuantType::kQ5_K, 32, true},
                 Case{QuantType::kQ5_1, 32, true}, Case{QuantType::kQ4_1, 32, true},
                 Case{QuantType::kAwq4, 32, false}}) {
    const QuantType type = c.type;
    QuantTensor w = MakeQuant(*backend_, type, n, k, 5, nullptr, c.group);
    const bool takes = Avx512Int8() ? c.takes : BlockKernelFormat(type);
    EXPECT_FALSE(plain.UsesInt8Activations(w));
    EXPECT_EQ(int8.UsesInt8Activations(w), takes) << QuantTypeName(type);
    Tensor x = RandomX(t, k);
    Tensor a = backend_->NewTensor(DType::kF32, {t, n}),
           b = backend_->NewTensor(DType::kF32, {t, n});
    plain.QuantLinear(x, w, nullptr, a);
    int8.QuantLinear(x, w, nullptr, b);
    EXPECT_EQ(BitwiseEqual(a.data<float>(), b.data<float>(), t * n), !takes)
        << QuantTypeName(type) << " g" << c.group;
  }
  // Q4_0 with K not a multiple of 128 takes the AVX2 / DotProd kernel; AWQ only the AVX-512 one.
  QuantTensor odd = MakeQuant(*backend_, QuantType::kQ4_0, n, 96, 5, nullptr);
  EXPECT_TRUE(int8.UsesInt8Activations(odd));
  QuantTensor awq = MakeQuant(*backend_, QuantType::kAwq4, n, 128, 5, nullptr, 128);
  EXPECT_EQ(int8.UsesInt8Activations(awq), Avx512Int8());
}

// q/k/v-like parts (one format, same K) run as one job with x quantized once: bitwise the
// separate calls; a Q8_0 part beside Q4_0 ones (another x layout) falls back to separate calls.
TEST_F(Int8ActivationsTest, LinearManyIsBitwiseSeparateCalls) {
  const int64_t k = 256;
  for (int mix = 0; mix < 3; ++mix) {
    std::vector<Weight> w;
    std::vector<Tensor> b;
    int64_t i = 0;
    for (int64_t n : {203, 37, 40}) {
      QuantType type = mix == 2 ? QuantType::kAwq4 : QuantType::kQ4_0;
      if (mix == 1 && i++ == 2) type = QuantType::kQ8_0;
      w.emplace_back(MakeQuant(*backend_, type, n, k, static_cast<uint32_t>(n), nullptr, 128));
      b.push_back(RandomX(1, n));
    }
    for (int64_t t : {1, 5, 9}) {
      Tensor x = RandomX(t, k);
      for (int threads : {1, 3}) {
        FastCpuOps ops(false, threads, true);
        ExpectLinearManyMatchesSeparate(
            *backend_, ops, x, w, b,
            "mix " + std::to_string(mix) + " threads " + std::to_string(threads));
        if (HasFatalFailure()) return;
      }
    }
  }
}

}  // namespace
}  // namespace xinfer
