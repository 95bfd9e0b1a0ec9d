// Quantized weights. QuantTensor holds a [rows, cols] matrix in one of the block formats of
// llama.cpp's GGUF files (Q8_0, Q4_0, Q5_0, Q4_1, Q5_1, Q4_K, Q5_K, Q6_K) or in AWQ's 4-bit group
// quantization (repacked at load time); Weight is what a model projection holds: a dense Tensor or
// a QuantTensor. Quantization runs along `cols` (the reduction dimension K of Linear), so every
// row is an independent run of blocks and rows can be reordered or sliced freely.
//
// Ownership: like Tensor, a QuantTensor shares its Buffers (often a memory-mapped file); copying
// never copies data. Immutable after construction; thread-safe to read.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "tensor/tensor.h"

namespace xinfer {

enum class QuantType : uint8_t {
  kQ8_0,  // 32 elements: f16 d, int8 q[32];                     x = d * q
  kQ4_0,  // 32 elements: f16 d, u8 q[16] (lo nibbles 0..15, hi 16..31); x = d * (q - 8)
  kQ5_0,  // 32 elements: f16 d, u8 qh[4] (bit i: 5th bit of element i), u8 q[16] as Q4_0;
          // x = d * (q - 16). llama.cpp's fallback in Q4_K_M files for rows not a multiple of 256
  kQ4_1,  // 32 elements: f16 d, f16 m, u8 q[16] as Q4_0;                x = d * q + m
  kQ5_1,  // 32 elements: f16 d, f16 m, u8 qh[4] and u8 q[16] as Q5_0;   x = d * q + m
          // (q 0..31). llama.cpp's fallback in Q5_K_M files for rows not a multiple of 256
  kQ4_K,  // 256 elements: f16 d, f16 dmin, u8 scales[12] (8 x 6-bit scale/min), u8 q[128]
  kQ5_K,  // 256 elements: f16 d, f16 dmin, u8 scales[12] as Q4_K, u8 qh[32] (5th bits), u8 q[128]
  kQ6_K,  // 256 elements: u8 ql[128], u8 qh[64], int8 scales[16], f16 d
  kAwq4,  // AWQ W4 with zero point, per group of `group_size` along cols (see QuantTensor)
};

// "Q8_0", "Q4_0", "Q5_0", "Q4_1", "Q5_1", "Q4_K", "Q5_K", "Q6_K", "AWQ4"
const char* QuantTypeName(QuantType type);
// Elements and bytes of one block of a GGML block format (not kAwq4, which has no fixed block).
int64_t QuantBlockElems(QuantType type);
int64_t QuantBlockBytes(QuantType type);

struct QuantTensor {
  QuantType type = QuantType::kQ8_0;
  int64_t rows = 0;  // N (output features)
  int64_t cols = 0;  // K (input features); a multiple of the block / group size
  // GGML formats: U8 [rows, row_bytes()], each row cols / block_elems blocks in GGML layout.
  // kAwq4: U8 [rows, cols / 2], element k of a row in byte k / 2, low nibble for even k.
  // Row-major, or as the CPU backend places it for its AVX2 int8 broadcast-x kernel (tensor.h):
  // AWQ in kDwordTiles (then scales and zeros too), Q4_0 in kQ4_0Tiles. DequantizeRow reads every
  // layout, row() only row-major data.
  Tensor data;
  // kAwq4 only: F32 [rows, cols / group_size] scales and zero points; x = (q - zero) * scale.
  Tensor scales;
  Tensor zeros;
  int64_t group_size = 0;

  size_t row_bytes() const;
  const uint8_t* row(int64_t r) const {
    XI_CHECK_MSG(data.layout() == Layout::kRowMajor, "row() of a tiled quantized weight");
    return static_cast<const uint8_t*>(data.raw()) + static_cast<size_t>(r) * row_bytes();
  }
  // All bytes the weight occupies (blocks, plus scales and zeros for AWQ).
  size_t size_bytes() const;
};

// Writes the `cols` floats of row r of `w`.
void DequantizeRow(const QuantTensor& w, int64_t r, float* out);

// A projection's weight: a dense F32/F16/BF16 Tensor [rows, cols] or a QuantTensor.
class Weight {
 public:
  Weight() = default;
  Weight(Tensor dense) : dense_(std::move(dense)) {}       // NOLINT: dense weights convert freely
  Weight(QuantTensor quant) : quant_(std::move(quant)) {}  // NOLINT

  bool empty() const { return !quant_ && dense_.empty(); }
  bool quantized() const { return quant_.has_value(); }
  const Tensor& dense() const;
  const QuantTensor& quant() const;
  int64_t rows() const;
  int64_t cols() const;
  size_t size_bytes() const;
  // "BF16", "Q4_K", "AWQ4-g128": how the weight is stored, for inspect and messages.
  std::string TypeName() const;
  // True when both refer to the same stored bytes (a tied lm_head).
  bool SameStorage(const Weight& other) const;

  // Shards for tensor parallelism (row-major weights, as loaded; model/layers/decoder_shard.h).
  // Rows [begin, end): a view of the same storage (quantized rows are independent runs of blocks).
  Weight Rows(int64_t begin, int64_t end) const;
  // Columns [begin, end), copied into new host memory. For quantized weights both bounds must be
  // multiples of ColumnGranularity() (a block never straddles two shards).
  Weight Columns(int64_t begin, int64_t end) const;
  // What column slices must be multiples of: 1 (dense), the block's elements (GGML formats) or
  // the group size (AWQ).
  int64_t ColumnGranularity() const;

 private:
  Tensor dense_;
  std::optional<QuantTensor> quant_;
};

}  // namespace xinfer
