// The model interface the rest of the engine uses: token ids in, logits out, K/V kept in a cache.
//
// Ownership: a CausalLM holds its weights (memory-mapped, shared) and a reference to the Backend,
// which must outlive it. KvCache belongs to the caller (one per sequence).
// Thread-safety: Forward() may run concurrently on different KvCaches only if the backend's Ops
// allow it; the runner calls it from one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "base/status.h"
#include "formats/hf_config.h"

namespace xinfer {

// Contiguous K/V storage of one sequence: per layer [capacity, num_kv_heads, head_dim] F32.
// (The paged, shared cache of the engine replaces this for batched serving.)
struct KvCache {
  std::vector<Tensor> k;
  std::vector<Tensor> v;
  int64_t capacity = 0;
  int64_t length = 0;  // tokens whose K/V are stored
};

class CausalLM {
 public:
  virtual ~CausalLM() = default;
  virtual const ModelConfig& config() const = 0;
  // Total bytes of weights as stored, and their parameter count.
  virtual size_t weight_bytes() const = 0;
  virtual int64_t num_parameters() const = 0;

  virtual KvCache NewKvCache(int64_t capacity) = 0;
  // Runs `tokens` at positions [cache.length, cache.length + size), appends their K/V, and writes
  // the last token's logits to `logits` (vocab_size floats). Out-of-range ids and a full cache are
  // InvalidArgument/OutOfRange; nothing in the cache changes then.
  virtual Status Forward(std::span<const int32_t> tokens, KvCache& cache,
                         std::span<float> logits) = 0;
};

// Reads config.json and the safetensors weights of a Hugging Face folder and builds the model for
// its architecture (Llama, Qwen2, Qwen3). Unsupported architectures, dtypes or quantization, and
// missing or mis-shaped tensors are reported as Status naming the culprit.
StatusOr<std::unique_ptr<CausalLM>> LoadCausalLM(const std::string& model_dir, Backend& backend);

// Names of the architectures LoadCausalLM accepts.
std::vector<std::string> SupportedArchitectures();

}  // namespace xinfer
