// How large a KV cache an engine configuration gets: the arithmetic LLMEngine::Create runs, as a
// pure function so that `xinfer plan` answers "does this model fit at this concurrency" with the
// engine's own numbers, without loading the weights. Plain functions; thread-safe.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "engine/engine_config.h"

namespace xinfer {

struct KvCacheSizing {
  // cpu_memory_budget, or the machine's memory, over data_parallel_size (each replica's share)
  int64_t budget_bytes = 0;
  int64_t block_bytes = 0;  // kv_bytes_per_token x block_size
  int32_t num_blocks = 0;
  // The memory left num_blocks above max_num_seqs x max_model_len tokens: more blocks could only
  // hold cold prefixes, so the engine does not take them.
  bool capped_by_max_num_seqs = false;
  // Where the block count came from: "num_gpu_blocks_override", "kv_cache_memory" or
  // "gpu_memory_utilization".
  const char* source = "";
  int64_t num_tokens(int block_size) const { return int64_t{num_blocks} * block_size; }
};

// The KV cache of an engine configured by `c` (validated, max_model_len resolved: > 0) for a
// model that holds `weight_bytes` of weights and `kv_bytes_per_token` of K and V per token, on a
// machine of `physical_memory` bytes; with data_parallel_size > 1, the cache of one replica,
// whose budget is an equal share of the memory (num_gpu_blocks_override and kv_cache_memory are
// per replica already). Sizing, first match wins: num_gpu_blocks_override;
// kv_cache_memory bytes; else gpu_memory_utilization x budget minus the weights, capped at
// max_num_seqs full-length sequences. ResourceExhausted when nothing is left for the cache, when
// the cache would exceed the budget, or (as vLLM refuses to start) when a cache sized from memory
// cannot hold one sequence of max_model_len tokens.
StatusOr<KvCacheSizing> SizeKvCache(const EngineConfig& c, int64_t weight_bytes,
                                    int64_t kv_bytes_per_token, int64_t physical_memory);

// This machine's physical memory in bytes (sysconf).
int64_t PhysicalMemoryBytes();

}  // namespace xinfer
