#include "tensor/tensor.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace xinfer {

std::string ShapeToString(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

int64_t NumElements(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

Tensor::Tensor(std::shared_ptr<Buffer> buffer, size_t offset, DType dtype, Shape shape,
               Layout layout)
    : buffer_(std::move(buffer)),
      offset_(offset),
      dtype_(dtype),
      shape_(std::move(shape)),
      layout_(layout) {
  XI_CHECK(buffer_ != nullptr);
  XI_CHECK_MSG(offset_ + size_bytes() <= buffer_->size_bytes(), "tensor exceeds its buffer");
  if (layout_ != Layout::kRowMajor) {
    XI_CHECK_MSG(rank() == 2, "a tiled layout needs a 2-D tensor");
    const TileGeometry g = TileGeometryOf(layout_);
    const int64_t block = g.block_bytes > 0 ? g.block_bytes : RowBytes(*this);
    XI_CHECK_MSG(RowBytes(*this) % block == 0 && (block - g.head_bytes) % g.unit_bytes == 0,
                 "a tiled layout needs rows of whole blocks of whole units");
  }
}

Tensor Tensor::Reshaped(Shape shape) const {
  XI_CHECK(layout_ == Layout::kRowMajor);
  XI_CHECK(NumElements(shape) == numel());
  return Tensor(buffer_, offset_, dtype_, std::move(shape));
}

Tensor Tensor::Slice0(int64_t begin, int64_t end) const {
  XI_CHECK(layout_ == Layout::kRowMajor);
  XI_CHECK(rank() >= 1 && 0 <= begin && begin <= end && end <= shape_[0]);
  Shape s = shape_;
  s[0] = end - begin;
  int64_t row = shape_[0] == 0 ? 0 : numel() / shape_[0];
  return Tensor(buffer_, offset_ + static_cast<size_t>(begin * row) * DTypeSize(dtype_), dtype_,
                std::move(s));
}

int64_t RowBytes(const Tensor& t) {
  XI_CHECK(t.rank() == 2);
  return t.dim(1) * static_cast<int64_t>(DTypeSize(t.dtype()));
}

TileGeometry TileGeometryOf(Layout layout) {
  switch (layout) {
    case Layout::kRowTiles:
      return {kTileRows, kTileUnitBytes};
    case Layout::kDwordTiles:
      return {kDwordTileRows, 4};
    case Layout::kQ4_0Tiles:
      return {kDwordTileRows, 4, 18, 2};
    case Layout::kWordTiles:
      return {kDwordTileRows, 2};
    case Layout::kDwordTiles64:
      return {kWideTileRows, 4};
    case Layout::kWordTiles64:
      return {kWideTileRows, 2};
    case Layout::kWordPairTiles64:
      return {kWideTileRows, 2, 0, 0, /*pairs=*/true};
    case Layout::kRowMajor:
      break;
  }
  XI_CHECK_MSG(false, "row-major is not a tiled layout");
  return {};
}

namespace {

// The slot of row j (of nr) within its group's unit columns.
int64_t SlotOf(const TileGeometry& g, int64_t nr, int64_t j) {
  return g.pairs && nr == g.rows ? WordPairSlot(j) : j;
}

// Calls copy(tiled_offset, row_offset, bytes) for every head and unit of row j (of nr) of a
// group, offsets from the group's base in the tiled layout and from the row's start.
template <class Copy>
void ForEachPiece(const TileGeometry& g, int64_t row_bytes, int64_t nr, int64_t row, Copy&& copy) {
  const int64_t j = SlotOf(g, nr, row);
  const int64_t block = g.block_bytes > 0 ? g.block_bytes : row_bytes;
  const int64_t units = (block - g.head_bytes) / g.unit_bytes;
  for (int64_t b = 0; b < row_bytes / block; ++b) {
    const int64_t base = b * block * nr;
    if (g.head_bytes > 0) copy(base + j * g.head_bytes, b * block, g.head_bytes);
    for (int64_t u = 0; u < units; ++u)
      copy(base + g.head_bytes * nr + (u * nr + j) * g.unit_bytes,
           b * block + g.head_bytes + u * g.unit_bytes, g.unit_bytes);
  }
}

}  // namespace

void ReadRow(const Tensor& t, int64_t r, void* dst) {
  XI_CHECK(t.rank() == 2 && 0 <= r && r < t.dim(0));
  const int64_t row_bytes = RowBytes(t);
  const auto* base = static_cast<const uint8_t*>(t.raw());
  if (t.layout() == Layout::kRowMajor) {
    std::memcpy(dst, base + r * row_bytes, static_cast<size_t>(row_bytes));
    return;
  }
  const TileGeometry g = TileGeometryOf(t.layout());
  const int64_t group = r / g.rows;
  const int64_t nr = std::min(g.rows, t.dim(0) - group * g.rows);
  const uint8_t* gb = base + group * g.rows * row_bytes;
  auto* out = static_cast<uint8_t*>(dst);
  ForEachPiece(g, row_bytes, nr, r % g.rows, [&](int64_t tiled, int64_t in_row, int64_t bytes) {
    std::memcpy(out + in_row, gb + tiled, static_cast<size_t>(bytes));
  });
}

namespace {

// Group [r0, r0 + nr) of a tiled layout with units of one T and no head (kDwordTiles,
// kWordTiles and their 64-row forms): a transpose, written in order (unit u of every row, then u +
// 1). A memcpy per 2-byte unit through ForEachPiece made placing a 136 M-value lm_head take
// seconds.
template <typename T>
void TransposeGroup(const TileGeometry& g, const uint8_t* src, uint8_t* dst, int64_t nr,
                    int64_t row_bytes) {
  const int64_t units = row_bytes / static_cast<int64_t>(sizeof(T));
  int64_t slot[kWideTileRows];
  XI_CHECK(nr <= kWideTileRows);
  for (int64_t j = 0; j < nr; ++j) slot[j] = SlotOf(g, nr, j);
  for (int64_t u = 0; u < units; ++u) {
    for (int64_t j = 0; j < nr; ++j) {
      T v;
      std::memcpy(&v, src + j * row_bytes + u * static_cast<int64_t>(sizeof(T)), sizeof(T));
      std::memcpy(dst + (u * nr + slot[j]) * static_cast<int64_t>(sizeof(T)), &v, sizeof(T));
    }
  }
}

}  // namespace

void PackRowTiles(Layout layout, const uint8_t* src, uint8_t* dst, int64_t rows, int64_t row_bytes,
                  int64_t g0, int64_t g1) {
  const TileGeometry g = TileGeometryOf(layout);
  for (int64_t grp = g0; grp < g1; ++grp) {
    const int64_t r0 = grp * g.rows, nr = std::min(g.rows, rows - r0);
    const uint8_t* s = src + r0 * row_bytes;
    uint8_t* d = dst + r0 * row_bytes;
    if (g.head_bytes == 0 && g.unit_bytes == 4) {
      TransposeGroup<uint32_t>(g, s, d, nr, row_bytes);
      continue;
    }
    if (g.head_bytes == 0 && g.unit_bytes == 2) {
      TransposeGroup<uint16_t>(g, s, d, nr, row_bytes);
      continue;
    }
    for (int64_t j = 0; j < nr; ++j) {
      const uint8_t* row = s + j * row_bytes;
      ForEachPiece(g, row_bytes, nr, j, [&](int64_t tiled, int64_t in_row, int64_t bytes) {
        std::memcpy(d + tiled, row + in_row, static_cast<size_t>(bytes));
      });
    }
  }
}

bool WidenToF32(const Tensor& t, float* out) {
  XI_CHECK(t.layout() == Layout::kRowMajor);
  const int64_t n = t.numel();
  switch (t.dtype()) {
    case DType::kF32:
      std::copy_n(t.data<float>(), n, out);
      return true;
    case DType::kBF16:
      for (int64_t i = 0; i < n; ++i) out[i] = Bf16ToF32(t.data<uint16_t>()[i]);
      return true;
    case DType::kF16:
      for (int64_t i = 0; i < n; ++i) out[i] = F16ToF32(t.data<uint16_t>()[i]);
      return true;
    default:
      return false;
  }
}

Tensor NewHostTensor(DType dtype, Shape shape) {
  const size_t bytes = static_cast<size_t>(NumElements(shape)) * DTypeSize(dtype);
  const size_t rounded = (bytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
  XI_CHECK_MSG(p != nullptr, "out of memory allocating weights");
  std::shared_ptr<void> owner(p, std::free);
  auto buffer = std::make_shared<PinnedHostBuffer>(owner, p, bytes);
  return Tensor(std::move(buffer), 0, dtype, std::move(shape));
}

}  // namespace xinfer
