// Content hashes of full KV blocks for automatic prefix caching.
//
// A full block is identified by a hash chained over (parent block's hash, extra_key, the block's
// block_size token ids). The root parent is a per-cache seed. Because the parent hash is folded
// in, equal tokens after a different prefix give a different hash, so a hit on block i means
// the whole prefix [0, (i + 1) * block_size) matches.
//
// The hash is 128 bits wide (two independently seeded 64-bit multiply-xor lanes). It is not
// cryptographic. The block pool additionally verifies the parent hash, extra_key and the token
// ids of every hit, so a false hit needs a full 128-bit collision of the parent chain hash: for
// n distinct cached prefixes the probability is about n^2 / 2^129 (< 1e-20 for a billion
// blocks). Against adversarial clients, set a random KvCacheConfig::hash_seed per process.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "kv/kv_types.h"

namespace xinfer {

struct BlockHash {
  uint64_t lo = 0;
  uint64_t hi = 0;
  bool operator==(const BlockHash&) const = default;
};

struct BlockHashHasher {
  size_t operator()(const BlockHash& h) const { return static_cast<size_t>(h.lo ^ (h.hi >> 1)); }
};

// The hash that stands in as "parent" of the first block of every sequence.
BlockHash RootBlockHash(uint64_t seed);

// Hash of one full block: chained over the parent hash, extra_key (e.g. a LoRA id or a
// multimodal-input hash; 0 when unused) and the block's tokens.
BlockHash HashBlock(const BlockHash& parent, uint64_t extra_key, std::span<const TokenId> tokens);

}  // namespace xinfer
