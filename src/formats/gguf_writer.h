// A small GGUF (v3) writer. Metadata is held in memory; tensor data either too (AddTensor, for
// tests' small well-formed and deliberately broken files) or streamed: AddTensorInfo declares a
// tensor's name, type, dimensions and size, and WriteFile(path, fill) asks for its bytes only when
// it gets there, so exporting a model needs one tensor in memory at a time. Not thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/status.h"
#include "formats/gguf.h"

namespace xinfer {

class GgufWriter {
 public:
  void SetString(const std::string& key, const std::string& v);
  void SetU32(const std::string& key, uint32_t v);
  void SetI32(const std::string& key, int32_t v);
  void SetF32(const std::string& key, float v);
  void SetBool(const std::string& key, bool v);
  void SetStringArray(const std::string& key, const std::vector<std::string>& v);
  void SetF32Array(const std::string& key, const std::vector<float>& v);
  void SetI32Array(const std::string& key, const std::vector<int32_t>& v);
  // `ne` innermost first, as GGUF stores it; `data` must hold exactly the tensor's bytes.
  void AddTensor(const std::string& name, uint32_t ggml_type, std::vector<int64_t> ne,
                 std::string data);
  // A tensor of `nbytes` bytes whose data WriteFile(path, fill) obtains from `fill`.
  void AddTensorInfo(const std::string& name, uint32_t ggml_type, std::vector<int64_t> ne,
                     size_t nbytes);
  void set_alignment(uint32_t alignment) { alignment_ = alignment; }

  // The whole file. Tensors are laid out in the order added, each at an aligned offset. Every
  // tensor must have been added with its data.
  std::string Serialize() const;
  Status WriteFile(const std::string& path) const;

  // Produces the bytes of a tensor declared with AddTensorInfo; it must return exactly the
  // declared size (anything else is an Internal error and the write stops).
  using TensorFill = std::function<StatusOr<std::string>(const std::string& name)>;
  // Writes the file, calling `fill` once per AddTensorInfo tensor in file order. A failure leaves
  // a partial file at `path`: callers write to a temporary name and rename it.
  Status WriteFile(const std::string& path, const TensorFill& fill) const;

 private:
  struct Tensor {
    std::string name;
    uint32_t type;
    std::vector<int64_t> ne;
    std::string data;
    size_t nbytes = 0;
    bool streamed = false;  // data comes from WriteFile's fill
  };
  // Everything before the first tensor's data, padding included.
  std::string SerializeHeader() const;
  size_t Align(size_t n) const { return (n + alignment_ - 1) / alignment_ * alignment_; }
  void AddKv(const std::string& key, GgufType type, const std::string& encoded);
  std::vector<std::string> kvs_;  // encoded key + type + value
  std::vector<Tensor> tensors_;
  uint32_t alignment_ = 32;
};

}  // namespace xinfer
