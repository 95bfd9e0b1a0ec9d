#include "engine/kv_cache_sizing.h"

#include <unistd.h>

#include <algorithm>

#include "base/check.h"

namespace xinfer {

int64_t PhysicalMemoryBytes() {
  return static_cast<int64_t>(::sysconf(_SC_PHYS_PAGES)) * ::sysconf(_SC_PAGE_SIZE);
}

StatusOr<KvCacheSizing> SizeKvCache(const EngineConfig& c, int64_t weight_bytes,
                                    int64_t kv_bytes_per_token, int64_t physical_memory) {
  XI_CHECK(c.max_model_len > 0 && kv_bytes_per_token > 0 && c.block_size > 0);
  KvCacheSizing s;
  s.block_bytes = kv_bytes_per_token * c.block_size;
  // Data-parallel replicas share the machine's memory equally, each holding its own weights.
  s.budget_bytes =
      (c.cpu_memory_budget > 0 ? c.cpu_memory_budget : physical_memory) / c.data_parallel_size;
  int64_t blocks = 0;
  if (c.num_gpu_blocks_override > 0) {
    blocks = c.num_gpu_blocks_override;
    s.source = "num_gpu_blocks_override";
  } else {
    if (c.kv_cache_memory > 0) {
      blocks = c.kv_cache_memory / s.block_bytes;
      s.source = "kv_cache_memory";
    } else {
      const int64_t kv_bytes =
          static_cast<int64_t>(static_cast<double>(s.budget_bytes) * c.gpu_memory_utilization) -
          weight_bytes;
      blocks = kv_bytes / s.block_bytes;
      s.source = "gpu_memory_utilization";
      // More blocks than every sequence at full length can use only hold cold prefixes.
      const int64_t useful = static_cast<int64_t>(c.max_num_seqs) *
                             ((c.max_model_len + c.block_size - 1) / c.block_size);
      s.capped_by_max_num_seqs = blocks > useful;
      blocks = std::min(blocks, useful);
    }
    if (blocks < 1)
      return ResourceExhausted(
          "no memory left for the KV cache (budget {} bytes{} x gpu_memory_utilization {}, weights "
          "{} bytes, {} bytes per block)",
          s.budget_bytes, c.data_parallel_size > 1 ? " per data-parallel replica" : "",
          c.gpu_memory_utilization, weight_bytes, s.block_bytes);
    if (blocks * c.block_size < c.max_model_len)
      return ResourceExhausted(
          "max_model_len {} is larger than the {} tokens the KV cache holds ({} blocks of {}); "
          "raise --gpu-memory-utilization, --cpu-memory-budget or --kv-cache-memory, use "
          "--kv-cache-dtype bfloat16, or lower --max-model-len to at most {}",
          c.max_model_len, blocks * c.block_size, blocks, c.block_size, blocks * c.block_size);
  }
  if (blocks * s.block_bytes > s.budget_bytes)
    return ResourceExhausted("a KV cache of {} blocks needs {} bytes, over the memory budget of {}",
                             blocks, blocks * s.block_bytes, s.budget_bytes);
  if (blocks > (int64_t{1} << 30)) return InvalidArgument("too many KV blocks: {}", blocks);
  s.num_blocks = static_cast<int32_t>(blocks);
  return s;
}

}  // namespace xinfer
