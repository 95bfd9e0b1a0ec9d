// Safetensors reader: memory-maps each file and exposes its tensors without copying.
// Format: u64 little-endian header length N, N bytes of JSON {name: {dtype, shape, data_offsets}},
// then the data; offsets are relative to the end of the header. Everything read from the file is
// validated (offsets inside the data, sizes equal to shape x dtype) before any tensor is handed
// out, so a truncated or lying file yields a Status, never an out-of-bounds read.
// Thread-safety: immutable after Open; safe to share.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/mapped_file.h"
#include "base/status.h"
#include "tensor/tensor.h"

namespace xinfer {

struct TensorInfo {
  std::string name;
  DType dtype = DType::kF32;
  Shape shape;
  size_t offset = 0;  // absolute byte offset in the file
  size_t size = 0;    // bytes
};

class SafetensorsFile {
 public:
  static StatusOr<std::unique_ptr<SafetensorsFile>> Open(const std::string& path);

  const std::map<std::string, TensorInfo>& tensors() const { return tensors_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const std::string& path() const { return file_->path(); }
  // A Tensor over the mapped bytes; it keeps the mapping alive.
  Tensor Get(const TensorInfo& info) const;

 private:
  std::shared_ptr<MappedFile> file_;
  std::map<std::string, TensorInfo> tensors_;
  std::map<std::string, std::string> metadata_;
};

// All weights of a Hugging Face model folder: `model.safetensors`, or the shards listed in
// `model.safetensors.index.json`. Owns the open files.
class WeightStore {
 public:
  static StatusOr<std::unique_ptr<WeightStore>> OpenDir(const std::string& model_dir);

  bool Has(const std::string& name) const { return index_.count(name) != 0; }
  const TensorInfo* Find(const std::string& name) const;
  // The tensor `name`; NotFound (naming the tensor and folder) when absent.
  StatusOr<Tensor> Get(const std::string& name) const;
  // The tensor `name`, checked to have exactly `shape`.
  StatusOr<Tensor> GetWithShape(const std::string& name, const Shape& shape) const;
  std::vector<std::string> Names() const;
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  // tensor name -> (file index, info)
  std::map<std::string, std::pair<size_t, TensorInfo>> index_;
};

}  // namespace xinfer
