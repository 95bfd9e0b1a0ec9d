// Measured machine limits (what `xinfer doctor --measure` and `xinfer bench offline` compare
// against): DRAM read bandwidth and the FP32-FMA / BF16-dot / INT8-dot compute peaks with the
// backend's threads. Each is the best of a few short runs, so a noisy neighbour lowers it less.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/thread_pool.h"

namespace xinfer {

struct MachineLimits {
  int threads = 0;
  double read_gb_s = 0;     // GB/s (1e9 bytes), reading a buffer far larger than the caches
  double f32_gflop_s = 0;   // FP32 FMA peak (0 when not measured: no AVX-512)
  double bf16_gflop_s = 0;  // vdpbf16ps peak (0 without AVX512-BF16)
  double int8_gop_s = 0;    // vpdpbusd peak, multiplies and adds (0 without AVX512-VNNI)
};

// DRAM read bandwidth, measurable again and again: owns a buffer far larger than the caches
// (faulted in once at construction) and a pool of `threads` threads that sum it. The host's
// bandwidth moves from minute to minute, so a benchmark can probe right beside each timed run.
// Not thread-safe; one Measure at a time.
class BandwidthProbe {
 public:
  explicit BandwidthProbe(int threads = 0, size_t bytes = size_t{1} << 30);
  ~BandwidthProbe();
  BandwidthProbe(const BandwidthProbe&) = delete;
  BandwidthProbe& operator=(const BandwidthProbe&) = delete;
  int threads() const { return pool_.size(); }
  // GB/s (1e9 bytes), the best of `repeats` passes over the buffer.
  double Measure(int repeats = 3);
  // The probe's threads, for other measurements that should run on the same ones.
  ThreadPool& pool() { return pool_; }

 private:
  ThreadPool pool_;
  float* buf_ = nullptr;
  int64_t n_ = 0;  // floats in buf_
};

// `threads`: as many as the backend runs (<= 0: every CPU this process may use, its default);
// `bandwidth_bytes`: size of the buffer read (default 1 GiB, as the reference anchors).
MachineLimits MeasureMachineLimits(int threads = 0, size_t bandwidth_bytes = size_t{1} << 30,
                                   int repeats = 5);
// The same with a probe the caller keeps (and may measure again later) and its threads.
MachineLimits MeasureMachineLimits(BandwidthProbe& probe, int repeats = 5);

}  // namespace xinfer
