// This process's resource use, as Prometheus' standard process collector reports it
// (process_resident_memory_bytes, process_open_fds, ...) plus the bytes the C heap holds in live
// allocations. Operators watch these for leaks; the server tests compare them across load rounds.
// Read from /proc/self, getrlimit/getrusage and glibc's mallinfo2. Thread-safe (reads only).
#pragma once

#include <cstdint>
#include <optional>

namespace xinfer {

struct ProcessStats {
  uint64_t resident_bytes = 0;  // VmRSS: anonymous, file-backed and shared pages
  uint64_t virtual_bytes = 0;   // VmSize
  uint64_t open_fds = 0;        // entries of /proc/self/fd, sockets included
  uint64_t max_fds = 0;         // RLIMIT_NOFILE (soft)
  double cpu_seconds = 0;       // user + system time of all threads
  // Bytes in live malloc allocations (mallinfo2's in-use bytes plus mmapped chunks): unlike RSS
  // it does not keep a run's high-water mark, so it returns to the same value when the same
  // work is done again. Absent without glibc 2.33 or under a sanitizer's allocator.
  std::optional<uint64_t> heap_in_use_bytes;
};

// Reads the figures now; fields that cannot be read stay 0 (or absent).
ProcessStats ReadProcessStats();

}  // namespace xinfer
