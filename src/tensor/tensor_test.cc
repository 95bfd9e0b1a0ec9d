// The tiled layouts (tensor.h): PackRowTiles puts every byte where the layout says, and ReadRow
// gets each row back intact, for every layout, a short last group and groups packed in pieces.
#include "tensor/tensor.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

namespace xinfer {
namespace {

// A 2-D U8 tensor [rows, row_bytes] over `bytes` (kept alive by the caller).
Tensor Over(std::vector<uint8_t>& bytes, int64_t rows, int64_t row_bytes, Layout layout) {
  auto buffer = std::make_shared<PinnedHostBuffer>(nullptr, bytes.data(), bytes.size());
  return Tensor(buffer, 0, DType::kU8, {rows, row_bytes}, layout);
}

TEST(TiledLayoutTest, PackedRowsReadBackIntact) {
  struct Case {
    Layout layout;
    int64_t row_bytes;
  };
  for (const Case& c :
       {Case{Layout::kRowTiles, 192}, Case{Layout::kDwordTiles, 28}, Case{Layout::kQ4_0Tiles, 36},
        Case{Layout::kWordTiles, 14}, Case{Layout::kWordTiles, 1792},
        Case{Layout::kDwordTiles64, 28}, Case{Layout::kWordTiles64, 1792},
        Case{Layout::kWordPairTiles64, 1792}, Case{Layout::kWordPairTiles64, 6}}) {
    for (int64_t rows : {1, 16, 37, 150}) {
      std::vector<uint8_t> src(rows * c.row_bytes), dst(src.size(), 0);
      for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 131 + i / 251);
      const int64_t g = TileGeometryOf(c.layout).rows, groups = (rows + g - 1) / g;
      // In two pieces, as CpuBackend::PlaceWeights packs in parallel.
      PackRowTiles(c.layout, src.data(), dst.data(), rows, c.row_bytes, 0, groups / 2);
      PackRowTiles(c.layout, src.data(), dst.data(), rows, c.row_bytes, groups / 2, groups);
      if (rows > 1) {
        EXPECT_NE(src, dst) << "really reordered";
      }
      Tensor tiled = Over(dst, rows, c.row_bytes, c.layout);
      std::vector<uint8_t> row(c.row_bytes);
      for (int64_t r = 0; r < rows; ++r) {
        ReadRow(tiled, r, row.data());
        ASSERT_EQ(std::memcmp(row.data(), src.data() + r * c.row_bytes, c.row_bytes), 0)
            << "layout " << static_cast<int>(c.layout) << " rows " << rows << " row " << r;
      }
    }
  }
}

// kWordTiles by hand: per 2-byte unit u, the group's rows side by side; the last group (5 of 21
// rows) with its own stride.
TEST(TiledLayoutTest, WordTilesPutEachRowsValuesSideBySide) {
  const int64_t rows = 21, units = 7, row_bytes = units * 2;
  std::vector<uint16_t> src(rows * units);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t u = 0; u < units; ++u) src[r * units + u] = static_cast<uint16_t>(r * 100 + u);
  std::vector<uint16_t> dst(src.size());
  PackRowTiles(Layout::kWordTiles, reinterpret_cast<const uint8_t*>(src.data()),
               reinterpret_cast<uint8_t*>(dst.data()), rows, row_bytes, 0, 2);
  for (int64_t u = 0; u < units; ++u) {
    for (int64_t j = 0; j < 16; ++j) EXPECT_EQ(dst[u * 16 + j], j * 100 + u);
    for (int64_t j = 0; j < 5; ++j) EXPECT_EQ(dst[16 * units + u * 5 + j], (16 + j) * 100 + u);
  }
}

// kWordPairTiles64 by hand: per unit u, slot 32h + 2i of a full group is row 32h + i and slot
// 32h + 2i + 1 row 32h + 16 + i; the last group (6 of 70 rows) in plain order.
TEST(TiledLayoutTest, WordPairTilesPutRowsIAnd16PlusIInOneDword) {
  const int64_t rows = 70, units = 3, row_bytes = units * 2;
  std::vector<uint16_t> src(rows * units);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t u = 0; u < units; ++u) src[r * units + u] = static_cast<uint16_t>(r * 10 + u);
  std::vector<uint16_t> dst(src.size());
  PackRowTiles(Layout::kWordPairTiles64, reinterpret_cast<const uint8_t*>(src.data()),
               reinterpret_cast<uint8_t*>(dst.data()), rows, row_bytes, 0, 2);
  for (int64_t u = 0; u < units; ++u) {
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t i = 0; i < 16; ++i) {
        EXPECT_EQ(dst[u * 64 + 32 * h + 2 * i], (32 * h + i) * 10 + u);
        EXPECT_EQ(dst[u * 64 + 32 * h + 2 * i + 1], (32 * h + 16 + i) * 10 + u);
      }
    for (int64_t j = 0; j < 6; ++j) EXPECT_EQ(dst[64 * units + u * 6 + j], (64 + j) * 10 + u);
  }
}

// F32 / BF16 / F16 elements widened exactly (values each dtype holds exactly); other dtypes
// refused without writing.
TEST(WidenToF32Test, EachFloatDtypeAndNothingElse) {
  const std::vector<float> values = {0.f, -1.5f, 3.25f, 1024.f};
  for (DType dt : {DType::kF32, DType::kBF16, DType::kF16}) {
    Tensor t = NewHostTensor(dt, {2, 2});
    for (size_t i = 0; i < values.size(); ++i) {
      if (dt == DType::kF32) t.data<float>()[i] = values[i];
      if (dt == DType::kBF16) t.data<uint16_t>()[i] = F32ToBf16(values[i]);
      if (dt == DType::kF16) t.data<uint16_t>()[i] = F32ToF16(values[i]);
    }
    std::vector<float> out(4, 7.f);
    ASSERT_TRUE(WidenToF32(t, out.data())) << DTypeName(dt);
    EXPECT_EQ(out, values) << DTypeName(dt);
  }
  Tensor ints = NewHostTensor(DType::kI32, {4});
  std::vector<float> out(4, 7.f);
  EXPECT_FALSE(WidenToF32(ints, out.data()));
  EXPECT_EQ(out, std::vector<float>(4, 7.f));
}

}  // namespace
}  // namespace xinfer
