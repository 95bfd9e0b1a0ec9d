// The in-process all-reduce of backend/communicator.h.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <vector>

#include "backend/communicator.h"
#include "base/check.h"
#include "base/spin_wait.h"

namespace xinfer {
namespace {

class HostCommunicator : public Communicator {
 public:
  explicit HostCommunicator(int size) : size_(size), slots_(size) {
    XI_CHECK_MSG(size >= 1, "a communicator needs at least one rank");
  }
  int size() const override { return size_; }

  void AllReduceSum(int rank, Tensor& x) override {
    XI_CHECK(rank >= 0 && rank < size_);
    XI_CHECK_MSG(x.dtype() == DType::kF32, "AllReduceSum takes F32 tensors");
    if (size_ == 1) return;
    slots_[rank] = {x.data<float>(), x.numel()};
    Barrier();  // every rank's slot is published
    const int64_t n = x.numel();
    for (int r = 0; r < size_; ++r) XI_CHECK_MSG(slots_[r].n == n, "AllReduceSum shapes differ");
    // This rank adds up elements [begin, end) of every rank's x, in rank order, into rank 0's
    // copy, then copies that to the others: the slices are disjoint, so no rank reads what
    // another writes before the next barrier.
    const int64_t begin = n * rank / size_, end = n * (rank + 1) / size_;
    float* sum = slots_[0].data;
    for (int r = 1; r < size_; ++r) {
      const float* part = slots_[r].data;
      for (int64_t i = begin; i < end; ++i) sum[i] += part[i];
    }
    for (int r = 1; r < size_; ++r)
      std::memcpy(slots_[r].data + begin, sum + begin, (end - begin) * sizeof(float));
    Barrier();  // every slice is summed and copied
  }

 private:
  struct Slot {
    float* data = nullptr;
    int64_t n = 0;
  };

  // Sense by generation: the last rank to arrive starts the next generation. Ranks run on their
  // own cores and arrive within microseconds of each other, so a waiter spins first, then sleeps
  // on the generation word (a futex) when another process holds its partner's core.
  void Barrier() {
    const uint32_t generation = generation_.load(std::memory_order_acquire);
    if (arrived_.fetch_add(1, std::memory_order_acq_rel) == size_ - 1) {
      arrived_.store(0, std::memory_order_relaxed);
      generation_.fetch_add(1, std::memory_order_release);
      generation_.notify_all();  // no system call unless a rank sleeps
      return;
    }
    SpinThenWait(generation_, generation, kSpins);
  }

  static constexpr int kSpins = 1 << 14;
  const int size_;
  std::vector<Slot> slots_;
  std::atomic<int> arrived_{0};
  std::atomic<uint32_t> generation_{0};
};

}  // namespace

std::unique_ptr<Communicator> CreateHostCommunicator(int size) {
  return std::make_unique<HostCommunicator>(size);
}

}  // namespace xinfer
