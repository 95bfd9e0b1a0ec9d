// BlockPool: the fixed set of KV blocks, their reference counts and the prefix-cache index.
//
// Every block is in exactly one of three states:
//   referenced  ref_count > 0; in one or more request block tables (shared when a cached prefix
//               is reused). May or may not be cached.
//   free        ref_count == 0, not cached; in the free list (a LIFO stack).
//   evictable   ref_count == 0, cached; in an LRU list (oldest at the head). Its contents stay
//               valid and it can be revived by Touch() on a prefix hit.
// Allocate() takes a free block when there is one and evicts the least recently released
// evictable block (dropping its hash) only when the free list is empty. Allocate, Touch and
// Release are O(1); cache insert/lookup are O(block_size) (token verification).
//
// Ownership: the pool owns only bookkeeping (ints and a copy of each cached block's token ids
// for hit verification); the KV memory itself belongs to the model runner.
// Thread-safety: none; owned by one KvCacheManager that is driven by the engine thread.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "kv/block_hash.h"
#include "kv/kv_types.h"

namespace xinfer {

class BlockPool {
 public:
  BlockPool(int num_blocks, int block_size);

  BlockPool(const BlockPool&) = delete;
  BlockPool& operator=(const BlockPool&) = delete;

  int num_blocks() const { return static_cast<int>(meta_.size()); }
  int block_size() const { return block_size_; }
  // Blocks Allocate() can hand out: free + evictable.
  int num_free_blocks() const { return static_cast<int>(free_list_.size()) + num_evictable_; }
  int num_evictable_blocks() const { return num_evictable_; }
  // Blocks registered in the prefix cache (referenced or evictable).
  int num_cached_blocks() const { return static_cast<int>(cache_.size()); }
  int64_t num_evictions() const { return num_evictions_; }

  // Takes one block (ref_count becomes 1). Requires num_free_blocks() > 0.
  BlockId Allocate();
  // Adds a reference to a referenced or evictable block (an evictable one leaves the LRU list).
  void Touch(BlockId id);
  // Drops one reference; at zero a cached block goes to the LRU tail (most recent), an uncached
  // one to the free list.
  void Release(BlockId id);

  int ref_count(BlockId id) const { return meta_.at(static_cast<size_t>(id)).ref_count; }
  bool is_cached(BlockId id) const { return meta_.at(static_cast<size_t>(id)).cached; }
  bool is_evictable(BlockId id) const {
    const Meta& m = meta_.at(static_cast<size_t>(id));
    return m.cached && m.ref_count == 0;
  }

  // The cached block whose chain hash is `hash` and whose recorded parent hash, extra_key and
  // tokens equal the given ones; nullopt on a miss (or on a detected hash collision).
  std::optional<BlockId> Lookup(const BlockHash& hash, const BlockHash& parent, uint64_t extra_key,
                                std::span<const TokenId> tokens) const;
  // Registers a referenced, uncached, full block under `hash`. Returns false (and leaves the
  // block uncached) when another block already holds that hash: the caller keeps using its own
  // copy, which is freed normally later.
  bool Insert(BlockId id, const BlockHash& hash, const BlockHash& parent, uint64_t extra_key,
              std::span<const TokenId> tokens);
  // Drops every evictable entry from the cache (their blocks become plain free blocks).
  // Referenced cached blocks stay cached. Returns the number dropped.
  int DropEvictable();

  // Full consistency check of the lists, counts and index (O(num_blocks)); for tests/debug.
  Status CheckConsistency() const;

 private:
  static constexpr int kNone = -1;
  struct Meta {
    int ref_count = 0;
    bool cached = false;
    bool in_free_list = false;
    BlockHash hash;
    BlockHash parent;
    uint64_t extra_key = 0;
    int lru_prev = kNone;  // LRU links, valid while evictable
    int lru_next = kNone;
  };

  void LruPushBack(BlockId id);
  void LruRemove(BlockId id);
  void Uncache(BlockId id);
  std::span<const TokenId> TokensOf(BlockId id) const;

  int block_size_;
  std::vector<Meta> meta_;
  std::vector<TokenId> tokens_;     // num_blocks * block_size, valid for cached blocks
  std::vector<BlockId> free_list_;  // uncached, unreferenced
  int lru_head_ = kNone;            // oldest evictable
  int lru_tail_ = kNone;            // newest evictable
  int num_evictable_ = 0;
  int64_t num_evictions_ = 0;
  std::unordered_map<BlockHash, BlockId, BlockHashHasher> cache_;
};

}  // namespace xinfer
