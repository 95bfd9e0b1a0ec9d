#include "base/process_stats.h"

#include <malloc.h>
#include <sys/resource.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <string>

namespace xinfer {
namespace {

// The sanitizers replace malloc; glibc's counters then describe an unused heap.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kGlibcOwnsTheHeap = false;
#else
constexpr bool kGlibcOwnsTheHeap = true;
#endif

}  // namespace

ProcessStats ReadProcessStats() {
  ProcessStats stats;
  std::ifstream status("/proc/self/status");
  std::string key;
  uint64_t kib = 0;
  while (status >> key) {
    if (key == "VmRSS:" && status >> kib) stats.resident_bytes = kib * 1024;
    if (key == "VmSize:" && status >> kib) stats.virtual_bytes = kib * 1024;
    status.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  std::error_code error;
  for (std::filesystem::directory_iterator it("/proc/self/fd", error), end; !error && it != end;
       it.increment(error)) {
    ++stats.open_fds;
  }
  // The iterator's own descriptor was open while it counted.
  if (stats.open_fds > 0) --stats.open_fds;
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0) stats.max_fds = limit.rlim_cur;
  rusage usage{};
  if (::getrusage(RUSAGE_SELF, &usage) == 0) {
    stats.cpu_seconds = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                        static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
  }
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
  if (kGlibcOwnsTheHeap) {
    const struct mallinfo2 info = ::mallinfo2();
    stats.heap_in_use_bytes = info.uordblks + info.hblkhd;
  }
#endif
  return stats;
}

}  // namespace xinfer
