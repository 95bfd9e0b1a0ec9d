// MapHugePages: 2 MiB-aligned, zero-filled, writable memory of at least the requested size, for
// any size including 0; TransparentHugePageMode names one of the kernel's modes.
#include "base/huge_pages.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>

namespace xinfer {
namespace {

TEST(HugePagesTest, MappingsAreAlignedZeroedAndWritable) {
  for (size_t bytes : {size_t{0}, size_t{1}, size_t{4096}, kHugePageBytes - 1, kHugePageBytes,
                       kHugePageBytes + 1, size_t{5} * kHugePageBytes + 12345}) {
    auto* p = static_cast<uint8_t*>(MapHugePages(bytes));
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % kHugePageBytes, 0u) << bytes;
    const size_t usable = bytes > 0 ? bytes : 1;
    for (size_t i = 0; i < usable; i += 4093) EXPECT_EQ(p[i], 0) << bytes << " at " << i;
    EXPECT_EQ(p[usable - 1], 0);
    std::memset(p, 0xab, usable);  // the whole range is writable
    EXPECT_EQ(p[usable - 1], 0xab);
    UnmapHugePages(p, bytes);
  }
}

TEST(HugePagesTest, ModeIsOneOfTheKernelsModes) {
  const std::string mode = TransparentHugePageMode();
  EXPECT_TRUE(mode == "always" || mode == "madvise" || mode == "never" || mode == "unavailable")
      << mode;
}

TEST(HugePagesTest, PagesCanPreferANumaNode) {
  const size_t bytes = 4 * kHugePageBytes;
  void* p = MapHugePages(bytes);
  // Node 0 exists wherever the kernel has NUMA support (one node on most machines).
  if (std::filesystem::exists("/sys/devices/system/node/node0")) {
    EXPECT_TRUE(PreferNumaNode(p, bytes, 0));
  }
  EXPECT_FALSE(PreferNumaNode(p, bytes, 5000));  // no such node
  EXPECT_FALSE(PreferNumaNode(p, bytes, -1));
  static_cast<char*>(p)[0] = 1;  // still ordinary memory
  UnmapHugePages(p, bytes);
}

}  // namespace
}  // namespace xinfer
