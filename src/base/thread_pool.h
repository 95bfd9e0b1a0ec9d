// ThreadPool: the CPU backend's worker threads. One caller hands it a job of N chunks; the
// caller and the workers claim chunks one at a time from a shared counter, and the call returns
// when every chunk has run.
//
// Why not OpenMP: a fork-join region ends in a barrier that waits for every thread, so when
// another process holds one of the cores, each of the ~150 parallel ops of a decode step waits a
// scheduler slice for the descheduled worker (decode fell ~30x on the 2-core machine). Here a
// worker that has not woken up simply claims nothing: the caller runs the chunks itself and
// waits only for chunks a worker has actually started. Idle workers spin briefly (the gaps
// between a step's ops are microseconds), then sleep on a futex.
//
// Ownership and threads: the pool owns its workers (size() - 1 of them; the caller is thread 0)
// and joins them in the destructor. Run() may be called from any one thread at a time (it
// CHECK-fails if two calls overlap); a Run() from inside a chunk runs inline on that thread.
// `fn` is called concurrently for distinct chunks; each chunk runs exactly once.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string_view>
#include <thread>
#include <vector>

namespace xinfer {

// The CPUs this process may use, at least 1: its affinity mask (taskset, a cgroup cpuset),
// capped by a cgroup CPU quota (a container's `--cpus`, a Kubernetes CPU limit), rounded up.
// More threads than the quota allows would be throttled together for the rest of each period.
int AvailableCpuCount();

// CPUs granted by a cgroup quota, rounded up: `cpu_max` is cgroup v2's cpu.max ("max 100000" or
// "200000 100000"); 0 when there is no limit or the text is not understood.
int CpuQuotaFromCgroupV2(std::string_view cpu_max);
// The same from cgroup v1's cpu.cfs_quota_us and cpu.cfs_period_us (-1: no limit).
int CpuQuotaFromCgroupV1(std::string_view quota_us, std::string_view period_us);

class ThreadPool {
 public:
  // num_threads: threads that run chunks, the caller included; <= 0 means AvailableCpuCount().
  // `cpus`: worker t runs on cpus[t % cpus.size()] only (the caller, thread 0, is the caller's
  // to bind: cpus[0] is meant for it); empty: the OS places the workers.
  explicit ThreadPool(int num_threads = 0, std::vector<int> cpus = {});
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return size_; }

  // Calls fn(chunk, thread) for every chunk in [0, num_chunks); `thread` in [0, size()) names the
  // thread running it (for per-thread scratch: one thread runs one chunk at a time).
  template <class Fn>
  void Run(int64_t num_chunks, Fn&& fn) {
    RunImpl(num_chunks, &fn, [](void* f, int64_t chunk, int thread) {
      (*static_cast<std::remove_reference_t<Fn>*>(f))(chunk, thread);
    });
  }

  // How ParallelRanges cuts [0, units) into contiguous ranges.
  //   kShrinking: each range takes 1 / (2 x size()) of the units still left, but at least
  //     `min_units` (one range, on the caller alone, when there are too few). Early ranges are
  //     long (a decode GEMV's weight stream restarts once per range) and the last ones short, so
  //     the thread that finishes last keeps the others waiting for a short range only; with
  //     equal ranges (4 per thread) that wait was ~6 % of a decode step (session 7,
  //     docs/performance.md).
  //   kEqual: one range per thread, as equal as whole units allow (fewer, of at least
  //     `min_units` each, when there are too few units). For a stream that gains from staying
  //     long, where the threads' shares take equal time: a one-sequence decode GEMV of int8 4-bit
  //     weights restarts its weight stream at every range, and kShrinking's ~10 ranges per call
  //     cost its layers ~10-20 % of their rate (2-core Zen 4, docs/performance.md, session 27).
  enum class Split { kShrinking, kEqual };

  // Splits [0, units) into contiguous ranges as `split` says and calls fn(begin, end, thread)
  // for each.
  template <class Fn>
  void ParallelRanges(int64_t units, int64_t min_units, Fn&& fn, Split split = Split::kShrinking) {
    if (units <= 0) return;
    RangeBounds bounds;
    const int64_t ranges = split == Split::kEqual ? SplitEqualRanges(units, min_units, bounds)
                                                  : SplitRanges(units, min_units, bounds);
    Run(ranges, [&](int64_t c, int thread) { fn(bounds[c], bounds[c + 1], thread); });
  }

  // How many ranges ParallelRanges makes of `units` (kShrinking: SplitRanges, kEqual:
  // SplitEqualRanges), and their bounds: range c is [bounds[c], bounds[c + 1]).
  static constexpr int kMaxRanges = 64;
  using RangeBounds = std::array<int64_t, kMaxRanges + 1>;
  int64_t SplitRanges(int64_t units, int64_t min_units, RangeBounds& bounds) const;
  int64_t SplitEqualRanges(int64_t units, int64_t min_units, RangeBounds& bounds) const;
  int64_t RangeCount(int64_t units, int64_t min_units) const {
    RangeBounds bounds;
    return SplitRanges(units, min_units, bounds);
  }

 private:
  using Trampoline = void (*)(void*, int64_t, int);
  void RunImpl(int64_t num_chunks, void* fn, Trampoline call);
  void WorkerLoop(int thread);
  // Claims and runs chunks of the job `epoch` until none are left.
  void RunChunks(uint32_t epoch, int thread);

  int size_;
  std::vector<std::thread> workers_;

  // The job: written by the caller while no worker holds it (refs_ == 0), read by workers once
  // they have seen its epoch open in ticket_.
  void* fn_ = nullptr;
  Trampoline call_ = nullptr;
  int64_t num_chunks_ = 0;

  // High 32 bits: epoch, odd while a job is open, even when closed. Low 32 bits: next chunk.
  std::atomic<uint64_t> ticket_{0};
  std::atomic<int64_t> pending_{0};   // chunks of the open job not yet finished
  std::atomic<int> refs_{0};          // workers inside the open job
  std::atomic<int> sleepers_{0};      // workers asleep (or about to be) on wake_
  std::atomic<uint32_t> wake_{0};     // futex word the sleepers wait on
  std::atomic<bool> running_{false};  // a Run() is in progress (misuse check)
  std::atomic<bool> stop_{false};
};

}  // namespace xinfer
