// Tensor: a dtype, a shape (row-major, contiguous) and a byte range inside a Buffer.
// A Buffer owns (or pins) memory that belongs to one device; the CPU backend allocates aligned
// host memory, and model weights are Buffers that pin a memory-mapped file.
// Tensors share their Buffer by shared_ptr: copying a Tensor never copies data.
// Not thread-safe for concurrent writes to the same data (callers own that discipline).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "base/check.h"
#include "tensor/dtype.h"

namespace xinfer {

class Buffer {
 public:
  virtual ~Buffer() = default;
  virtual void* data() = 0;
  virtual size_t size_bytes() const = 0;
  // Name of the device the memory lives on ("cpu", ...), for diagnostics.
  virtual const char* device_name() const = 0;
};

// Host memory that stays alive as long as `owner` does (e.g. a MappedFile). Read-only contents
// are the caller's promise; the pointer is non-const so that one Tensor type serves both.
class PinnedHostBuffer : public Buffer {
 public:
  PinnedHostBuffer(std::shared_ptr<const void> owner, void* data, size_t size)
      : owner_(std::move(owner)), data_(data), size_(size) {}
  void* data() override { return data_; }
  size_t size_bytes() const override { return size_; }
  const char* device_name() const override { return "cpu"; }

 private:
  std::shared_ptr<const void> owner_;
  void* data_;
  size_t size_;
};

using Shape = std::vector<int64_t>;

// How a 2-D tensor's rows lie in its bytes. kRowMajor: row r at r x row_bytes. The tiled layouts
// (only for weights the CPU backend placed, backend.h) keep rows in groups of G rows, the last
// group possibly shorter (nr rows); a group starts where row-major puts its first row. Its rows
// are cut into block columns of B bytes (B = the whole row unless given); block column b of the
// group holds, from group_base + b x B x nr, the first H bytes (the head) of each of its rows side
// by side, then the rest of each row's block in U-byte units, interleaved: unit u of row r at
// (H x nr) + (u x nr + r % G) x U. Same bytes as row-major, rows a whole number of blocks and a
// block's rest a whole number of units.
//   kRowTiles (G = kTileRows = 6, U = 64, no head): a decode kernel that multiplies a group's
//     rows side by side reads one sequential stream instead of G short ones (docs/performance.md,
//     session 7).
//   kDwordTiles (G = 16, U = 4, no head): 16 rows' dwords side by side, one 64-byte vector per
//     unit, for kernels that keep one output row per 32-bit lane (AWQ codes, scales and zero
//     points under the AVX2 int8 broadcast-x kernel, cpu_kernels_int8_panels_avx2.cc).
//     The same layout holds F32 dense weights for the AVX2 dense broadcast-x kernel
//     (cpu_kernels_dense_panels_avx2.cc): per k, the 16 rows' values side by side.
//   kQ4_0Tiles (G = 16, B = 18: one GGUF Q4_0 block, H = 2: its F16 scale, U = 4): per block, the
//     16 rows' scales side by side, then their codes as dword tiles (the same kernel's Q4_0).
//   kWordTiles (G = 16, U = 2, no head): kDwordTiles for 16-bit values (BF16 and F16 dense
//     weights under the AVX2 dense broadcast-x kernel).
//   kDwordTiles64, kWordTiles64 (G = 64, U = 4 or 2, no head): the same with 64 rows, for the
//     AVX-512 dense broadcast-x kernels (cpu_kernels_dense_panels_avx512.cc): a k-step of a
//     group is four 16-lane registers that lie one after another, so a decode GEMV keeps four
//     FMA chains going on one sequential stream.
//   kWordPairTiles64 (G = 64, U = 2, no head, pairs): kWordTiles64 with the 64 rows of a full
//     group in pair order — per k-step, 32-row half h, value slot 32h + 2i holds row 32h + i and
//     slot 32h + 2i + 1 row 32h + 16 + i (i < 16) — so that one 64-byte vector's dword i is rows
//     (32h + i, 32h + 16 + i): BF16 weights widen to F32 by one shift for 16 rows and one AND for
//     the other 16 instead of a zero-extension and a shift per 16 (AVX-512 BF16 weights with F32
//     activations; docs/performance.md, session 21). A short last group keeps kWordTiles64's
//     order.
enum class Layout : uint8_t {
  kRowMajor,
  kRowTiles,
  kDwordTiles,
  kQ4_0Tiles,
  kWordTiles,
  kDwordTiles64,
  kWordTiles64,
  kWordPairTiles64
};
inline constexpr int64_t kTileRows = 6;
inline constexpr int64_t kTileUnitBytes = 64;
inline constexpr int64_t kDwordTileRows = 16;
inline constexpr int64_t kWideTileRows = 64;
struct TileGeometry {
  int64_t rows;             // G
  int64_t unit_bytes;       // U
  int64_t block_bytes = 0;  // B; 0: the whole row
  int64_t head_bytes = 0;   // H
  bool pairs = false;       // full groups' rows in pair order (kWordPairTiles64)
};
// The slot of row j (< 64) of a full kWordPairTiles64 group within a k-step.
constexpr int64_t WordPairSlot(int64_t j) { return (j & 32) | (j & 15) << 1 | (j >> 4 & 1); }
// The geometry of a tiled layout (not kRowMajor).
TileGeometry TileGeometryOf(Layout layout);
std::string ShapeToString(const Shape& shape);
int64_t NumElements(const Shape& shape);

class Tensor {
 public:
  Tensor() = default;
  Tensor(std::shared_ptr<Buffer> buffer, size_t offset, DType dtype, Shape shape,
         Layout layout = Layout::kRowMajor);

  bool empty() const { return buffer_ == nullptr; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t dim(int i) const { return shape_.at(i < 0 ? shape_.size() + i : i); }
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t numel() const { return NumElements(shape_); }
  size_t size_bytes() const { return static_cast<size_t>(numel()) * DTypeSize(dtype_); }

  void* raw() const { return static_cast<uint8_t*>(buffer_->data()) + offset_; }
  template <typename T>
  T* data() const {
    return static_cast<T*>(raw());
  }
  const std::shared_ptr<Buffer>& buffer() const { return buffer_; }
  Layout layout() const { return layout_; }

  // Same data, new shape with the same element count (row-major tensors only).
  Tensor Reshaped(Shape shape) const;
  // Rows [begin, end) along dimension 0 (no copy; row-major tensors only).
  Tensor Slice0(int64_t begin, int64_t end) const;

 private:
  std::shared_ptr<Buffer> buffer_;
  size_t offset_ = 0;
  DType dtype_ = DType::kF32;
  Shape shape_;
  Layout layout_ = Layout::kRowMajor;
};

// A tensor in new host memory, 64-byte aligned (weights made at load time: repacked, converted
// or permuted copies). Contents uninitialized.
Tensor NewHostTensor(DType dtype, Shape shape);

// The elements of a row-major F32 / BF16 / F16 tensor widened to F32 into `out` (numel()
// floats); false (nothing written) for any other dtype.
bool WidenToF32(const Tensor& t, float* out);

// Bytes of one row of a 2-D tensor.
int64_t RowBytes(const Tensor& t);
// Copies row r of a 2-D tensor, in either layout, to dst in row order (RowBytes(t) bytes).
void ReadRow(const Tensor& t, int64_t r, void* dst);
// Row groups [g0, g1) of a [rows, row_bytes] row-major matrix at src, written in the tiled
// `layout` to dst (the same size); groups are independent, so callers may split them across
// threads.
void PackRowTiles(Layout layout, const uint8_t* src, uint8_t* dst, int64_t rows, int64_t row_bytes,
                  int64_t g0, int64_t g1);

}  // namespace xinfer
