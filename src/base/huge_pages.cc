#include "base/huge_pages.h"

#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <limits>
#include <optional>
#include <string>

#include "base/check.h"

namespace xinfer {
namespace {

size_t RoundUp(size_t bytes) {
  return (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
}

}  // namespace

void* MapHugePages(size_t bytes) {
  const size_t length = RoundUp(bytes > 0 ? bytes : 1);
  // Over-map by one huge page, then unmap the unaligned head and the tail.
  const size_t over = length + kHugePageBytes;
  void* p = ::mmap(nullptr, over, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  XI_CHECK_MSG(p != MAP_FAILED, "host allocation (mmap) failed");
  const uintptr_t base = reinterpret_cast<uintptr_t>(p);
  const uintptr_t aligned = (base + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  if (aligned > base) ::munmap(p, aligned - base);
  const size_t tail = base + over - (aligned + length);
  if (tail > 0) ::munmap(reinterpret_cast<void*>(aligned + length), tail);
  void* data = reinterpret_cast<void*>(aligned);
  ::madvise(data, length, MADV_HUGEPAGE);  // advice only: a refusal leaves 4 KiB pages
  return data;
}

void UnmapHugePages(void* p, size_t bytes) {
  if (p != nullptr) ::munmap(p, RoundUp(bytes > 0 ? bytes : 1));
}

bool PreferNumaNode(void* p, size_t bytes, int node) {
#if defined(SYS_mbind)
  constexpr int kMpolPreferred = 1;  // <linux/mempolicy.h>
  constexpr int kMaxNodes = 1024;
  if (node < 0 || node >= kMaxNodes) return false;
  unsigned long mask[kMaxNodes / (8 * sizeof(unsigned long))] = {};
  mask[node / (8 * sizeof(unsigned long))] |= 1UL << (node % (8 * sizeof(unsigned long)));
  return ::syscall(SYS_mbind, p, bytes, kMpolPreferred, mask, kMaxNodes + 1, 0) == 0;
#else
  (void)p, (void)bytes, (void)node;
  return false;
#endif
}

namespace {

// The first number in a file ("max" and unreadable files give nothing).
std::optional<size_t> ReadNumber(const char* path) {
  std::ifstream in(path);
  size_t v = 0;
  if (!(in >> v)) return std::nullopt;
  return v;
}

}  // namespace

size_t AvailableMemoryBytes() {
  size_t available = 0;
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  size_t kib = 0;
  while (meminfo >> key >> kib) {
    if (key == "MemAvailable:") {
      available = kib * 1024;
      break;
    }
    meminfo.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  const auto limit = ReadNumber("/sys/fs/cgroup/memory.max");
  const auto used = ReadNumber("/sys/fs/cgroup/memory.current");
  if (limit && used) {
    const size_t left = *limit > *used ? *limit - *used : 0;
    available = available == 0 ? left : std::min(available, left);
  }
  return available;
}

const char* TransparentHugePageMode() {
  std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  if (!in || !std::getline(in, line)) return "unavailable";
  // The active mode is bracketed: "always [madvise] never".
  for (const char* mode : {"always", "madvise", "never"})
    if (line.find(std::string("[") + mode + "]") != std::string::npos) return mode;
  return "unavailable";
}

}  // namespace xinfer
