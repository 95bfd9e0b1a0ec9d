// ThreadPool: every chunk runs exactly once on a valid thread index, jobs follow each other
// without losing or repeating chunks, nested and concurrent calls behave as documented, and a
// job never waits for a worker that has not started it. TSan runs this binary (make test-tsan).
#include "base/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <numeric>
#include <set>
#include <thread>
#include <vector>

namespace xinfer {
namespace {

TEST(ThreadPoolTest, SizeDefaultsToAvailableCpus) {
  EXPECT_GE(AvailableCpuCount(), 1);
  EXPECT_EQ(ThreadPool().size(), AvailableCpuCount());
  EXPECT_EQ(ThreadPool(3).size(), 3);
  EXPECT_EQ(ThreadPool(-1).size(), AvailableCpuCount());
}

// Containers limit CPUs by quota more often than by cpuset; the pool must not start more threads
// than the quota grants (they would be throttled together).
TEST(ThreadPoolTest, CgroupQuotaCapsTheThreadCount) {
  EXPECT_EQ(CpuQuotaFromCgroupV2("max 100000"), 0);
  EXPECT_EQ(CpuQuotaFromCgroupV2("200000 100000"), 2);
  EXPECT_EQ(CpuQuotaFromCgroupV2("150000 100000\n"), 2);  // 1.5 CPUs: round up
  EXPECT_EQ(CpuQuotaFromCgroupV2("50000 100000"), 1);
  EXPECT_EQ(CpuQuotaFromCgroupV2(""), 0);
  EXPECT_EQ(CpuQuotaFromCgroupV2("garbage"), 0);
  EXPECT_EQ(CpuQuotaFromCgroupV2("100000 0"), 0);
  EXPECT_EQ(CpuQuotaFromCgroupV2("-5 100000"), 0);
  EXPECT_EQ(CpuQuotaFromCgroupV1("-1", "100000"), 0);
  EXPECT_EQ(CpuQuotaFromCgroupV1("400000", "100000"), 4);
  EXPECT_EQ(CpuQuotaFromCgroupV1("", ""), 0);
  EXPECT_EQ(CpuQuotaFromCgroupV1("12x", "100000"), 0);
}

TEST(ThreadPoolTest, EveryChunkRunsExactlyOnce) {
  for (int threads : {1, 2, 3, 8}) {
    ThreadPool pool(threads);
    for (int64_t chunks : {0, 1, 2, 3, 7, 64, 1000}) {
      std::vector<std::atomic<int>> runs(chunks);
      std::vector<int> thread_of(chunks, -1);
      pool.Run(chunks, [&](int64_t c, int thread) {
        runs[c].fetch_add(1);
        thread_of[c] = thread;
      });
      for (int64_t c = 0; c < chunks; ++c) {
        ASSERT_EQ(runs[c].load(), 1) << threads << " threads, chunk " << c << " of " << chunks;
        ASSERT_GE(thread_of[c], 0);
        ASSERT_LT(thread_of[c], threads);
      }
    }
  }
}

// Many short jobs back to back: the case where a worker still leaving job N may meet job N+1.
TEST(ThreadPoolTest, ManyShortJobsLoseNothing) {
  ThreadPool pool(4);
  std::vector<int64_t> sums(64);
  int64_t expected = 0;
  for (int job = 0; job < 20000; ++job) {
    const int64_t chunks = 1 + job % 7;
    std::fill(sums.begin(), sums.end(), 0);
    pool.Run(chunks, [&](int64_t c, int) { sums[c] = c + job; });
    const int64_t got = std::accumulate(sums.begin(), sums.begin() + chunks, int64_t{0});
    expected = chunks * job + chunks * (chunks - 1) / 2;
    ASSERT_EQ(got, expected) << "job " << job;
  }
}

TEST(ThreadPoolTest, ParallelRangesCoverEveryUnitOnce) {
  ThreadPool pool(3);
  for (int64_t units : {0, 1, 5, 12, 13, 100, 4097}) {
    for (int64_t min_units : {1, 4, 1000}) {
      std::vector<int> hits(units, 0);
      std::mutex mu;
      std::set<std::pair<int64_t, int64_t>> ranges;
      pool.ParallelRanges(units, min_units, [&](int64_t b, int64_t e, int) {
        ASSERT_LT(b, e);
        std::lock_guard<std::mutex> lock(mu);
        ranges.insert({b, e});
        for (int64_t i = b; i < e; ++i) ++hits[i];
      });
      for (int64_t i = 0; i < units; ++i) ASSERT_EQ(hits[i], 1) << units << " / " << min_units;
      EXPECT_EQ(static_cast<int64_t>(ranges.size()),
                units == 0 ? 0 : pool.RangeCount(units, min_units));
      // A range is never shorter than min_units unless there is only one.
      if (ranges.size() > 1) {
        for (auto [b, e] : ranges) EXPECT_GE(e - b, min_units) << units << " / " << min_units;
      }
    }
  }
  EXPECT_EQ(pool.RangeCount(100, 1000), 1);
  EXPECT_EQ(pool.RangeCount(2, 1), 2);
  EXPECT_EQ(ThreadPool(1).RangeCount(100, 1), 1);  // one thread: one range
}

// Ranges shrink: each takes 1/(2 x threads) of what is left (rounded up), at least min_units,
// the rest going into the last one rather than a sliver; at most kMaxRanges.
TEST(ThreadPoolTest, RangesShrinkGeometrically) {
  ThreadPool pool(2);
  ThreadPool::RangeBounds b;
  ASSERT_EQ(pool.SplitRanges(100, 10, b), 7);
  // 25, 19, 14, 11, then min_units 10 twice, then the last 11 rather than 10 + a sliver of 1.
  const std::vector<int64_t> want = {0, 25, 44, 58, 69, 79, 89, 100};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(b[i], want[i]) << i;
  // A long op: the last range is a small part of it, the first a quarter.
  const int64_t n = pool.SplitRanges(25323, 7, b);
  EXPECT_LE(n, ThreadPool::kMaxRanges);
  EXPECT_EQ(b[n], 25323);
  EXPECT_EQ(b[1], (25323 + 3) / 4);
  EXPECT_LT(b[n] - b[n - 1], 25323 / 50);
  for (int64_t c = 1; c + 1 < n; ++c) EXPECT_GE(b[c] - b[c - 1], b[c + 1] - b[c]) << c;
  // Tiny min_units: capped at kMaxRanges, still covering everything.
  EXPECT_EQ(pool.SplitRanges(int64_t{1} << 40, 1, b), ThreadPool::kMaxRanges);
  EXPECT_EQ(b[ThreadPool::kMaxRanges], int64_t{1} << 40);
}

// Equal ranges: one per thread, sizes differing by one unit at most, covering every unit once;
// fewer (of at least min_units each, but one) when the units are too few; odd counts included.
TEST(ThreadPoolTest, EqualRangesGiveEachThreadOneContiguousShare) {
  ThreadPool::RangeBounds b;
  ThreadPool two(2), three(3);
  ASSERT_EQ(two.SplitEqualRanges(9, 3, b), 2);
  EXPECT_EQ(b[0], 0);
  EXPECT_EQ(b[1], 4);
  EXPECT_EQ(b[2], 9);
  ASSERT_EQ(three.SplitEqualRanges(100, 1, b), 3);
  EXPECT_EQ(b[1], 33);
  EXPECT_EQ(b[2], 66);
  EXPECT_EQ(b[3], 100);
  EXPECT_EQ(three.SplitEqualRanges(5, 2, b), 2);  // 5 / 2 = 2 shares of at least 2
  EXPECT_EQ(b[2], 5);
  EXPECT_EQ(two.SplitEqualRanges(3, 1000, b), 1);
  EXPECT_EQ(b[1], 3);
  EXPECT_EQ(ThreadPool(1).SplitEqualRanges(100, 1, b), 1);
  EXPECT_EQ(two.SplitEqualRanges(0, 1, b), 0);
  for (int64_t units : {1, 2, 7, 13, 56, 72, 4097}) {
    std::vector<int> hits(units, 0);
    std::mutex mu;
    three.ParallelRanges(
        units, 1,
        [&](int64_t begin, int64_t end, int) {
          ASSERT_LT(begin, end);
          EXPECT_LE(end - begin, units / std::min<int64_t>(3, units) + 1) << units;
          std::lock_guard<std::mutex> lock(mu);
          for (int64_t i = begin; i < end; ++i) ++hits[i];
        },
        ThreadPool::Split::kEqual);
    for (int64_t i = 0; i < units; ++i) ASSERT_EQ(hits[i], 1) << units;
  }
}

TEST(ThreadPoolTest, NestedRunIsInlineOnTheSameThread) {
  ThreadPool pool(2);
  std::atomic<int> inner{0};
  std::atomic<bool> mismatch{false};
  pool.Run(4, [&](int64_t, int outer_thread) {
    pool.Run(3, [&](int64_t, int thread) {
      if (thread != outer_thread) mismatch = true;
      inner.fetch_add(1);
    });
  });
  EXPECT_EQ(inner.load(), 12);
  EXPECT_FALSE(mismatch.load());
}

TEST(ThreadPoolTest, TwoPoolsFromTwoThreads) {
  ThreadPool a(2), b(2);
  std::atomic<int64_t> sum_a{0}, sum_b{0};
  std::thread other([&] {
    for (int i = 0; i < 2000; ++i) b.Run(5, [&](int64_t c, int) { sum_b += c; });
  });
  for (int i = 0; i < 2000; ++i) a.Run(5, [&](int64_t c, int) { sum_a += c; });
  other.join();
  EXPECT_EQ(sum_a.load(), 2000 * 10);
  EXPECT_EQ(sum_b.load(), 2000 * 10);
}

// The workers do run chunks: each of the pool's threads takes one chunk of a job and they meet
// inside it (each chunk waits, up to 10 s, until all have started).
TEST(ThreadPoolTest, WorkersRunChunksConcurrently) {
  for (int threads : {2, 4}) {
    ThreadPool pool(threads);
    for (int round = 0; round < 20; ++round) {
      std::atomic<int> started{0};
      std::atomic<bool> all_met{true};
      std::mutex mu;
      std::set<int> thread_ids;
      pool.Run(threads, [&](int64_t, int thread) {
        {
          std::lock_guard<std::mutex> lock(mu);
          thread_ids.insert(thread);
        }
        started.fetch_add(1);
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (started.load() < threads && std::chrono::steady_clock::now() < deadline)
          std::this_thread::yield();
        if (started.load() < threads) all_met = false;
      });
      ASSERT_TRUE(all_met.load()) << threads << " threads, round " << round;
      ASSERT_EQ(static_cast<int>(thread_ids.size()), threads);
    }
    // Sleeping workers (past the spin budget) wake up for the next job.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

TEST(ThreadPoolDeathTest, OverlappingRunsFromTwoThreadsAbort) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        ThreadPool pool(2);
        std::atomic<bool> inside{false};
        std::thread t([&] {
          pool.Run(2, [&](int64_t, int) {
            inside = true;
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
          });
        });
        while (!inside.load()) std::this_thread::yield();
        pool.Run(2, [](int64_t, int) {});
        t.join();
      },
      "two threads at once");
}

}  // namespace
}  // namespace xinfer
