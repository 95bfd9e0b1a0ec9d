// The in-process all-reduce: every rank ends with the rank-order sum, bit for bit, whatever the
// ranks' timing; many collectives back to back (the barrier's generations) and ranks that arrive
// late (the futex path). Runs under ThreadSanitizer through engine_tests' tensor-parallel test.
#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <thread>
#include <vector>

#include "backend/backend.h"
#include "backend/communicator.h"

namespace xinfer {
namespace {

// Calls fn(rank) on `size` threads at once.
template <class Fn>
void OnRanks(int size, Fn fn) {
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) threads.emplace_back([&fn, r] { fn(r); });
  for (std::thread& t : threads) t.join();
}

TEST(HostCommunicatorTest, EveryRankHoldsTheRankOrderSum) {
  std::unique_ptr<Backend> backend = CreateCpuBackend({.num_threads = 1});
  std::mt19937 rng(7);
  std::normal_distribution<float> dist(0.f, 1.f);
  for (int size : {1, 2, 3, 4}) {
    for (int64_t n : {int64_t{1}, int64_t{2}, int64_t{7}, int64_t{1000}, int64_t{4099}}) {
      auto comm = CreateHostCommunicator(size);
      ASSERT_EQ(comm->size(), size);
      std::vector<Tensor> x;
      for (int r = 0; r < size; ++r) {
        x.push_back(backend->NewTensor(DType::kF32, {n}));
        for (int64_t i = 0; i < n; ++i) x[r].data<float>()[i] = dist(rng) * (1 << (r * 4));
      }
      std::vector<float> want(n);
      for (int64_t i = 0; i < n; ++i) {
        float s = x[0].data<float>()[i];
        for (int r = 1; r < size; ++r) s += x[r].data<float>()[i];
        want[i] = s;
      }
      OnRanks(size, [&](int r) { comm->AllReduceSum(r, x[r]); });
      for (int r = 0; r < size; ++r)
        for (int64_t i = 0; i < n; ++i)
          ASSERT_EQ(x[r].data<float>()[i], want[i])
              << "size " << size << " n " << n << " rank " << r << " element " << i;
    }
  }
}

TEST(HostCommunicatorTest, ManyCollectivesWithLateRanks) {
  std::unique_ptr<Backend> backend = CreateCpuBackend({.num_threads = 1});
  constexpr int kSize = 3, kRounds = 300;
  auto comm = CreateHostCommunicator(kSize);
  std::vector<Tensor> x;
  for (int r = 0; r < kSize; ++r) x.push_back(backend->NewTensor(DType::kF32, {64, 3}));
  std::vector<int> failures(kSize, 0);
  OnRanks(kSize, [&](int r) {
    std::mt19937 rng(r);
    for (int round = 0; round < kRounds; ++round) {
      // Each element of rank r is r + round: the sum is 0 + 1 + 2 + 3 x round, exact in F32.
      for (int64_t i = 0; i < x[r].numel(); ++i) x[r].data<float>()[i] = r + round;
      // Now and then a rank arrives late enough for the others to stop spinning and sleep.
      if (rng() % 50 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
      comm->AllReduceSum(r, x[r]);
      for (int64_t i = 0; i < x[r].numel(); ++i)
        failures[r] += x[r].data<float>()[i] != 3.f + kSize * round;
      // No rank may overwrite its x for the next round while another still sums this one: the
      // collective returns only after the last copy, so this holds without another barrier.
    }
  });
  for (int r = 0; r < kSize; ++r) EXPECT_EQ(failures[r], 0) << "rank " << r;
}

}  // namespace
}  // namespace xinfer
