#include "backend/cpu/cpu_limits.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <vector>

#include "backend/cpu/cpu_kernels.h"
#include "base/check.h"
#include "base/huge_pages.h"
#include "base/thread_pool.h"

namespace xinfer {
namespace {

double Seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

float PortableSum(const float* p, int64_t n) {
  float s = 0;
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < n; ++i) s += p[i];
  return s;
}

// Runs fn(thread) once on each thread of the pool at the same time and returns the sum of what
// they return.
template <class Fn>
float OnEveryThread(ThreadPool& pool, Fn fn) {
  std::vector<float> part(pool.size(), 0.f);
  pool.Run(pool.size(), [&](int64_t chunk, int) { part[chunk] = fn(static_cast<int>(chunk)); });
  float total = 0;
  for (float p : part) total += p;
  return total;
}

}  // namespace

BandwidthProbe::BandwidthProbe(int threads, size_t bytes)
    : pool_(threads), n_(static_cast<int64_t>(bytes / sizeof(float))) {
  // Huge pages, as the CPU backend gives its weights: with 4 KiB pages the probe reads ~25 %
  // less (TLB misses) and would understate the roofline decode is held to.
  buf_ = static_cast<float*>(MapHugePages(n_ * sizeof(float)));
  // Fault the pages in from every thread's share so first-touch cost is not timed. Every page
  // gets different contents: pages of one repeated value can be merged by the host (KSM-style
  // deduplication in virtual machines), after which the "DRAM" reads hit one cached page and the
  // probe reported up to 1.7x the real bandwidth.
  pool_.ParallelRanges(n_, 1 << 16, [&](int64_t b, int64_t e, int) {
    for (int64_t i = b; i < e; ++i)
      buf_[i] = static_cast<float>(static_cast<uint32_t>(i) * 2654435761u >> 8);
  });
}

BandwidthProbe::~BandwidthProbe() { UnmapHugePages(buf_, n_ * sizeof(float)); }

double BandwidthProbe::Measure(int repeats) {
  const cpu::CpuFeatures& f = cpu::DetectCpuFeatures();
  const int nt = pool_.size();
  volatile float sink = 0;
  double best = 0;
  for (int r = 0; r < repeats; ++r) {
    const double t0 = Seconds();
    const float total = OnEveryThread(pool_, [&](int tid) {
      const int64_t b = n_ * tid / nt, e = n_ * (tid + 1) / nt;
      return f.avx512 ? cpu::avx512::ReadSum(buf_ + b, e - b)
             : f.simd ? cpu::simd::ReadSum(buf_ + b, e - b)
                      : PortableSum(buf_ + b, e - b);
    });
    const double dt = Seconds() - t0;
    sink = sink + total;
    best = std::max(best, static_cast<double>(n_ * sizeof(float)) / dt / 1e9);
  }
  return best;
}

MachineLimits MeasureMachineLimits(int threads, size_t bandwidth_bytes, int repeats) {
  BandwidthProbe probe(threads, bandwidth_bytes);
  return MeasureMachineLimits(probe, repeats);
}

MachineLimits MeasureMachineLimits(BandwidthProbe& probe, int repeats) {
  MachineLimits m;
  m.read_gb_s = probe.Measure(repeats);
  ThreadPool& pool = probe.pool();
  m.threads = pool.size();
  const cpu::CpuFeatures& f = cpu::DetectCpuFeatures();
  volatile float sink = 0;
  if (!f.avx512 && f.simd) {
    constexpr int64_t kIters = 4'000'000;  // 12 chains of one vector FMA each
    const double flops_per_iter = 2.0 * 12 * static_cast<double>(cpu::simd::F32Lanes());
    for (int r = 0; r < repeats; ++r) {
      const double t0 = Seconds();
      const float total = OnEveryThread(pool, [&](int) { return cpu::simd::FmaLoop(kIters); });
      const double dt = Seconds() - t0;
      sink = sink + total;
      m.f32_gflop_s = std::max(m.f32_gflop_s, flops_per_iter * kIters * m.threads / dt / 1e9);
    }
  }
  if (f.avx512) {
    constexpr int64_t kIters = 4'000'000;  // 16 x 16-lane FMAs each: ~0.1 s per core
    for (int r = 0; r < repeats; ++r) {
      double t0 = Seconds();
      float total = OnEveryThread(pool, [&](int) { return cpu::avx512::FmaLoop(kIters); });
      double dt = Seconds() - t0;
      m.f32_gflop_s = std::max(m.f32_gflop_s, 2.0 * 16 * 16 * kIters * m.threads / dt / 1e9);
      if (f.avx512_bf16) {
        t0 = Seconds();
        total += OnEveryThread(pool, [&](int) { return cpu::avx512::Bf16DotLoop(kIters); });
        dt = Seconds() - t0;
        m.bf16_gflop_s = std::max(m.bf16_gflop_s, 2.0 * 32 * 16 * kIters * m.threads / dt / 1e9);
      }
      if (f.avx512_vnni) {
        t0 = Seconds();
        total += OnEveryThread(
            pool, [&](int) { return static_cast<float>(cpu::avx512::Int8DotLoop(kIters)); });
        dt = Seconds() - t0;
        m.int8_gop_s = std::max(m.int8_gop_s, 2.0 * 64 * 16 * kIters * m.threads / dt / 1e9);
      }
      sink = sink + total;
    }
  }
  return m;
}

}  // namespace xinfer
