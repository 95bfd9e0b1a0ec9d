#include "kv/kv_cache_manager.h"

#include <algorithm>

#include "base/check.h"

namespace xinfer {

Status KvCacheConfig::Validate() const {
  if (num_blocks <= 0) return InvalidArgument("num_blocks must be positive, got {}", num_blocks);
  if (block_size <= 0) return InvalidArgument("block_size must be positive, got {}", block_size);
  return Status::Ok();
}

namespace {
const KvCacheConfig& Validated(const KvCacheConfig& config) {
  XI_CHECK_MSG(config.Validate().ok(), "invalid KvCacheConfig");
  return config;
}
}  // namespace

KvCacheManager::KvCacheManager(const KvCacheConfig& config)
    : config_(Validated(config)),
      pool_(config.num_blocks, config.block_size),
      root_hash_(RootBlockHash(config.hash_seed)) {}

PrefixHit KvCacheManager::GetComputedBlocks(std::span<const TokenId> tokens,
                                            uint64_t extra_key) const {
  PrefixHit hit;
  hit.num_query_tokens = static_cast<int>(tokens.size());
  hit.extra_key = extra_key;
  hit.last_hash = root_hash_;
  if (!config_.enable_prefix_caching || tokens.empty()) return hit;
  const size_t bs = static_cast<size_t>(config_.block_size);
  const size_t max_blocks = (tokens.size() - 1) / bs;
  BlockHash parent = root_hash_;
  for (size_t i = 0; i < max_blocks; ++i) {
    std::span<const TokenId> block_tokens = tokens.subspan(i * bs, bs);
    const BlockHash hash = HashBlock(parent, extra_key, block_tokens);
    std::optional<BlockId> id = pool_.Lookup(hash, parent, extra_key, block_tokens);
    if (!id) break;
    hit.blocks.push_back(*id);
    parent = hash;
  }
  hit.last_hash = parent;
  hit.num_tokens = static_cast<int>(hit.blocks.size() * bs);
  return hit;
}

std::optional<std::vector<BlockId>> KvCacheManager::AllocateSlots(const RequestId& id,
                                                                  int num_computed_tokens,
                                                                  int num_new_tokens,
                                                                  const PrefixHit* prefix) {
  XI_CHECK(num_computed_tokens >= 0 && num_new_tokens >= 0);
  auto it = tables_.find(id);
  const bool is_new = it == tables_.end();
  XI_CHECK_MSG(is_new || prefix == nullptr, "prefix given for a request that holds blocks");
  int num_existing = 0;
  int num_revived = 0;  // prefix blocks that must leave the evictable list
  if (is_new) {
    const int prefix_tokens = prefix ? prefix->num_tokens : 0;
    XI_CHECK_MSG(num_computed_tokens == prefix_tokens,
                 "a new request's computed tokens must be its prefix hit");
    if (prefix) {
      XI_CHECK(prefix->num_tokens == static_cast<int>(prefix->blocks.size()) * config_.block_size);
      for (BlockId b : prefix->blocks) {
        XI_CHECK_MSG(pool_.is_cached(b), "prefix block evicted between lookup and allocation");
        if (pool_.ref_count(b) == 0) ++num_revived;
      }
      num_existing = static_cast<int>(prefix->blocks.size());
    }
  } else {
    num_existing = static_cast<int>(it->second.table.size());
  }
  const int num_required = CeilDiv(num_computed_tokens + num_new_tokens, config_.block_size);
  const int num_to_allocate = std::max(0, num_required - num_existing);
  if (num_to_allocate + num_revived > pool_.num_free_blocks()) return std::nullopt;

  if (is_new) {
    it = tables_.emplace(id, RequestBlocks{}).first;
    RequestBlocks& rb = it->second;
    rb.last_hash = root_hash_;
    if (prefix) {
      for (BlockId b : prefix->blocks) pool_.Touch(b);
      rb.table = prefix->blocks;
      rb.num_hashed_blocks = static_cast<int>(prefix->blocks.size());
      rb.last_hash = prefix->last_hash;
      rb.extra_key = prefix->extra_key;
      prefix_cache_queries_ += prefix->num_query_tokens;
      prefix_cache_hits_ += prefix->num_tokens;
    }
  }
  RequestBlocks& rb = it->second;
  std::vector<BlockId> new_blocks;
  new_blocks.reserve(static_cast<size_t>(num_to_allocate));
  for (int i = 0; i < num_to_allocate; ++i) new_blocks.push_back(pool_.Allocate());
  rb.table.insert(rb.table.end(), new_blocks.begin(), new_blocks.end());
  return new_blocks;
}

void KvCacheManager::CacheFullBlocks(const RequestId& id, std::span<const TokenId> tokens,
                                     int num_computed_tokens) {
  if (!config_.enable_prefix_caching) return;
  auto it = tables_.find(id);
  if (it == tables_.end()) return;
  RequestBlocks& rb = it->second;
  XI_CHECK(num_computed_tokens >= 0 && static_cast<size_t>(num_computed_tokens) <= tokens.size());
  const int bs = config_.block_size;
  const int num_full = std::min(num_computed_tokens / bs, static_cast<int>(rb.table.size()));
  for (int i = rb.num_hashed_blocks; i < num_full; ++i) {
    std::span<const TokenId> block_tokens =
        tokens.subspan(static_cast<size_t>(i) * bs, static_cast<size_t>(bs));
    const BlockHash hash = HashBlock(rb.last_hash, rb.extra_key, block_tokens);
    const BlockId b = rb.table[static_cast<size_t>(i)];
    if (!pool_.is_cached(b)) {
      // A duplicate (same content computed by another request) stays uncached; that is fine.
      (void)pool_.Insert(b, hash, rb.last_hash, rb.extra_key, block_tokens);
    }
    rb.last_hash = hash;
    rb.num_hashed_blocks = i + 1;
  }
}

void KvCacheManager::Free(const RequestId& id) {
  auto it = tables_.find(id);
  if (it == tables_.end()) return;
  const std::vector<BlockId>& table = it->second.table;
  for (auto b = table.rbegin(); b != table.rend(); ++b) pool_.Release(*b);
  tables_.erase(it);
}

const std::vector<BlockId>& KvCacheManager::block_table(const RequestId& id) const {
  static const std::vector<BlockId> kEmpty;
  auto it = tables_.find(id);
  return it == tables_.end() ? kEmpty : it->second.table;
}

double KvCacheManager::usage() const {
  return 1.0 - static_cast<double>(pool_.num_free_blocks()) / config_.num_blocks;
}

Status KvCacheManager::CheckInvariants() const {
  XI_RETURN_IF_ERROR(pool_.CheckConsistency());
  std::vector<int> refs(static_cast<size_t>(config_.num_blocks), 0);
  for (const auto& [id, rb] : tables_) {
    for (BlockId b : rb.table) {
      if (b < 0 || b >= config_.num_blocks) return Internal("request {} holds bad block {}", id, b);
      ++refs[static_cast<size_t>(b)];
    }
    if (rb.num_hashed_blocks > static_cast<int>(rb.table.size())) {
      return Internal("request {} hashed {} of {} blocks", id, rb.num_hashed_blocks,
                      rb.table.size());
    }
  }
  for (int b = 0; b < config_.num_blocks; ++b) {
    if (refs[static_cast<size_t>(b)] != pool_.ref_count(b)) {
      return Internal("block {} has ref count {} but {} table references", b, pool_.ref_count(b),
                      refs[static_cast<size_t>(b)]);
    }
  }
  return Status::Ok();
}

}  // namespace xinfer
