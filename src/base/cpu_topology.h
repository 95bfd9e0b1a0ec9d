// Where threads run: CPU lists as Linux writes them, the NUMA nodes' CPUs, and the placement of
// tensor-parallel ranks on them (vLLM's CPU backend: one rank per NUMA node, each rank's threads
// bound to its cores, VLLM_CPU_OMP_THREADS_BIND). Pure functions but AllowedCpus /
// NumaNodeCpus (read the process's mask and sysfs) and PinCurrentThread; thread-safe.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace xinfer {

// "0-3,8,10-11" (sysfs cpulist files, `taskset -c`) → {0, 1, 2, 3, 8, 10, 11}, ascending, no
// repeats. Empty text, bad numbers, reversed ranges and CPUs past 4095 are InvalidArgument.
StatusOr<std::vector<int>> ParseCpuList(std::string_view text);
// The inverse, ranges collapsed: {0, 1, 2, 3, 8} → "0-3,8".
std::string FormatCpuList(std::span<const int> cpus);

// The CPUs this process may run on (its affinity mask), ascending.
std::vector<int> AllowedCpus();
// Each NUMA node's CPUs, indexed by node id, from <node_dir>/node<N>/cpulist; nodes without
// CPUs (memory-only) hold empty lists. Empty when the directory is absent (one node, or not
// Linux).
std::vector<std::vector<int>> NumaNodeCpus(
    const std::string& node_dir = "/sys/devices/system/node");

// Where one rank's threads run: `cpus` (empty: unbound, the OS places them) and the NUMA node
// whose memory its weights and buffers should take (-1: any).
struct RankPlacement {
  std::vector<int> cpus;
  int numa_node = -1;
};

// Checks the syntax of a bind setting: "auto", "nobind", or CPU lists separated by '|', one per
// rank ("0-31|32-63"; vLLM's VLLM_CPU_OMP_THREADS_BIND).
Status ValidateThreadsBind(std::string_view bind);

// Places `ranks` ranks on the `allowed` CPUs (AllowedCpus) of a machine with `nodes`
// (NumaNodeCpus):
//   "auto": with at least `ranks` NUMA nodes that have allowed CPUs, rank r takes the r-th such
//     node (its allowed CPUs and its memory); otherwise the allowed CPUs, in node order, are cut
//     into `ranks` contiguous runs as equal as whole CPUs allow (a run on one node prefers its
//     memory). Fewer allowed CPUs than ranks is InvalidArgument.
//   "nobind": every rank unbound.
//   lists: rank r takes the r-th list; the count must be `ranks`, every CPU allowed, and no CPU
//     in two lists (InvalidArgument naming the rank and CPU otherwise).
StatusOr<std::vector<RankPlacement>> PlanRankPlacement(std::string_view bind, int ranks,
                                                       std::span<const int> allowed,
                                                       const std::vector<std::vector<int>>& nodes);

// Binds the calling thread to `cpus` (a no-op when empty). False when the kernel refuses.
bool PinCurrentThread(std::span<const int> cpus);

}  // namespace xinfer
