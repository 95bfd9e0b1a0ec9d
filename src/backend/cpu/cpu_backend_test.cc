// CpuBackend::PlaceWeights: the placed tensors hold the same bytes, dtypes and shapes in the same
// order; tensors that alias the same bytes (a tied lm_head) alias each other afterwards, and the
// copies survive the inputs; with mmap_weights the inputs come back untouched. Large buffers are
// huge-page aligned.
#include <gtest/gtest.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/cpu_kernels.h"
#include "base/huge_pages.h"
#include "tensor/quant.h"

namespace xinfer {
namespace {

Tensor Filled(Backend& backend, DType dtype, Shape shape, uint8_t seed) {
  Tensor t = backend.NewTensor(dtype, std::move(shape));
  auto* p = static_cast<uint8_t*>(t.raw());
  for (size_t i = 0; i < t.size_bytes(); ++i) p[i] = static_cast<uint8_t>(seed + i * 31);
  return t;
}

bool SameBytes(const Tensor& a, const Tensor& b) {
  return a.size_bytes() == b.size_bytes() && std::memcmp(a.raw(), b.raw(), a.size_bytes()) == 0;
}

// The dense decode GEMV's software prefetch: prefetchnta kReadOncePrefetchBytes ahead, none where
// AVX-512 is double-pumped (Zen 4, measured better with the hardware prefetcher alone); detection
// reports that only with AVX-512.
TEST(CpuFeaturesTest, DenseDecodePrefetchIsOffOnlyWhereAvx512IsDoublePumped) {
  cpu::CpuFeatures f;
  f.avx512 = true;
  EXPECT_EQ(cpu::DecodePrefetchBytes(f), cpu::kReadOncePrefetchBytes);
  f.avx512_double_pumped = true;
  EXPECT_EQ(cpu::DecodePrefetchBytes(f), 0);
  const cpu::CpuFeatures& detected = cpu::DetectCpuFeatures();
  EXPECT_TRUE(!detected.avx512_double_pumped || detected.avx512);
}

// Decode's read-once prefetch hint: prefetchnta on AMD, prefetcht1 elsewhere (Intel: prefetchnta
// halved the stream), XINFER_READ_ONCE_PREFETCH=nta|l2 deciding where set.
TEST(CpuFeaturesTest, ReadOncePrefetchIsNonTemporalOnAmdUnlessOverridden) {
  EXPECT_TRUE(cpu::ReadOnceNonTemporal(/*amd=*/true, nullptr));
  EXPECT_FALSE(cpu::ReadOnceNonTemporal(/*amd=*/false, nullptr));
  for (bool amd : {false, true}) {
    EXPECT_TRUE(cpu::ReadOnceNonTemporal(amd, "nta"));
    EXPECT_FALSE(cpu::ReadOnceNonTemporal(amd, "l2"));
    EXPECT_EQ(cpu::ReadOnceNonTemporal(amd, "NTA "), amd);  // unknown: the vendor's, warned
  }
#if defined(__x86_64__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  ASSERT_NE(__get_cpuid(0, &eax, &ebx, &ecx, &edx), 0);
  const bool amd = ebx == 0x68747541 && edx == 0x69746e65 && ecx == 0x444d4163;  // AuthenticAMD
  const char* set = std::getenv("XINFER_READ_ONCE_PREFETCH");
  EXPECT_EQ(cpu::DetectCpuFeatures().read_once_non_temporal, cpu::ReadOnceNonTemporal(amd, set));
#endif
}

TEST(CpuBackendTest, PlaceWeightsCopiesKeepsOrderAndAliasing) {
  auto backend = CreateCpuBackend();
  Tensor embed = Filled(*backend, DType::kBF16, {1000, 896}, 1);  // > 1 MiB: a mapped region
  Tensor norm = Filled(*backend, DType::kF32, {7}, 2);            // odd size: next one realigns
  Tensor q = Filled(*backend, DType::kU8, {33, 17}, 3);
  Tensor bias = Filled(*backend, DType::kF16, {5}, 4);
  std::vector<Tensor> host = {embed, norm, q, embed, bias, embed.Slice0(10, 20)};
  std::vector<Backend::WeightToPlace> to_place;
  for (const Tensor& t : host) to_place.push_back({t, false});
  std::vector<Tensor> placed = backend->PlaceWeights(to_place);
  ASSERT_EQ(placed.size(), host.size());
  for (size_t i = 0; i < host.size(); ++i) {
    EXPECT_EQ(placed[i].dtype(), host[i].dtype()) << i;
    EXPECT_EQ(placed[i].shape(), host[i].shape()) << i;
    EXPECT_TRUE(SameBytes(placed[i], host[i])) << i;
    EXPECT_NE(placed[i].raw(), host[i].raw()) << i;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(placed[i].raw()) % 64, 0u) << i;
    EXPECT_EQ(placed[i].layout(), Layout::kRowMajor) << i;
  }
  EXPECT_EQ(placed[0].raw(), placed[3].raw());  // the tied copy stays tied
  // A view into a tensor is its own byte range: copied separately, same contents.
  EXPECT_NE(placed[5].raw(), static_cast<uint8_t*>(placed[0].raw()) + 10 * 896 * 2);
  // One region for all, huge-page aligned.
  EXPECT_EQ(placed[0].buffer(), placed[4].buffer());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(placed[0].buffer()->data()) % kHugePageBytes, 0u);
  // The copies do not depend on the inputs' memory.
  std::vector<Tensor> expect = {Filled(*backend, DType::kBF16, {1000, 896}, 1)};
  std::memset(embed.raw(), 0, embed.size_bytes());
  host.clear();
  embed = Tensor();
  EXPECT_TRUE(SameBytes(placed[0], expect[0]));
}

TEST(CpuBackendTest, PlaceWeightsOfNothingIsNothing) {
  auto backend = CreateCpuBackend();
  EXPECT_TRUE(backend->PlaceWeights({}).empty());
}

TEST(CpuBackendTest, MmapWeightsKeepsTheInputs) {
  auto backend = CreateCpuBackend({.mmap_weights = true});
  Tensor a = Filled(*backend, DType::kF32, {3, 5}, 9);
  Tensor big = Filled(*backend, DType::kBF16, {12, 64}, 9);
  std::vector<Tensor> placed = backend->PlaceWeights({{{a, false}, {a, true}, {big, true}}});
  ASSERT_EQ(placed.size(), 3u);
  EXPECT_EQ(placed[0].raw(), a.raw());
  EXPECT_EQ(placed[1].raw(), a.raw());
  EXPECT_EQ(placed[2].raw(), big.raw());
  EXPECT_EQ(placed[2].layout(), Layout::kRowMajor);
}

// Linear weights the SIMD kernels take are stored in the layout their kernel reads, with every
// row intact: panels on AVX2 and AVX-512 CPUs (BF16 in kWordTiles, F32 in kDwordTiles, any row
// length; their 64-row forms on AVX-512), row tiles for the other SIMD kernels (rows of whole
// 64-byte units); a tied alias used by Embedding gets the same tiled bytes; other weights stay
// row-major.
TEST(CpuBackendTest, LinearWeightsAreTiledWhereTheKernelsReadThem) {
  auto backend = CreateCpuBackend();
  Tensor lm = Filled(*backend, DType::kBF16, {203, 96}, 5);  // 34 row tiles or 13 panels
  Tensor odd = Filled(*backend, DType::kF32, {9, 7}, 6);     // 28-byte rows
  Tensor f32 = Filled(*backend, DType::kF32, {13, 48}, 7);
  std::vector<Tensor> placed =
      backend->PlaceWeights({{{lm, false}, {lm, true}, {odd, true}, {f32, true}}});
  ASSERT_EQ(placed.size(), 4u);
  const cpu::CpuFeatures& f = cpu::DetectCpuFeatures();
  const bool panels = cpu::DensePanelsSupport(DType::kBF16, f);
  const bool tiles = f.avx512 || f.simd;
  EXPECT_EQ(placed[0].raw(), placed[1].raw());
  const Layout lm_layout = panels  ? (f.avx512 ? Layout::kWordPairTiles64 : Layout::kWordTiles)
                           : tiles ? Layout::kRowTiles
                                   : Layout::kRowMajor;
  const Layout dword_panels = f.avx512 ? Layout::kDwordTiles64 : Layout::kDwordTiles;
  const Layout f32_layout = panels ? dword_panels : tiles ? Layout::kRowTiles : Layout::kRowMajor;
  EXPECT_EQ(placed[0].layout(), lm_layout);
  EXPECT_EQ(placed[1].layout(), lm_layout);
  EXPECT_EQ(placed[2].layout(), panels ? dword_panels : Layout::kRowMajor);
  EXPECT_EQ(placed[3].layout(), f32_layout);
  for (auto [got, want] :
       {std::pair{placed[1], lm}, std::pair{placed[2], odd}, std::pair{placed[3], f32}}) {
    std::vector<uint8_t> a(RowBytes(want)), b(RowBytes(want));
    for (int64_t r = 0; r < want.dim(0); ++r) {
      ReadRow(got, r, a.data());
      ReadRow(want, r, b.data());
      ASSERT_EQ(a, b) << "row " << r;
    }
  }
  const auto* base = static_cast<const uint8_t*>(placed[1].raw());
  const auto* src = static_cast<const uint8_t*>(lm.raw());
  if (panels && f.avx512) {  // 64-row groups by hand: per k, the 64 rows' values side by side
    // Element 5 of row 71 (group 1, its row 7): group base + (5 x 64 + 7) values.
    EXPECT_EQ(std::memcmp(base + 64 * 192 + (5 * 64 + 7) * 2, src + 71 * 192 + 5 * 2, 2), 0);
    // The last group has 11 rows: element 3 of row 202 (its row 10).
    EXPECT_EQ(std::memcmp(base + 192 * 192 + (3 * 11 + 10) * 2, src + 202 * 192 + 3 * 2, 2), 0);
  } else if (panels) {  // 16-row panels by hand: per k, the 16 rows' values side by side
    // Element 5 of row 23 (panel 1, its row 7): panel base + (5 x 16 + 7) values.
    EXPECT_EQ(std::memcmp(base + 16 * 192 + (5 * 16 + 7) * 2, src + 23 * 192 + 5 * 2, 2), 0);
    // The last panel has 11 rows: element 3 of row 202 (its row 10).
    EXPECT_EQ(std::memcmp(base + 192 * 192 + (3 * 11 + 10) * 2, src + 202 * 192 + 3 * 2, 2), 0);
  } else if (tiles) {  // the tile layout: unit 1 of row 7 (tile 1, row 1 of 6) by hand
    const uint8_t* unit = base + 6 * 192 + (1 * 6 + 1) * 64;
    EXPECT_EQ(std::memcmp(unit, src + 7 * 192 + 64, 64), 0);
    // The last tile has 5 rows: unit 2 of row 202 (its row 4).
    const uint8_t* last = base + 198 * 192 + (2 * 5 + 4) * 64;
    EXPECT_EQ(std::memcmp(last, src + 202 * 192 + 128, 64), 0);
  }
}

// AWQ g128 Linear parts (codes, scales, zero points) go into dword tiles when an int8 broadcast-x
// kernel will read them (int8 activations on an AVX2 or AVX-512 CPU), every row intact;
// otherwise, and for AWQ tensors not marked as a Linear weight's parts, they stay row-major.
TEST(CpuBackendTest, AwqPartsAreDwordTiledForTheBroadcastXKernels) {
  const cpu::CpuFeatures& f = cpu::DetectCpuFeatures();
  for (bool int8 : {false, true}) {
    auto backend = CreateCpuBackend({.int8_activations = int8});
    QuantTensor w;
    w.type = QuantType::kAwq4;
    w.rows = 37;  // two panels of 16 and one of 5
    w.cols = 256;
    w.group_size = 128;
    w.data = Filled(*backend, DType::kU8, {37, 128}, 1);
    w.scales = Filled(*backend, DType::kF32, {37, 2}, 2);
    w.zeros = Filled(*backend, DType::kF32, {37, 2}, 3);
    Tensor other = Filled(*backend, DType::kU8, {37, 128}, 4);
    std::vector<Tensor> placed = backend->PlaceWeights(
        {{{w.data, false, &w}, {w.scales, false, &w}, {w.zeros, false, &w}, {other, false}}});
    ASSERT_EQ(placed.size(), 4u);
    // FastCpuOps::QuantLayoutFor: the int8 kernels' tiles, which the W4A16 kernels (AVX2, AVX-512)
    // read too (AWQ g128 without int8 activations).
    const bool tiles = f.avx2;
    for (int i : {0, 1, 2})
      EXPECT_EQ(placed[i].layout(), tiles ? Layout::kDwordTiles : Layout::kRowMajor) << i;
    EXPECT_EQ(placed[3].layout(), Layout::kRowMajor);
    for (auto [got, want] : {std::pair{placed[0], w.data}, std::pair{placed[1], w.scales},
                             std::pair{placed[2], w.zeros}, std::pair{placed[3], other}}) {
      std::vector<uint8_t> a(RowBytes(want)), b(RowBytes(want));
      for (int64_t r = 0; r < want.dim(0); ++r) {
        ReadRow(got, r, a.data());
        ReadRow(want, r, b.data());
        ASSERT_EQ(a, b) << "row " << r;
      }
    }
    if (tiles) {  // dword 3 of row 20 (panel 1, its row 4) and of row 33 (the 5-row panel's 1)
      const auto* base = static_cast<const uint8_t*>(placed[0].raw());
      const auto* src = static_cast<const uint8_t*>(w.data.raw());
      EXPECT_EQ(std::memcmp(base + 16 * 128 + (3 * 16 + 4) * 4, src + 20 * 128 + 12, 4), 0);
      EXPECT_EQ(std::memcmp(base + 32 * 128 + (3 * 5 + 1) * 4, src + 33 * 128 + 12, 4), 0);
    }
  }
}

// GGUF Q4_0 Linear weights likewise go into Q4_0 tiles (per block, 16 rows' F16 scales, then their
// codes as dwords side by side) for the same kernel; Q8_0 stays row-major.
TEST(CpuBackendTest, Q4_0WeightsAreTiledForTheInt8Kernel) {
  const cpu::CpuFeatures& f = cpu::DetectCpuFeatures();
  for (bool int8 : {false, true}) {
    auto backend = CreateCpuBackend({.int8_activations = int8});
    QuantTensor w, q8;
    w.type = QuantType::kQ4_0;
    w.rows = q8.rows = 37;
    w.cols = q8.cols = 256;
    w.data = Filled(*backend, DType::kU8, {37, 8 * 18}, 5);
    q8.type = QuantType::kQ8_0;
    q8.data = Filled(*backend, DType::kU8, {37, 8 * 34}, 6);
    std::vector<Tensor> placed =
        backend->PlaceWeights({{{w.data, false, &w}, {q8.data, false, &q8}}});
    ASSERT_EQ(placed.size(), 2u);
    // FastCpuOps::QuantLayoutFor: every AVX2 CPU (AVX-512 included) with int8 activations.
    const bool tiles = int8 && f.avx2;
    EXPECT_EQ(placed[0].layout(), tiles ? Layout::kQ4_0Tiles : Layout::kRowMajor);
    EXPECT_EQ(placed[1].layout(), Layout::kRowMajor);
    std::vector<uint8_t> a(8 * 18), b(8 * 18);
    for (int64_t r = 0; r < 37; ++r) {
      ReadRow(placed[0], r, a.data());
      ReadRow(w.data, r, b.data());
      ASSERT_EQ(a, b) << "row " << r;
    }
    if (tiles) {  // row 20 (tile 1, its row 4), block 1: its scale, then its code dword 2
      const auto* block = static_cast<const uint8_t*>(placed[0].raw()) + 16 * 144 + 18 * 16;
      const auto* src = static_cast<const uint8_t*>(w.data.raw()) + 20 * 144 + 18;
      EXPECT_EQ(std::memcmp(block + 2 * 4, src, 2), 0);
      EXPECT_EQ(std::memcmp(block + 2 * 16 + (2 * 16 + 4) * 4, src + 2 + 8, 4), 0);
    }
  }
}

// Weights over the copy limit (a model that fits only as page cache) stay in the mapping rather
// than being copied into memory the process does not have.
TEST(CpuBackendTest, WeightsOverTheCopyLimitStayMapped) {
  auto small = CreateCpuBackend({.weight_copy_limit_bytes = 100 << 10});
  Tensor big = Filled(*small, DType::kBF16, {100, 896}, 3);  // 175 KiB
  Tensor norm = Filled(*small, DType::kF32, {8}, 4);
  std::vector<Tensor> placed = small->PlaceWeights({{{big, true}, {norm, false}}});
  ASSERT_EQ(placed.size(), 2u);
  EXPECT_EQ(placed[0].raw(), big.raw());
  EXPECT_EQ(placed[0].layout(), Layout::kRowMajor);
  EXPECT_EQ(placed[1].raw(), norm.raw());
  // Under the limit: copied.
  auto roomy = CreateCpuBackend({.weight_copy_limit_bytes = 1 << 20});
  std::vector<Tensor> copied = roomy->PlaceWeights({{{big, true}, {norm, false}}});
  EXPECT_NE(copied[0].raw(), big.raw());
  EXPECT_GT(AvailableMemoryBytes(), size_t{0});
}

TEST(CpuBackendTest, LargeBuffersAreHugePageAligned) {
  auto backend = CreateCpuBackend();
  for (size_t bytes : {size_t{1} << 20, size_t{3} << 20, (size_t{8} << 20) + 7}) {
    auto buffer = backend->Allocate(bytes);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer->data()) % kHugePageBytes, 0u) << bytes;
    EXPECT_EQ(buffer->size_bytes(), bytes);
    auto* p = static_cast<uint8_t*>(buffer->data());
    EXPECT_EQ(p[0], 0);
    EXPECT_EQ(p[bytes - 1], 0);
  }
}

}  // namespace
}  // namespace xinfer
