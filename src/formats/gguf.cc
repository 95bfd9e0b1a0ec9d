#include "formats/gguf.h"

#include <fmt/core.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>

namespace xinfer {
namespace {

struct GgmlTypeInfo {
  uint32_t id;
  const char* name;
  int64_t block_elems;
  int64_t block_bytes;
};

// Every type id ggml defines (ggml.h), with its block geometry, so that files holding types we
// cannot compute with still open (inspect lists them) and their sizes are still validated.
constexpr GgmlTypeInfo kGgmlTypes[] = {
    {0, "F32", 1, 4},         {1, "F16", 1, 2},         {2, "Q4_0", 32, 18},
    {3, "Q4_1", 32, 20},      {6, "Q5_0", 32, 22},      {7, "Q5_1", 32, 24},
    {8, "Q8_0", 32, 34},      {9, "Q8_1", 32, 36},      {10, "Q2_K", 256, 84},
    {11, "Q3_K", 256, 110},   {12, "Q4_K", 256, 144},   {13, "Q5_K", 256, 176},
    {14, "Q6_K", 256, 210},   {15, "Q8_K", 256, 292},   {16, "IQ2_XXS", 256, 66},
    {17, "IQ2_XS", 256, 74},  {18, "IQ3_XXS", 256, 98}, {19, "IQ1_S", 256, 50},
    {20, "IQ4_NL", 32, 18},   {21, "IQ3_S", 256, 110},  {22, "IQ2_S", 256, 82},
    {23, "IQ4_XS", 256, 136}, {24, "I8", 1, 1},         {25, "I16", 1, 2},
    {26, "I32", 1, 4},        {27, "I64", 1, 8},        {28, "F64", 1, 8},
    {29, "IQ1_M", 256, 56},   {30, "BF16", 1, 2},       {34, "TQ1_0", 256, 54},
    {35, "TQ2_0", 256, 66},
};

const GgmlTypeInfo* FindGgmlType(uint32_t id) {
  for (const auto& t : kGgmlTypes)
    if (t.id == id) return &t;
  return nullptr;
}

constexpr int kMaxArrayDepth = 4;  // GGUF allows nested arrays; real files nest at most once
constexpr uint32_t kMaxDims = 4;   // GGML_MAX_DIMS

// Bounds-checked little-endian reader over the mapped header.
class Cursor {
 public:
  Cursor(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  size_t pos() const { return pos_; }
  size_t remaining() const { return size_ - pos_; }

  template <typename T>
  Status Read(T* out, const char* what) {
    if (remaining() < sizeof(T))
      return DataLoss("truncated GGUF header: {} at byte {} runs past the end of the file", what,
                      pos_);
    std::memcpy(out, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return Status::Ok();
  }

  Status ReadString(std::string* out, const char* what) {
    uint64_t n;
    XI_RETURN_IF_ERROR(Read(&n, what));
    if (n > remaining())
      return DataLoss(
          "truncated GGUF header: {} of {} bytes at byte {} runs past the end of the "
          "file",
          what, n, pos_);
    out->assign(reinterpret_cast<const char*>(data_ + pos_), n);
    pos_ += n;
    return Status::Ok();
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

// Smallest encoding of one value of `type`, to cap array counts by the bytes that remain.
size_t MinValueBytes(GgufType type) {
  switch (type) {
    case GgufType::kUint8:
    case GgufType::kInt8:
    case GgufType::kBool:
      return 1;
    case GgufType::kUint16:
    case GgufType::kInt16:
      return 2;
    case GgufType::kUint32:
    case GgufType::kInt32:
    case GgufType::kFloat32:
      return 4;
    case GgufType::kString:
    case GgufType::kUint64:
    case GgufType::kInt64:
    case GgufType::kFloat64:
      return 8;
    case GgufType::kArray:
      return 12;
  }
  return 1;
}

bool KnownType(uint32_t t) { return t <= static_cast<uint32_t>(GgufType::kFloat64); }

Status ReadValue(Cursor& c, GgufType type, int depth, const std::string& key, GgufValue* v) {
  v->type = type;
  switch (type) {
    case GgufType::kUint8: {
      uint8_t x = 0;
      XI_RETURN_IF_ERROR(c.Read(&x, "u8 value"));
      v->u64 = x;
      break;
    }
    case GgufType::kInt8: {
      int8_t x = 0;
      XI_RETURN_IF_ERROR(c.Read(&x, "i8 value"));
      v->i64 = x;
      break;
    }
    case GgufType::kUint16: {
      uint16_t x = 0;
      XI_RETURN_IF_ERROR(c.Read(&x, "u16 value"));
      v->u64 = x;
      break;
    }
    case GgufType::kInt16: {
      int16_t x = 0;
      XI_RETURN_IF_ERROR(c.Read(&x, "i16 value"));
      v->i64 = x;
      break;
    }
    case GgufType::kUint32: {
      uint32_t x = 0;
      XI_RETURN_IF_ERROR(c.Read(&x, "u32 value"));
      v->u64 = x;
      break;
    }
    case GgufType::kInt32: {
      int32_t x = 0;
      XI_RETURN_IF_ERROR(c.Read(&x, "i32 value"));
      v->i64 = x;
      break;
    }
    case GgufType::kUint64:
      XI_RETURN_IF_ERROR(c.Read(&v->u64, "u64 value"));
      break;
    case GgufType::kInt64:
      XI_RETURN_IF_ERROR(c.Read(&v->i64, "i64 value"));
      break;
    case GgufType::kFloat32: {
      float x = 0;
      XI_RETURN_IF_ERROR(c.Read(&x, "f32 value"));
      v->f64 = x;
      break;
    }
    case GgufType::kFloat64:
      XI_RETURN_IF_ERROR(c.Read(&v->f64, "f64 value"));
      break;
    case GgufType::kBool: {
      uint8_t x = 0;
      XI_RETURN_IF_ERROR(c.Read(&x, "bool value"));
      if (x > 1) return InvalidArgument("metadata '{}': bool value {} is neither 0 nor 1", key, x);
      v->b = x != 0;
      break;
    }
    case GgufType::kString:
      XI_RETURN_IF_ERROR(c.ReadString(&v->str, "string value"));
      break;
    case GgufType::kArray: {
      if (depth >= kMaxArrayDepth)
        return InvalidArgument("metadata '{}': arrays nested deeper than {}", key, kMaxArrayDepth);
      uint32_t et;
      uint64_t n;
      XI_RETURN_IF_ERROR(c.Read(&et, "array element type"));
      if (!KnownType(et))
        return InvalidArgument("metadata '{}': unknown array element type {}", key, et);
      XI_RETURN_IF_ERROR(c.Read(&n, "array length"));
      v->array_type = static_cast<GgufType>(et);
      if (n > c.remaining() / MinValueBytes(v->array_type))
        return DataLoss(
            "metadata '{}': array of {} elements cannot fit in the {} bytes left "
            "(truncated or corrupt file)",
            key, n, c.remaining());
      v->array.resize(n);
      for (uint64_t i = 0; i < n; ++i)
        XI_RETURN_IF_ERROR(ReadValue(c, v->array_type, depth + 1, key, &v->array[i]));
      break;
    }
  }
  return Status::Ok();
}

}  // namespace

const char* GgufTypeName(GgufType type) {
  static const char* kNames[] = {"u8",   "i8",     "u16",   "i16", "u32", "i32", "f32",
                                 "bool", "string", "array", "u64", "i64", "f64"};
  const auto i = static_cast<uint32_t>(type);
  return i < std::size(kNames) ? kNames[i] : "?";
}

const char* GgmlTypeName(uint32_t type) {
  const GgmlTypeInfo* t = FindGgmlType(type);
  return t ? t->name : nullptr;
}

std::optional<QuantType> GgmlQuantType(uint32_t type) {
  switch (type) {
    case ggml::kQ8_0:
      return QuantType::kQ8_0;
    case ggml::kQ4_0:
      return QuantType::kQ4_0;
    case ggml::kQ4_1:
      return QuantType::kQ4_1;
    case ggml::kQ5_0:
      return QuantType::kQ5_0;
    case ggml::kQ5_1:
      return QuantType::kQ5_1;
    case ggml::kQ4_K:
      return QuantType::kQ4_K;
    case ggml::kQ5_K:
      return QuantType::kQ5_K;
    case ggml::kQ6_K:
      return QuantType::kQ6_K;
    default:
      return std::nullopt;
  }
}

bool GgufValue::is_integer() const {
  switch (type) {
    case GgufType::kUint8:
    case GgufType::kInt8:
    case GgufType::kUint16:
    case GgufType::kInt16:
    case GgufType::kUint32:
    case GgufType::kInt32:
    case GgufType::kUint64:
    case GgufType::kInt64:
      return true;
    default:
      return false;
  }
}

std::optional<int64_t> GgufValue::AsInt() const {
  if (!is_integer()) return std::nullopt;
  switch (type) {
    case GgufType::kInt8:
    case GgufType::kInt16:
    case GgufType::kInt32:
    case GgufType::kInt64:
      return i64;
    default:
      if (u64 > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
      return static_cast<int64_t>(u64);
  }
}

std::optional<double> GgufValue::AsDouble() const {
  if (type == GgufType::kFloat32 || type == GgufType::kFloat64) return f64;
  if (auto i = AsInt()) return static_cast<double>(*i);
  return std::nullopt;
}

std::string GgufValue::ToString(size_t max_items) const {
  switch (type) {
    case GgufType::kString: {
      std::string s = str.size() > 60 ? str.substr(0, 57) + "..." : str;
      for (char& ch : s)
        if (ch == '\n') ch = ' ';
      return "\"" + s + "\"";
    }
    case GgufType::kBool:
      return b ? "true" : "false";
    case GgufType::kFloat32:
    case GgufType::kFloat64:
      return fmt::format("{}", f64);
    case GgufType::kArray: {
      std::string s = fmt::format("[{} x {}: ", array.size(), GgufTypeName(array_type));
      for (size_t i = 0; i < array.size() && i < max_items; ++i)
        s += (i ? ", " : "") + array[i].ToString(max_items);
      return s + (array.size() > max_items ? ", ...]" : "]");
    }
    default: {
      auto i = AsInt();
      return i ? fmt::format("{}", *i) : fmt::format("{}", u64);
    }
  }
}

StatusOr<std::unique_ptr<GgufFile>> GgufFile::Open(const std::string& path) {
  XI_ASSIGN_OR_RETURN(auto file, MappedFile::Open(path));
  std::unique_ptr<GgufFile> g(new GgufFile());
  g->file_ = std::move(file);
  Status s = g->Parse();
  if (!s.ok()) return s.WithContext(path);
  return g;
}

Status GgufFile::Parse() {
  Cursor c(file_->data(), file_->size());
  uint32_t magic;
  if (file_->size() < 4) return DataLoss("file of {} bytes is too short for GGUF", file_->size());
  XI_RETURN_IF_ERROR(c.Read(&magic, "magic"));
  if (std::memcmp(&magic, "GGUF", 4) != 0) return InvalidArgument("not a GGUF file (bad magic)");
  XI_RETURN_IF_ERROR(c.Read(&version_, "version"));
  if (version_ == 1)
    return Unimplemented(
        "GGUF version 1 is not supported (re-convert with a llama.cpp from 2023 "
        "or later)");
  if (version_ != 2 && version_ != 3)
    return Unimplemented("GGUF version {} is not supported (2 and 3 are)", version_);
  uint64_t n_tensors, n_kv;
  XI_RETURN_IF_ERROR(c.Read(&n_tensors, "tensor count"));
  XI_RETURN_IF_ERROR(c.Read(&n_kv, "metadata count"));
  if (n_kv > c.remaining() / 12)  // key length, type and a 1-byte value at the least
    return DataLoss("metadata count {} cannot fit in the {} bytes left", n_kv, c.remaining());
  metadata_.reserve(n_kv);
  for (uint64_t i = 0; i < n_kv; ++i) {
    std::string key;
    uint32_t type;
    XI_RETURN_IF_ERROR(c.ReadString(&key, "metadata key"));
    XI_RETURN_IF_ERROR(c.Read(&type, "metadata value type"));
    if (!KnownType(type)) return InvalidArgument("metadata '{}': unknown value type {}", key, type);
    GgufValue v;
    XI_RETURN_IF_ERROR(ReadValue(c, static_cast<GgufType>(type), 0, key, &v));
    if (!metadata_index_.emplace(key, metadata_.size()).second)
      return InvalidArgument("metadata key '{}' appears twice", key);
    metadata_.emplace_back(std::move(key), std::move(v));
  }
  if (const GgufValue* a = Find("general.alignment")) {
    auto v = a->AsInt();
    if (!v || *v <= 0 || (*v & (*v - 1)) != 0 || *v > (1 << 20))
      return InvalidArgument("general.alignment {} is not a power of two", a->ToString());
    alignment_ = static_cast<size_t>(*v);
  }

  if (n_tensors > c.remaining() / 28)  // name length, n_dims, one dim, type, offset
    return DataLoss("tensor count {} cannot fit in the {} bytes left", n_tensors, c.remaining());
  tensors_.reserve(n_tensors);
  for (uint64_t i = 0; i < n_tensors; ++i) {
    GgufTensorInfo t;
    uint32_t n_dims;
    XI_RETURN_IF_ERROR(c.ReadString(&t.name, "tensor name"));
    XI_RETURN_IF_ERROR(c.Read(&n_dims, "tensor rank"));
    if (n_dims == 0 || n_dims > kMaxDims)
      return InvalidArgument("tensor '{}': rank {} (must be 1..{})", t.name, n_dims, kMaxDims);
    uint64_t numel = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      uint64_t ne;
      XI_RETURN_IF_ERROR(c.Read(&ne, "tensor dimension"));
      if (ne > (1ull << 40) || (ne != 0 && numel > (1ull << 50) / ne))
        return InvalidArgument("tensor '{}': dimensions too large", t.name);
      numel *= ne;
      t.ne.push_back(static_cast<int64_t>(ne));
    }
    t.shape.assign(t.ne.rbegin(), t.ne.rend());
    t.num_elements = static_cast<int64_t>(numel);
    uint64_t offset;
    XI_RETURN_IF_ERROR(c.Read(&t.type, "tensor type"));
    XI_RETURN_IF_ERROR(c.Read(&offset, "tensor offset"));
    const GgmlTypeInfo* ti = FindGgmlType(t.type);
    if (ti == nullptr) return InvalidArgument("tensor '{}': unknown ggml type {}", t.name, t.type);
    if (t.ne[0] % ti->block_elems != 0)
      return InvalidArgument("tensor '{}': row length {} is not a multiple of the {} block size {}",
                             t.name, t.ne[0], ti->name, ti->block_elems);
    if (offset % alignment_ != 0)
      return InvalidArgument("tensor '{}': data offset {} is not a multiple of the alignment {}",
                             t.name, offset, alignment_);
    t.size = static_cast<size_t>(numel / ti->block_elems * ti->block_bytes);
    t.offset = static_cast<size_t>(offset);  // made absolute below
    if (!tensor_index_.emplace(t.name, tensors_.size()).second)
      return InvalidArgument("tensor '{}' appears twice", t.name);
    tensors_.push_back(std::move(t));
  }

  data_offset_ = (c.pos() + alignment_ - 1) / alignment_ * alignment_;
  const size_t data_size = file_->size() >= data_offset_ ? file_->size() - data_offset_ : 0;
  for (auto& t : tensors_) {
    if (t.offset > data_size || t.size > data_size - t.offset)
      return DataLoss(
          "tensor '{}': data [{}, {}) lies beyond the {} data bytes in the file "
          "(truncated file?)",
          t.name, t.offset, t.offset + t.size, data_size);
    t.offset += data_offset_;
  }
  // A size that lies (the type or dimensions of one tensor claim bytes that belong to the next)
  // shows up as an overlap.
  std::vector<const GgufTensorInfo*> by_offset;
  for (const auto& t : tensors_) by_offset.push_back(&t);
  std::sort(by_offset.begin(), by_offset.end(),
            [](const auto* a, const auto* b) { return a->offset < b->offset; });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    const auto* a = by_offset[i - 1];
    const auto* b = by_offset[i];
    if (a->size > 0 && b->size > 0 && a->offset + a->size > b->offset)
      return InvalidArgument("tensors '{}' and '{}' overlap in the data section", a->name, b->name);
  }
  return Status::Ok();
}

const GgufValue* GgufFile::Find(const std::string& key) const {
  auto it = metadata_index_.find(key);
  return it == metadata_index_.end() ? nullptr : &metadata_[it->second].second;
}

namespace {

StatusOr<const GgufValue*> Require(const GgufFile& f, const std::string& key) {
  const GgufValue* v = f.Find(key);
  if (v == nullptr) return NotFound("metadata key '{}' not found", key);
  return v;
}

Status Mismatch(const std::string& key, const GgufValue& v, const char* want) {
  return InvalidArgument("metadata '{}' is {}, expected {}", key, GgufTypeName(v.type), want);
}

}  // namespace

StatusOr<std::string> GgufFile::GetString(const std::string& key) const {
  XI_ASSIGN_OR_RETURN(const GgufValue* v, Require(*this, key));
  if (v->type != GgufType::kString) return Mismatch(key, *v, "a string");
  return v->str;
}

StatusOr<int64_t> GgufFile::GetInt(const std::string& key) const {
  XI_ASSIGN_OR_RETURN(const GgufValue* v, Require(*this, key));
  auto i = v->AsInt();
  if (!i) return Mismatch(key, *v, "an integer");
  return *i;
}

StatusOr<double> GgufFile::GetDouble(const std::string& key) const {
  XI_ASSIGN_OR_RETURN(const GgufValue* v, Require(*this, key));
  auto d = v->AsDouble();
  if (!d) return Mismatch(key, *v, "a number");
  return *d;
}

StatusOr<bool> GgufFile::GetBool(const std::string& key) const {
  XI_ASSIGN_OR_RETURN(const GgufValue* v, Require(*this, key));
  if (v->type != GgufType::kBool) return Mismatch(key, *v, "a bool");
  return v->b;
}

StatusOr<std::vector<std::string>> GgufFile::GetStringArray(const std::string& key) const {
  XI_ASSIGN_OR_RETURN(const GgufValue* v, Require(*this, key));
  if (v->type != GgufType::kArray || v->array_type != GgufType::kString)
    return Mismatch(key, *v, "an array of strings");
  std::vector<std::string> out;
  out.reserve(v->array.size());
  for (const auto& e : v->array) out.push_back(e.str);
  return out;
}

StatusOr<std::vector<float>> GgufFile::GetFloatArray(const std::string& key) const {
  XI_ASSIGN_OR_RETURN(const GgufValue* v, Require(*this, key));
  if (v->type != GgufType::kArray) return Mismatch(key, *v, "an array of numbers");
  std::vector<float> out;
  out.reserve(v->array.size());
  for (const auto& e : v->array) {
    auto d = e.AsDouble();
    if (!d) return Mismatch(key, *v, "an array of numbers");
    out.push_back(static_cast<float>(*d));
  }
  return out;
}

StatusOr<std::vector<int32_t>> GgufFile::GetIntArray(const std::string& key) const {
  XI_ASSIGN_OR_RETURN(const GgufValue* v, Require(*this, key));
  if (v->type != GgufType::kArray) return Mismatch(key, *v, "an array of integers");
  std::vector<int32_t> out;
  out.reserve(v->array.size());
  for (const auto& e : v->array) {
    auto i = e.AsInt();
    if (!i || *i < std::numeric_limits<int32_t>::min() || *i > std::numeric_limits<int32_t>::max())
      return Mismatch(key, *v, "an array of 32-bit integers");
    out.push_back(static_cast<int32_t>(*i));
  }
  return out;
}

const GgufTensorInfo* GgufFile::FindTensor(const std::string& name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

namespace {

// A view of `size` mapped bytes at `data`, or an aligned copy of them when `data` is not a
// multiple of `align`: a file may set general.alignment as low as 1, and every reader of a Tensor
// accesses its elements as typed values (F16 scales inside quantized blocks included).
Tensor ViewOrAlignedCopy(const std::shared_ptr<MappedFile>& file, const uint8_t* data, size_t size,
                         size_t align, DType dtype, Shape shape) {
  if (reinterpret_cast<uintptr_t>(data) % align != 0) {
    Tensor copy = NewHostTensor(dtype, std::move(shape));
    std::memcpy(copy.raw(), data, size);
    return copy;
  }
  auto buffer = std::make_shared<PinnedHostBuffer>(file, const_cast<uint8_t*>(data), size);
  return Tensor(std::move(buffer), 0, dtype, std::move(shape));
}

}  // namespace

Tensor GgufFile::GetRaw(const GgufTensorInfo& info) const {
  // 4: the widest field the quantized blocks' readers load (their F16 scales lie at even offsets
  // of even-sized blocks).
  return ViewOrAlignedCopy(file_, file_->data() + info.offset, info.size, 4, DType::kU8,
                           {static_cast<int64_t>(info.size)});
}

StatusOr<Tensor> GgufFile::GetDense(const std::string& name) const {
  const GgufTensorInfo* info = FindTensor(name);
  if (info == nullptr) return NotFound("tensor '{}' not found in {}", name, path());
  DType dtype;
  switch (info->type) {
    case ggml::kF32:
      dtype = DType::kF32;
      break;
    case ggml::kF16:
      dtype = DType::kF16;
      break;
    case ggml::kBF16:
      dtype = DType::kBF16;
      break;
    default:
      return InvalidArgument("tensor '{}' is {}, expected F32, F16 or BF16", name,
                             GgmlTypeName(info->type));
  }
  return ViewOrAlignedCopy(file_, file_->data() + info->offset, info->size, DTypeSize(dtype), dtype,
                           info->shape);
}

StatusOr<Weight> GgufFile::GetWeight(const std::string& name) const {
  const GgufTensorInfo* info = FindTensor(name);
  if (info == nullptr) return NotFound("tensor '{}' not found in {}", name, path());
  if (info->type == ggml::kF32 || info->type == ggml::kF16 || info->type == ggml::kBF16) {
    XI_ASSIGN_OR_RETURN(Tensor t, GetDense(name));
    return Weight(std::move(t));
  }
  auto qt = GgmlQuantType(info->type);
  if (!qt)
    return Unimplemented(
        "tensor '{}' has type {}; supported: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, "
        "Q4_K, Q5_K, Q6_K",
        name, GgmlTypeName(info->type));
  QuantTensor q;
  q.type = *qt;
  q.cols = info->ne[0];
  q.rows = info->num_elements / std::max<int64_t>(q.cols, 1);
  Tensor raw = GetRaw(*info);
  q.data = raw.Reshaped({q.rows, static_cast<int64_t>(q.row_bytes())});
  return Weight(std::move(q));
}

}  // namespace xinfer
