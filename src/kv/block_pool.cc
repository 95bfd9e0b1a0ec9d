#include "kv/block_pool.h"

#include <algorithm>

#include "base/check.h"

namespace xinfer {

BlockPool::BlockPool(int num_blocks, int block_size)
    : block_size_(block_size),
      meta_(static_cast<size_t>(num_blocks)),
      tokens_(static_cast<size_t>(num_blocks) * static_cast<size_t>(block_size)) {
  XI_CHECK(num_blocks > 0 && block_size > 0);
  free_list_.reserve(static_cast<size_t>(num_blocks));
  // Pushed in reverse so that a fresh pool hands out 0, 1, 2, ...
  for (int id = num_blocks - 1; id >= 0; --id) {
    free_list_.push_back(id);
    meta_[static_cast<size_t>(id)].in_free_list = true;
  }
  cache_.reserve(static_cast<size_t>(num_blocks));
}

BlockId BlockPool::Allocate() {
  BlockId id;
  if (!free_list_.empty()) {
    id = free_list_.back();
    free_list_.pop_back();
    meta_[static_cast<size_t>(id)].in_free_list = false;
  } else {
    XI_CHECK_MSG(lru_head_ != kNone, "BlockPool::Allocate with no free block");
    id = lru_head_;
    LruRemove(id);
    Uncache(id);
    ++num_evictions_;
  }
  Meta& m = meta_[static_cast<size_t>(id)];
  XI_CHECK(m.ref_count == 0);
  m.ref_count = 1;
  return id;
}

void BlockPool::Touch(BlockId id) {
  Meta& m = meta_.at(static_cast<size_t>(id));
  if (m.ref_count == 0) {
    XI_CHECK_MSG(m.cached, "Touch of a free (uncached) block");
    LruRemove(id);
  }
  ++m.ref_count;
}

void BlockPool::Release(BlockId id) {
  Meta& m = meta_.at(static_cast<size_t>(id));
  XI_CHECK_MSG(m.ref_count > 0, "Release of an unreferenced block");
  if (--m.ref_count > 0) return;
  if (m.cached) {
    LruPushBack(id);
  } else {
    m.in_free_list = true;
    free_list_.push_back(id);
  }
}

std::optional<BlockId> BlockPool::Lookup(const BlockHash& hash, const BlockHash& parent,
                                         uint64_t extra_key,
                                         std::span<const TokenId> tokens) const {
  auto it = cache_.find(hash);
  if (it == cache_.end()) return std::nullopt;
  const Meta& m = meta_[static_cast<size_t>(it->second)];
  if (!(m.parent == parent) || m.extra_key != extra_key) return std::nullopt;
  std::span<const TokenId> stored = TokensOf(it->second);
  if (tokens.size() != stored.size() || !std::equal(tokens.begin(), tokens.end(), stored.begin())) {
    return std::nullopt;
  }
  return it->second;
}

bool BlockPool::Insert(BlockId id, const BlockHash& hash, const BlockHash& parent,
                       uint64_t extra_key, std::span<const TokenId> tokens) {
  Meta& m = meta_.at(static_cast<size_t>(id));
  XI_CHECK_MSG(m.ref_count > 0 && !m.cached, "Insert of an unreferenced or cached block");
  XI_CHECK(tokens.size() == static_cast<size_t>(block_size_));
  if (!cache_.emplace(hash, id).second) return false;
  m.cached = true;
  m.hash = hash;
  m.parent = parent;
  m.extra_key = extra_key;
  std::copy(tokens.begin(), tokens.end(),
            tokens_.begin() + static_cast<ptrdiff_t>(id) * block_size_);
  return true;
}

int BlockPool::DropEvictable() {
  int dropped = 0;
  while (lru_head_ != kNone) {
    const BlockId id = lru_head_;
    LruRemove(id);
    Uncache(id);
    meta_[static_cast<size_t>(id)].in_free_list = true;
    free_list_.push_back(id);
    ++dropped;
  }
  return dropped;
}

void BlockPool::LruPushBack(BlockId id) {
  Meta& m = meta_[static_cast<size_t>(id)];
  m.lru_prev = lru_tail_;
  m.lru_next = kNone;
  if (lru_tail_ != kNone) {
    meta_[static_cast<size_t>(lru_tail_)].lru_next = id;
  } else {
    lru_head_ = id;
  }
  lru_tail_ = id;
  ++num_evictable_;
}

void BlockPool::LruRemove(BlockId id) {
  Meta& m = meta_[static_cast<size_t>(id)];
  if (m.lru_prev != kNone) {
    meta_[static_cast<size_t>(m.lru_prev)].lru_next = m.lru_next;
  } else {
    lru_head_ = m.lru_next;
  }
  if (m.lru_next != kNone) {
    meta_[static_cast<size_t>(m.lru_next)].lru_prev = m.lru_prev;
  } else {
    lru_tail_ = m.lru_prev;
  }
  m.lru_prev = m.lru_next = kNone;
  --num_evictable_;
}

void BlockPool::Uncache(BlockId id) {
  Meta& m = meta_[static_cast<size_t>(id)];
  XI_CHECK(m.cached);
  auto it = cache_.find(m.hash);
  XI_CHECK(it != cache_.end() && it->second == id);
  cache_.erase(it);
  m.cached = false;
}

std::span<const TokenId> BlockPool::TokensOf(BlockId id) const {
  return std::span<const TokenId>(tokens_).subspan(
      static_cast<size_t>(id) * static_cast<size_t>(block_size_), static_cast<size_t>(block_size_));
}

Status BlockPool::CheckConsistency() const {
  const int n = num_blocks();
  int free_count = 0;
  for (BlockId id : free_list_) {
    if (id < 0 || id >= n) return Internal("free list holds bad id {}", id);
    const Meta& m = meta_[static_cast<size_t>(id)];
    if (!m.in_free_list || m.ref_count != 0 || m.cached) {
      return Internal("block {} in free list but ref={} cached={}", id, m.ref_count, m.cached);
    }
    ++free_count;
  }
  int lru_count = 0;
  for (int id = lru_head_, prev = kNone; id != kNone; prev = id, id = meta_[id].lru_next) {
    const Meta& m = meta_[static_cast<size_t>(id)];
    if (m.lru_prev != prev) return Internal("LRU back link broken at block {}", id);
    if (!m.cached || m.ref_count != 0 || m.in_free_list) {
      return Internal("block {} in LRU list but ref={} cached={}", id, m.ref_count, m.cached);
    }
    if (++lru_count > n) return Internal("LRU list has a cycle");
  }
  if (lru_count != num_evictable_) {
    return Internal("LRU list has {} blocks, counter says {}", lru_count, num_evictable_);
  }
  int referenced = 0;
  int cached = 0;
  for (int id = 0; id < n; ++id) {
    const Meta& m = meta_[static_cast<size_t>(id)];
    if (m.ref_count < 0) return Internal("block {} has negative ref count", id);
    if (m.ref_count > 0) {
      ++referenced;
      if (m.in_free_list) return Internal("referenced block {} is in the free list", id);
    }
    if (m.cached) {
      ++cached;
      auto it = cache_.find(m.hash);
      if (it == cache_.end() || it->second != id)
        return Internal("cached block {} not indexed", id);
    }
  }
  if (cached != static_cast<int>(cache_.size())) {
    return Internal("{} blocks marked cached, index has {}", cached, cache_.size());
  }
  if (free_count + lru_count + referenced != n) {
    return Internal("free {} + evictable {} + referenced {} != {} blocks", free_count, lru_count,
                    referenced, n);
  }
  return Status::Ok();
}

}  // namespace xinfer
