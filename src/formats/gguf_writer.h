// A small GGUF (v3) writer: metadata and tensors in memory, serialized in one go. Used by tests
// (well-formed and deliberately broken files) and tools; not for multi-gigabyte models, which it
// would hold in memory. Not thread-safe.
#pragma once

#include <cstdint>
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
  void set_alignment(uint32_t alignment) { alignment_ = alignment; }

  // The whole file. Tensors are laid out in the order added, each at an aligned offset.
  std::string Serialize() const;
  Status WriteFile(const std::string& path) const;

 private:
  struct Tensor {
    std::string name;
    uint32_t type;
    std::vector<int64_t> ne;
    std::string data;
  };
  void AddKv(const std::string& key, GgufType type, const std::string& encoded);
  std::vector<std::string> kvs_;  // encoded key + type + value
  std::vector<Tensor> tensors_;
  uint32_t alignment_ = 32;
};

}  // namespace xinfer
