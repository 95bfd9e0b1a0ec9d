// Plain integer/string types shared by the KV-cache bookkeeping (kv/) and the scheduler (sched/).
// Nothing here touches tensors or a device: a "block" is only an index into the runner's paged
// KV-cache tensors, and the runner owns the memory.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace xinfer {

using TokenId = int32_t;        // vocabulary id of one token
using BlockId = int32_t;        // index of one KV block, in [0, num_blocks)
using RequestId = std::string;  // engine-chosen, unique among unfinished requests

// Number of blocks of `block_size` tokens needed to hold `num_tokens` tokens.
constexpr int CeilDiv(int num_tokens, int block_size) {
  return (num_tokens + block_size - 1) / block_size;
}

// The KV slot (row of the flattened [num_blocks * block_size] cache) that holds the token at
// `position` of a sequence whose block table is `block_table`:
//   slot = block_table[position / block_size] * block_size + position % block_size.
// The position must be covered by the table (checked).
int64_t SlotForPosition(std::span<const BlockId> block_table, int position, int block_size);

}  // namespace xinfer
