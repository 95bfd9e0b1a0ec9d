#include "tensor/tensor.h"

#include <algorithm>
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
  if (layout_ != Layout::kRowMajor)
    XI_CHECK_MSG(rank() == 2 && RowBytes(*this) % TileGeometryOf(layout_).unit_bytes == 0,
                 "a tiled layout needs a 2-D tensor of whole units per row");
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
    case Layout::kRowMajor:
      break;
  }
  XI_CHECK_MSG(false, "row-major is not a tiled layout");
  return {};
}

void ReadRow(const Tensor& t, int64_t r, void* dst) {
  XI_CHECK(t.rank() == 2 && 0 <= r && r < t.dim(0));
  const int64_t row_bytes = RowBytes(t);
  const auto* base = static_cast<const uint8_t*>(t.raw());
  if (t.layout() == Layout::kRowMajor) {
    std::memcpy(dst, base + r * row_bytes, static_cast<size_t>(row_bytes));
    return;
  }
  const auto [g_rows, unit] = TileGeometryOf(t.layout());
  const int64_t group = r / g_rows, j = r % g_rows;
  const int64_t nr = std::min(g_rows, t.dim(0) - group * g_rows);
  const uint8_t* g = base + group * g_rows * row_bytes;
  auto* out = static_cast<uint8_t*>(dst);
  for (int64_t u = 0; u < row_bytes / unit; ++u)
    std::memcpy(out + u * unit, g + (u * nr + j) * unit, static_cast<size_t>(unit));
}

void PackRowTiles(Layout layout, const uint8_t* src, uint8_t* dst, int64_t rows, int64_t row_bytes,
                  int64_t g0, int64_t g1) {
  const auto [g_rows, unit] = TileGeometryOf(layout);
  XI_CHECK(row_bytes % unit == 0);
  const int64_t units = row_bytes / unit;
  for (int64_t g = g0; g < g1; ++g) {
    const int64_t r0 = g * g_rows, nr = std::min(g_rows, rows - r0);
    const uint8_t* s = src + r0 * row_bytes;
    uint8_t* d = dst + r0 * row_bytes;
    if (unit == 4) {  // kDwordTiles: one constant-size copy per dword (~50M for a 0.5B model)
      for (int64_t u = 0; u < units; ++u)
        for (int64_t j = 0; j < nr; ++j)
          std::memcpy(d + (u * nr + j) * 4, s + j * row_bytes + u * 4, 4);
      continue;
    }
    for (int64_t u = 0; u < units; ++u)
      for (int64_t j = 0; j < nr; ++j)
        std::memcpy(d + (u * nr + j) * unit, s + j * row_bytes + u * unit,
                    static_cast<size_t>(unit));
  }
}

}  // namespace xinfer
