// GGUF reader (llama.cpp's single-file model format, versions 2 and 3), memory-mapped.
// Layout: "GGUF", u32 version, u64 tensor count, u64 metadata count; metadata as (string key,
// u32 value type, value) with strings as u64 length + bytes and arrays as u32 element type +
// u64 count + elements; tensor infos as (name, u32 n_dims, u64 ne[n_dims] innermost first,
// u32 ggml type, u64 offset); then padding to `general.alignment` (default 32) and the data,
// each tensor at its offset from the start of the data (a multiple of the alignment).
// Everything is little-endian.
//
// Open() validates the whole header before handing anything out: every read is bounds-checked,
// counts are capped by the bytes that remain, tensor types must be known, offsets aligned, data
// inside the file and tensors non-overlapping. A truncated, corrupt or hostile file yields a
// Status naming the problem (and the tensor or key), never an out-of-bounds read.
// Thread-safety: immutable after Open; safe to share. Tensors handed out keep the mapping alive.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/mapped_file.h"
#include "base/status.h"
#include "tensor/quant.h"
#include "tensor/tensor.h"

namespace xinfer {

enum class GgufType : uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};
const char* GgufTypeName(GgufType type);

// One metadata value. Integers are widened into `u64`/`i64` (by signedness), floats into `f64`.
struct GgufValue {
  GgufType type = GgufType::kUint8;
  GgufType array_type = GgufType::kUint8;  // element type when type == kArray
  uint64_t u64 = 0;
  int64_t i64 = 0;
  double f64 = 0;
  bool b = false;
  std::string str;
  std::vector<GgufValue> array;

  bool is_integer() const;
  bool is_number() const {
    return is_integer() || type == GgufType::kFloat32 || type == GgufType::kFloat64;
  }
  // Any integer type as int64 (unsigned values above INT64_MAX are out of range: nullopt).
  std::optional<int64_t> AsInt() const;
  // Any numeric type as double.
  std::optional<double> AsDouble() const;
  // A short human-readable rendering (arrays elided after `max_items`), for inspect.
  std::string ToString(size_t max_items = 8) const;
};

// ggml tensor types (ggml.h's enum ggml_type numbering).
namespace ggml {
inline constexpr uint32_t kF32 = 0, kF16 = 1, kQ4_0 = 2, kQ4_1 = 3, kQ5_0 = 6, kQ5_1 = 7, kQ8_0 = 8,
                          kQ2_K = 10, kQ4_K = 12, kQ5_K = 13, kQ6_K = 14, kBF16 = 30;
}
// Name ("Q4_K") of a ggml type id, or nullptr when the id is unknown.
const char* GgmlTypeName(uint32_t type);
// The QuantType the engine computes with for a ggml type id, if any.
std::optional<QuantType> GgmlQuantType(uint32_t type);

struct GgufTensorInfo {
  std::string name;
  uint32_t type = 0;        // ggml type id
  std::vector<int64_t> ne;  // dimensions as stored, innermost (contiguous) first
  Shape shape;              // the same, row-major (outermost first): [rows, cols] for a matrix
  int64_t num_elements = 0;
  size_t offset = 0;  // absolute byte offset in the file
  size_t size = 0;    // bytes
};

class GgufFile {
 public:
  static StatusOr<std::unique_ptr<GgufFile>> Open(const std::string& path);

  const std::string& path() const { return file_->path(); }
  uint32_t version() const { return version_; }
  size_t alignment() const { return alignment_; }
  size_t data_offset() const { return data_offset_; }
  size_t file_size() const { return file_->size(); }

  // Metadata in file order.
  const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return metadata_; }
  const GgufValue* Find(const std::string& key) const;
  bool Has(const std::string& key) const { return Find(key) != nullptr; }
  // Typed getters: NotFound when absent, InvalidArgument (naming the key) on a type mismatch.
  StatusOr<std::string> GetString(const std::string& key) const;
  StatusOr<int64_t> GetInt(const std::string& key) const;
  StatusOr<double> GetDouble(const std::string& key) const;
  StatusOr<bool> GetBool(const std::string& key) const;
  StatusOr<std::vector<std::string>> GetStringArray(const std::string& key) const;
  StatusOr<std::vector<float>> GetFloatArray(const std::string& key) const;
  StatusOr<std::vector<int32_t>> GetIntArray(const std::string& key) const;

  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  const GgufTensorInfo* FindTensor(const std::string& name) const;
  // The tensor as a Weight: dense (F32/F16/BF16, shape as stored) or quantized (Q8_0, Q4_0,
  // Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K as [rows, ne0]). Other ggml types are Unimplemented;
  // NotFound when absent.
  StatusOr<Weight> GetWeight(const std::string& name) const;
  // A dense F32/F16/BF16 tensor; quantized ones are InvalidArgument.
  StatusOr<Tensor> GetDense(const std::string& name) const;
  // The tensor's raw bytes as a U8 tensor [size].
  Tensor GetRaw(const GgufTensorInfo& info) const;

 private:
  Status Parse();

  std::shared_ptr<MappedFile> file_;
  uint32_t version_ = 0;
  size_t alignment_ = 32;
  size_t data_offset_ = 0;
  std::vector<std::pair<std::string, GgufValue>> metadata_;
  std::map<std::string, size_t> metadata_index_;
  std::vector<GgufTensorInfo> tensors_;
  std::map<std::string, size_t> tensor_index_;
};

}  // namespace xinfer
