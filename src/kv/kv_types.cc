#include "kv/kv_types.h"

#include "base/check.h"

namespace xinfer {

int64_t SlotForPosition(std::span<const BlockId> block_table, int position, int block_size) {
  XI_CHECK(block_size > 0 && position >= 0);
  const size_t index = static_cast<size_t>(position / block_size);
  XI_CHECK_MSG(index < block_table.size(), "position not covered by the block table");
  return static_cast<int64_t>(block_table[index]) * block_size + position % block_size;
}

}  // namespace xinfer
