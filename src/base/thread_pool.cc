#include "base/thread_pool.h"

#include <sched.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <fstream>
#include <optional>
#include <string>

#include "base/check.h"
#include "base/cpu_topology.h"
#include "base/spin_wait.h"

namespace xinfer {
namespace {

// How long an idle worker polls for the next job before it sleeps. The ops of one step follow
// each other within microseconds; a futex wake costs ~5-20 us, so polling across such gaps pays.
constexpr auto kSpinBudget = std::chrono::microseconds(500);

// Spins (then yields the CPU) until done() holds.
template <class Done>
void WaitUntil(Done done) {
  for (int i = 0; !done(); ++i) {
    if (i < 4096) {
      CpuRelax();
    } else {
      std::this_thread::yield();
    }
  }
}

uint32_t EpochOf(uint64_t ticket) { return static_cast<uint32_t>(ticket >> 32); }
bool IsOpen(uint64_t ticket) { return (EpochOf(ticket) & 1) != 0; }

// Which pool's chunk this thread is running, if any: a Run() from inside a chunk runs inline.
thread_local const ThreadPool* tls_pool = nullptr;
thread_local int tls_thread = 0;

}  // namespace

namespace {

// A whole decimal number (optionally negative) with surrounding whitespace, else nullopt.
std::optional<int64_t> ParseInt(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())))
    text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
    text.remove_suffix(1);
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

int QuotaCpus(int64_t quota, int64_t period) {
  if (quota <= 0 || period <= 0) return 0;
  return static_cast<int>(std::min<int64_t>((quota + period - 1) / period, 1 << 20));
}

std::string ReadSmallFile(const char* path) {
  std::ifstream in(path);
  std::string text;
  std::getline(in, text);
  return text;
}

}  // namespace

int CpuQuotaFromCgroupV2(std::string_view cpu_max) {
  const size_t space = cpu_max.find(' ');
  if (space == std::string_view::npos) return 0;
  const auto quota = ParseInt(cpu_max.substr(0, space));  // "max" (no limit) fails to parse
  const auto period = ParseInt(cpu_max.substr(space + 1));
  return quota && period ? QuotaCpus(*quota, *period) : 0;
}

int CpuQuotaFromCgroupV1(std::string_view quota_us, std::string_view period_us) {
  const auto quota = ParseInt(quota_us), period = ParseInt(period_us);
  return quota && period ? QuotaCpus(*quota, *period) : 0;
}

int AvailableCpuCount() {
  int cpus = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) cpus = std::max(1, CPU_COUNT(&set));
  int quota = CpuQuotaFromCgroupV2(ReadSmallFile("/sys/fs/cgroup/cpu.max"));
  if (quota == 0)
    quota = CpuQuotaFromCgroupV1(ReadSmallFile("/sys/fs/cgroup/cpu/cpu.cfs_quota_us"),
                                 ReadSmallFile("/sys/fs/cgroup/cpu/cpu.cfs_period_us"));
  return quota > 0 ? std::min(cpus, quota) : cpus;
}

ThreadPool::ThreadPool(int num_threads, std::vector<int> cpus)
    : size_(num_threads > 0 ? num_threads : AvailableCpuCount()) {
  workers_.reserve(size_ - 1);
  for (int t = 1; t < size_; ++t) {
    std::vector<int> mine;
    if (!cpus.empty()) mine.push_back(cpus[t % cpus.size()]);
    workers_.emplace_back([this, t, mine] {
      PinCurrentThread(mine);  // best effort: a refusal leaves the thread where the OS puts it
      WorkerLoop(t);
    });
  }
}

ThreadPool::~ThreadPool() {
  stop_.store(true, std::memory_order_seq_cst);
  wake_.fetch_add(1, std::memory_order_seq_cst);
  wake_.notify_all();
  for (std::thread& w : workers_) w.join();
}

int64_t ThreadPool::SplitRanges(int64_t units, int64_t min_units, RangeBounds& bounds) const {
  min_units = std::max<int64_t>(1, min_units);
  bounds[0] = 0;
  if (units <= 0) return 0;
  int64_t n = 0, begin = 0;
  while (begin < units) {
    const int64_t left = units - begin;
    int64_t len = std::max(min_units, (left + 2 * size_ - 1) / (2 * size_));
    // The rest in one range rather than a sliver shorter than min_units, and never more than
    // kMaxRanges ranges.
    if (size_ == 1 || left - len < min_units || n + 1 == kMaxRanges) len = left;
    begin += len;
    bounds[++n] = begin;
  }
  return n;
}

int64_t ThreadPool::SplitEqualRanges(int64_t units, int64_t min_units, RangeBounds& bounds) const {
  bounds[0] = 0;
  if (units <= 0) return 0;
  const int64_t n = std::clamp<int64_t>(units / std::max<int64_t>(1, min_units), 1,
                                        std::min<int64_t>(size_, kMaxRanges));
  for (int64_t c = 1; c <= n; ++c) bounds[c] = units * c / n;
  return n;
}

void ThreadPool::RunImpl(int64_t num_chunks, void* fn, Trampoline call) {
  if (num_chunks <= 0) return;
  if (tls_pool == this || size_ == 1 || num_chunks == 1) {
    const int thread = tls_pool == this ? tls_thread : 0;
    for (int64_t c = 0; c < num_chunks; ++c) call(fn, c, thread);
    return;
  }
  XI_CHECK_MSG(num_chunks < (int64_t{1} << 31), "ThreadPool::Run: too many chunks");
  XI_CHECK_MSG(!running_.exchange(true, std::memory_order_acquire),
               "ThreadPool::Run called from two threads at once");
  // Workers still inside the previous (closed) job read its fields; let them leave first. They
  // ran out of chunks already, so this is a few instructions unless one was just preempted.
  WaitUntil([&] { return refs_.load(std::memory_order_seq_cst) == 0; });
  fn_ = fn;
  call_ = call;
  num_chunks_ = num_chunks;
  pending_.store(num_chunks, std::memory_order_relaxed);
  const uint32_t epoch = EpochOf(ticket_.load(std::memory_order_relaxed)) + 1;  // odd: open
  ticket_.store(static_cast<uint64_t>(epoch) << 32, std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_seq_cst) > 0) {
    wake_.fetch_add(1, std::memory_order_seq_cst);
    wake_.notify_all();
  }
  const ThreadPool* saved_pool = tls_pool;
  tls_pool = this;
  tls_thread = 0;
  RunChunks(epoch, 0);
  tls_pool = saved_pool;
  // Only chunks a worker has started remain; wait for those.
  WaitUntil([&] { return pending_.load(std::memory_order_acquire) == 0; });
  ticket_.store(static_cast<uint64_t>(epoch + 1) << 32, std::memory_order_seq_cst);  // closed
  running_.store(false, std::memory_order_release);
}

void ThreadPool::RunChunks(uint32_t epoch, int thread) {
  uint64_t t = ticket_.load(std::memory_order_acquire);
  while (EpochOf(t) == epoch && static_cast<uint32_t>(t) < num_chunks_) {
    if (!ticket_.compare_exchange_weak(t, t + 1, std::memory_order_acq_rel,
                                       std::memory_order_acquire))
      continue;  // `t` now holds the current ticket
    call_(fn_, static_cast<uint32_t>(t), thread);
    pending_.fetch_sub(1, std::memory_order_release);
    t = ticket_.load(std::memory_order_acquire);
  }
}

void ThreadPool::WorkerLoop(int thread) {
  tls_pool = this;
  tls_thread = thread;
  uint32_t joined = 0;  // the last epoch this worker took part in
  auto has_new_job = [&](uint64_t t) { return IsOpen(t) && EpochOf(t) != joined; };
  while (!stop_.load(std::memory_order_acquire)) {
    uint64_t t = ticket_.load(std::memory_order_acquire);
    if (!has_new_job(t)) {
      const auto deadline = std::chrono::steady_clock::now() + kSpinBudget;
      for (int i = 1; !has_new_job(t); ++i) {
        CpuRelax();
        t = ticket_.load(std::memory_order_acquire);
        if (i % 256 == 0 &&
            (stop_.load(std::memory_order_acquire) || std::chrono::steady_clock::now() > deadline))
          break;
      }
    }
    if (!has_new_job(t)) {
      // Sleep. The caller stores the ticket and then reads sleepers_; this thread counts itself
      // in sleepers_ and then reads the ticket (all seq_cst), so at least one of the two sees
      // the other: either the job is seen here or the caller bumps wake_ after `w` was read.
      const uint32_t w = wake_.load(std::memory_order_seq_cst);
      sleepers_.fetch_add(1, std::memory_order_seq_cst);
      if (!has_new_job(ticket_.load(std::memory_order_seq_cst)) &&
          !stop_.load(std::memory_order_seq_cst))
        wake_.wait(w, std::memory_order_seq_cst);
      sleepers_.fetch_sub(1, std::memory_order_seq_cst);
      continue;
    }
    const uint32_t epoch = EpochOf(t);
    joined = epoch;
    // Pin the job, then check it is still open: the caller closes the ticket before it waits
    // for refs_ == 0 and rewrites the job fields, so a job seen open here stays readable.
    refs_.fetch_add(1, std::memory_order_seq_cst);
    if (EpochOf(ticket_.load(std::memory_order_seq_cst)) == epoch) RunChunks(epoch, thread);
    refs_.fetch_sub(1, std::memory_order_release);
  }
}

}  // namespace xinfer
