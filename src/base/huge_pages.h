// Anonymous host memory for large, streamed buffers (weights, the KV cache, the bandwidth probe):
// zero-filled, mapped lazily, 2 MiB-aligned and advised as transparent huge pages. Decode reads
// every weight once per token; with 4 KiB pages the TLB misses cost ~25 % of a core's streaming
// rate on Zen 4 (docs/performance.md, session 7). Where THP is off the advice is a no-op.
// Thread-safe (plain mmap/munmap).
#pragma once

#include <cstddef>

namespace xinfer {

inline constexpr size_t kHugePageBytes = size_t{2} << 20;

// Maps at least `bytes` (rounded up to kHugePageBytes) and returns the aligned start; CHECK-fails
// when the kernel refuses the mapping. Release with UnmapHugePages(p, bytes) (same `bytes`).
void* MapHugePages(size_t bytes);
void UnmapHugePages(void* p, size_t bytes);

// Asks the kernel to place the pages of [p, p + bytes) that are not touched yet on NUMA node
// `node` when it has room there (mbind MPOL_PREFERRED): a tensor-parallel rank's weights and
// buffers next to the cores that read them, whichever thread first touches them. False when
// the kernel refuses (no NUMA support, a node id it does not know); the pages then go wherever
// the first touch puts them.
bool PreferNumaNode(void* p, size_t bytes, int node);

// Bytes this process could still take without swapping or an OOM kill: /proc/meminfo's
// MemAvailable (free memory plus reclaimable page cache), capped by what a cgroup v2 memory
// limit leaves (memory.max - memory.current: a container's `--memory`); 0 when unknown.
size_t AvailableMemoryBytes();

// "always", "madvise" or "never" from /sys/kernel/mm/transparent_hugepage/enabled, or
// "unavailable", for logs and `doctor`.
const char* TransparentHugePageMode();

}  // namespace xinfer
