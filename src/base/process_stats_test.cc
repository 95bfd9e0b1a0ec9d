// ReadProcessStats: the figures move the way the process does (memory touched, descriptors
// opened, heap allocated and freed), so /metrics can be trusted to show a leak.
#include "base/process_stats.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <vector>

namespace xinfer {
namespace {

TEST(ProcessStatsTest, ResidentMemoryGrowsWhenPagesAreTouched) {
  const ProcessStats before = ReadProcessStats();
  ASSERT_GT(before.resident_bytes, 0u);
  EXPECT_GE(before.virtual_bytes, before.resident_bytes);
  constexpr size_t kBytes = 64 << 20;
  std::vector<char> block(kBytes);
  std::memset(block.data(), 1, kBytes);
  const ProcessStats after = ReadProcessStats();
  EXPECT_GE(after.resident_bytes, before.resident_bytes + kBytes / 2);
  EXPECT_EQ(block[kBytes - 1], 1);
}

TEST(ProcessStatsTest, CountsOpenDescriptorsExactly) {
  const ProcessStats before = ReadProcessStats();
  ASSERT_GE(before.open_fds, 3u);  // stdin, stdout, stderr (or what the runner gave instead)
  EXPECT_GE(before.max_fds, before.open_fds);
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  EXPECT_EQ(ReadProcessStats().open_fds, before.open_fds + 2);
  ::close(fds[0]);
  ::close(fds[1]);
  EXPECT_EQ(ReadProcessStats().open_fds, before.open_fds);
}

TEST(ProcessStatsTest, CpuTimeAdvancesWithWork) {
  const double before = ReadProcessStats().cpu_seconds;
  volatile uint64_t sink = 0;
  while (ReadProcessStats().cpu_seconds < before + 0.02) {
    for (int i = 0; i < 1000000; ++i) sink = sink + static_cast<uint64_t>(i);
  }
  EXPECT_GE(ReadProcessStats().cpu_seconds, before + 0.02);
}

TEST(ProcessStatsTest, HeapInUseFollowsAllocationsAndReturnsWhenFreed) {
  const ProcessStats before = ReadProcessStats();
  if (!before.heap_in_use_bytes) GTEST_SKIP() << "no glibc heap counters in this build";
  // Many small blocks stay in the arena (not mmapped), unlike one large block.
  std::vector<std::unique_ptr<char[]>> blocks;
  blocks.reserve(4096);
  for (int i = 0; i < 4096; ++i) blocks.push_back(std::make_unique<char[]>(1000));
  const uint64_t held = *ReadProcessStats().heap_in_use_bytes;
  EXPECT_GE(held, *before.heap_in_use_bytes + 4096 * 1000);
  blocks.clear();
  blocks.shrink_to_fit();
  const uint64_t after = *ReadProcessStats().heap_in_use_bytes;
  EXPECT_LT(after, held - 4000 * 1000);
}

}  // namespace
}  // namespace xinfer
