// KvCacheManager: per-engine paged-KV bookkeeping — one block table per request, allocation of
// slots for the tokens a step will compute, and automatic prefix caching.
//
// Protocol (what the scheduler does; see sched/scheduler.h):
//   1. Admission of a request with no blocks: hit = GetComputedBlocks(tokens, extra_key), then
//      AllocateSlots(id, hit.num_tokens, n, &hit) with no other allocation in between.
//   2. Each later step: AllocateSlots(id, num_computed_tokens, n) for the n tokens it will run.
//   3. After the step ran (its KV written): CacheFullBlocks(id, tokens, num_computed_tokens)
//      registers the blocks that became full (prefill or decode). Blocks are cached only once
//      computed, so a hit never refers to KV that is still being written.
//   4. Free(id) when the request finishes, is aborted or is preempted.
//
// Ownership: the manager owns the BlockPool and the block tables; callers get copies or const
// references valid until the next mutating call. Thread-safety: none; the engine thread drives
// it through the Scheduler.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "kv/block_hash.h"
#include "kv/block_pool.h"
#include "kv/kv_types.h"

namespace xinfer {

struct KvCacheConfig {
  int num_blocks = 0;
  int block_size = 16;
  bool enable_prefix_caching = true;
  // Seed of the root of every hash chain. Set a random one per process if clients may try to
  // craft hash collisions (see block_hash.h).
  uint64_t hash_seed = 0;

  Status Validate() const;
};

// Result of a prefix-cache lookup: the cached blocks covering the longest block-aligned prefix
// of the tokens, never all of them (the last token is always recomputed so the step has logits).
struct PrefixHit {
  std::vector<BlockId> blocks;
  int num_tokens = 0;        // blocks.size() * block_size
  int num_query_tokens = 0;  // tokens looked up, for the queries counter
  uint64_t extra_key = 0;
  BlockHash last_hash;  // chain hash of the last hit block (the root hash when none)
};

class KvCacheManager {
 public:
  // `config` must pass Validate() (checked).
  explicit KvCacheManager(const KvCacheConfig& config);

  KvCacheManager(const KvCacheManager&) = delete;
  KvCacheManager& operator=(const KvCacheManager&) = delete;

  // Longest cached prefix of `tokens` (in full blocks, at most (size - 1) / block_size of them).
  // Empty when prefix caching is off. Does not pin the blocks or change counters.
  PrefixHit GetComputedBlocks(std::span<const TokenId> tokens, uint64_t extra_key = 0) const;

  // Makes request `id` hold blocks for num_computed_tokens + num_new_tokens tokens and returns
  // the newly allocated block ids (possibly none). For a request without blocks, `prefix` (from
  // GetComputedBlocks just before; may be null for no hit) is attached first and
  // num_computed_tokens must equal its num_tokens; on success this records the prefix-cache
  // counters. All or nothing: on "no room" returns nullopt and changes nothing.
  std::optional<std::vector<BlockId>> AllocateSlots(const RequestId& id, int num_computed_tokens,
                                                    int num_new_tokens,
                                                    const PrefixHit* prefix = nullptr);

  // Registers in the prefix cache every block of `id` that is full within the first
  // `num_computed_tokens` of `tokens` (the request's prompt + output ids) and not registered
  // yet. A no-op when caching is off or for an unknown id.
  void CacheFullBlocks(const RequestId& id, std::span<const TokenId> tokens,
                       int num_computed_tokens);

  // Releases all blocks of `id`, last block first (so a chain's tail is evicted before its
  // head); cached ones become evictable. A no-op for an unknown id.
  void Free(const RequestId& id);

  // Drops all unreferenced prefix-cache entries; returns how many.
  int ResetPrefixCache() { return pool_.DropEvictable(); }

  bool HasBlocks(const RequestId& id) const { return tables_.contains(id); }
  // The request's block table (empty for an unknown id). Valid until the next mutating call.
  const std::vector<BlockId>& block_table(const RequestId& id) const;

  int block_size() const { return config_.block_size; }
  int num_blocks() const { return config_.num_blocks; }
  bool prefix_caching_enabled() const { return config_.enable_prefix_caching; }
  // Blocks that can be allocated now (free + evictable cached).
  int num_free_blocks() const { return pool_.num_free_blocks(); }
  // Fraction of blocks referenced by requests, in [0, 1] (metric kv_cache_usage_perc).
  double usage() const;
  // Prefix-cache counters in tokens, as in vLLM: queries = tokens of admitted requests looked
  // up, hits = tokens of those served from the cache.
  int64_t prefix_cache_queries() const { return prefix_cache_queries_; }
  int64_t prefix_cache_hits() const { return prefix_cache_hits_; }
  int num_requests() const { return static_cast<int>(tables_.size()); }
  const BlockPool& pool() const { return pool_; }

  // Ref counts equal block-table references, no block both free and referenced, pool lists
  // consistent (O(num_blocks + table entries)); for tests/debug.
  Status CheckInvariants() const;

 private:
  struct RequestBlocks {
    std::vector<BlockId> table;
    int num_hashed_blocks = 0;  // leading blocks whose chain hash is known (cached or duplicate)
    BlockHash last_hash;        // chain hash of block num_hashed_blocks - 1 (root when 0)
    uint64_t extra_key = 0;
  };

  KvCacheConfig config_;
  BlockPool pool_;
  BlockHash root_hash_;
  std::unordered_map<RequestId, RequestBlocks> tables_;
  int64_t prefix_cache_queries_ = 0;
  int64_t prefix_cache_hits_ = 0;
};

}  // namespace xinfer
