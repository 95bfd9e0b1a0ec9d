// Writes safetensors files tensor by tensor without holding them in memory: the header is laid
// out first from the declared shapes, then each tensor's bytes are produced by a callback in
// chunks. Used by `xinfer make-model` (random models of real shapes for benchmarks and the demo).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "base/status.h"
#include "tensor/dtype.h"
#include "tensor/tensor.h"

namespace xinfer {

struct TensorSpec {
  std::string name;
  DType dtype = DType::kBF16;
  Shape shape;
};

// fill(spec, first_element, count, out_bytes): writes `count` elements of `spec` starting at
// element `first_element` into out_bytes (count * DTypeSize bytes).
using TensorFiller =
    std::function<void(const TensorSpec&, int64_t first_element, int64_t count, uint8_t* out)>;

// Writes `tensors` into `dir`: one `<base_name>.safetensors` when they fit `max_shard_bytes`, else
// `<base_name>-0000i-of-0000n.safetensors` shards plus `<base_name>.safetensors.index.json`
// (base_name "model" for a model, "adapter_model" for a PEFT adapter).
Status WriteSafetensors(const std::string& dir, const std::vector<TensorSpec>& tensors,
                        const TensorFiller& fill, uint64_t max_shard_bytes,
                        const std::map<std::string, std::string>& metadata = {},
                        const std::string& base_name = "model");

}  // namespace xinfer
