#include "tensor/quant.h"

#include <fmt/core.h>

#include <cstring>
#include <vector>

#include "tensor/quant_blocks.h"

namespace xinfer {

const char* QuantTypeName(QuantType type) {
  switch (type) {
    case QuantType::kQ8_0:
      return "Q8_0";
    case QuantType::kQ4_0:
      return "Q4_0";
    case QuantType::kQ5_0:
      return "Q5_0";
    case QuantType::kQ4_1:
      return "Q4_1";
    case QuantType::kQ5_1:
      return "Q5_1";
    case QuantType::kQ4_K:
      return "Q4_K";
    case QuantType::kQ5_K:
      return "Q5_K";
    case QuantType::kQ6_K:
      return "Q6_K";
    case QuantType::kAwq4:
      return "AWQ4";
  }
  return "?";
}

int64_t QuantBlockElems(QuantType type) {
  switch (type) {
    case QuantType::kQ8_0:
    case QuantType::kQ4_0:
    case QuantType::kQ5_0:
    case QuantType::kQ4_1:
    case QuantType::kQ5_1:
      return 32;
    case QuantType::kQ4_K:
    case QuantType::kQ5_K:
    case QuantType::kQ6_K:
      return 256;
    case QuantType::kAwq4:
      break;
  }
  XI_CHECK_MSG(false, "AWQ4 has no fixed block");
  return 0;
}

int64_t QuantBlockBytes(QuantType type) {
  switch (type) {
    case QuantType::kQ8_0:
      return 2 + 32;
    case QuantType::kQ4_0:
      return 2 + 16;
    case QuantType::kQ5_0:
      return 2 + 4 + 16;
    case QuantType::kQ4_1:
      return 2 + 2 + 16;
    case QuantType::kQ5_1:
      return 2 + 2 + 4 + 16;
    case QuantType::kQ4_K:
      return 2 + 2 + 12 + 128;
    case QuantType::kQ5_K:
      return 2 + 2 + 12 + 32 + 128;
    case QuantType::kQ6_K:
      return 128 + 64 + 16 + 2;
    case QuantType::kAwq4:
      break;
  }
  XI_CHECK_MSG(false, "AWQ4 has no fixed block");
  return 0;
}

size_t QuantTensor::row_bytes() const {
  if (type == QuantType::kAwq4) return static_cast<size_t>(cols / 2);
  return static_cast<size_t>(cols / QuantBlockElems(type) * QuantBlockBytes(type));
}

size_t QuantTensor::size_bytes() const {
  size_t bytes = static_cast<size_t>(rows) * row_bytes();
  if (!scales.empty()) bytes += scales.size_bytes();
  if (!zeros.empty()) bytes += zeros.size_bytes();
  return bytes;
}

namespace {

// One AWQ4 row from its codes, group scales and zero points.
void DequantizeAwqRow(const uint8_t* src, const float* s, const float* z, int64_t cols,
                      int64_t group_size, float* out) {
  for (int64_t g = 0; g < cols / group_size; ++g) {
    const uint8_t* q = src + g * group_size / 2;
    float* o = out + g * group_size;
    for (int64_t i = 0; i < group_size / 2; ++i) {
      o[2 * i] = (static_cast<float>(q[i] & 0xF) - z[g]) * s[g];
      o[2 * i + 1] = (static_cast<float>(q[i] >> 4) - z[g]) * s[g];
    }
  }
}

}  // namespace

void DequantizeRow(const QuantTensor& w, int64_t r, float* out) {
  if (w.data.layout() != Layout::kRowMajor) {
    // A tiled weight (tensor.h): gather the row's bytes (and AWQ's scales and zero points).
    std::vector<uint8_t> q(w.row_bytes());
    ReadRow(w.data, r, q.data());
    if (w.type != QuantType::kAwq4) return DequantizeBlocks(w.type, q.data(), w.cols, out);
    XI_CHECK(w.scales.layout() == w.data.layout() && w.zeros.layout() == w.data.layout());
    const int64_t groups = w.cols / w.group_size;
    std::vector<float> s(groups), z(groups);
    ReadRow(w.scales, r, s.data());
    ReadRow(w.zeros, r, z.data());
    return DequantizeAwqRow(q.data(), s.data(), z.data(), w.cols, w.group_size, out);
  }
  const uint8_t* src = w.row(r);
  if (w.type != QuantType::kAwq4) {
    DequantizeBlocks(w.type, src, w.cols, out);
    return;
  }
  const int64_t groups = w.cols / w.group_size;
  DequantizeAwqRow(src, w.scales.data<float>() + r * groups, w.zeros.data<float>() + r * groups,
                   w.cols, w.group_size, out);
}

const Tensor& Weight::dense() const {
  XI_CHECK_MSG(!quant_, "dense() on a quantized weight");
  return dense_;
}

const QuantTensor& Weight::quant() const {
  XI_CHECK_MSG(quant_.has_value(), "quant() on a dense weight");
  return *quant_;
}

int64_t Weight::rows() const { return quant_ ? quant_->rows : dense_.dim(0); }
int64_t Weight::cols() const { return quant_ ? quant_->cols : dense_.dim(1); }

size_t Weight::size_bytes() const {
  if (quant_) return quant_->size_bytes();
  return dense_.empty() ? 0 : dense_.size_bytes();
}

std::string Weight::TypeName() const {
  if (!quant_) return DTypeName(dense_.dtype());
  if (quant_->type == QuantType::kAwq4) return fmt::format("AWQ4-g{}", quant_->group_size);
  return QuantTypeName(quant_->type);
}

namespace {

// Byte columns [begin, end) of every row of a row-major 2-D tensor, as a new host tensor of
// `cols` elements per row.
Tensor CopyRowBytes(const Tensor& t, int64_t begin, int64_t end, int64_t cols) {
  XI_CHECK_MSG(t.layout() == Layout::kRowMajor && t.rank() == 2, "column slice of a placed weight");
  const int64_t rows = t.dim(0), row_bytes = RowBytes(t);
  XI_CHECK(0 <= begin && begin <= end && end <= row_bytes);
  Tensor out = NewHostTensor(t.dtype(), {rows, cols});
  XI_CHECK(static_cast<int64_t>(out.size_bytes()) == rows * (end - begin));
  const auto* src = static_cast<const uint8_t*>(t.raw());
  auto* dst = static_cast<uint8_t*>(out.raw());
  for (int64_t r = 0; r < rows; ++r)
    std::memcpy(dst + r * (end - begin), src + r * row_bytes + begin, end - begin);
  return out;
}

}  // namespace

Weight Weight::Rows(int64_t begin, int64_t end) const {
  XI_CHECK(0 <= begin && begin <= end && end <= rows());
  if (!quant_) return Weight(dense_.Slice0(begin, end));
  QuantTensor q = *quant_;
  q.rows = end - begin;
  q.data = q.data.Slice0(begin, end);
  if (!q.scales.empty()) q.scales = q.scales.Slice0(begin, end);
  if (!q.zeros.empty()) q.zeros = q.zeros.Slice0(begin, end);
  return Weight(std::move(q));
}

int64_t Weight::ColumnGranularity() const {
  if (!quant_) return 1;
  return quant_->type == QuantType::kAwq4 ? quant_->group_size : QuantBlockElems(quant_->type);
}

Weight Weight::Columns(int64_t begin, int64_t end) const {
  const int64_t unit = ColumnGranularity();
  XI_CHECK(0 <= begin && begin <= end && end <= cols() && begin % unit == 0 && end % unit == 0);
  if (!quant_) {
    const int64_t elem = static_cast<int64_t>(DTypeSize(dense_.dtype()));
    return Weight(CopyRowBytes(dense_, begin * elem, end * elem, end - begin));
  }
  QuantTensor q = *quant_;
  q.cols = end - begin;
  const int64_t bytes_per_unit = q.type == QuantType::kAwq4 ? unit / 2 : QuantBlockBytes(q.type);
  q.data = CopyRowBytes(q.data, begin / unit * bytes_per_unit, end / unit * bytes_per_unit,
                        static_cast<int64_t>(q.row_bytes()));
  if (q.type == QuantType::kAwq4) {
    const int64_t g0 = begin / unit * 4, g1 = end / unit * 4;  // F32 per group
    q.scales = CopyRowBytes(q.scales, g0, g1, q.cols / unit);
    q.zeros = CopyRowBytes(q.zeros, g0, g1, q.cols / unit);
  }
  return Weight(std::move(q));
}

bool Weight::SameStorage(const Weight& other) const {
  if (empty() || other.empty() || quantized() != other.quantized()) return false;
  const Tensor& a = quant_ ? quant_->data : dense_;
  const Tensor& b = other.quant_ ? other.quant_->data : other.dense_;
  return a.raw() == b.raw();
}

}  // namespace xinfer
