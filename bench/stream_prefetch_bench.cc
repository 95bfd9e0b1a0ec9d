// How well a decode GEMV streams its weights against the plain read the roofline is measured
// with, in the same round (docs/performance.md, session 16). The host's bandwidth moves by 2x
// from one minute to the next, so each round times the plain read-and-add first and then every
// variant over the same bytes, and reports each variant as a fraction of that round's read;
// rounds are grouped by the read's rate at the end (medians).
//
// The variants are the AVX-512 64-row BF16 group tile at T = 1 (one broadcast x, four F32 FMA
// chains; cpu_kernels_dense_panels_avx512.cc) with different software prefetches, run either as
// one stream per thread over the whole buffer or as the Qwen2.5-0.5B decode step's 97 GEMVs one
// after another (each split in two halves, a barrier after each).
//
//   taskset -c 0,1 build/bin/stream_prefetch_bench [rounds]
#include <immintrin.h>

#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "backend/cpu/cpu_kernels.h"
#include "base/huge_pages.h"

// GCC 12 reports the intrinsics' _mm512_undefined_* pass-through operands as (maybe) uninitialized
// (as in the kernels).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace {

constexpr int kThreads = 2;
constexpr int64_t kSteps = 896;             // K of the stream variant
constexpr size_t kBytes = size_t{1} << 30;  // ~ the 0.5B model's BF16 weights

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// kLocality: __builtin_prefetch's (0 = prefetchnta, 2 = prefetcht1); kAhead 0: no prefetch.
template <int kAhead, int kLocality>
__attribute__((target("avx512f,avx512bw"), noinline)) float GroupGemv(const uint8_t* w,
                                                                      int64_t bytes, const float* x,
                                                                      int64_t steps) {
  float total = 0;
  for (int64_t g = 0; g < bytes / (128 * steps); ++g) {
    const uint8_t* group = w + g * 128 * steps;
    __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),
                     _mm512_setzero_ps()};
    for (int64_t kk = 0; kk < steps; ++kk) {
      const uint8_t* s = group + kk * 128;
      if constexpr (kAhead != 0) {
        __builtin_prefetch(s + kAhead, 0, kLocality);
        __builtin_prefetch(s + kAhead + 64, 0, kLocality);
      }
      const __m512 xb = _mm512_set1_ps(x[kk]);
      for (int p = 0; p < 4; ++p) {
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + 32 * p));
        const __m512 wf = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(v), 16));
        acc[p] = _mm512_fmadd_ps(xb, wf, acc[p]);
      }
    }
    total += _mm512_reduce_add_ps(
        _mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), _mm512_add_ps(acc[2], acc[3])));
  }
  return total;
}

// The same stream with each 512-bit load of 32 BF16 widened by one shift (the low words) and one
// AND (the high words) instead of a zero-extension and a shift per 16: the ALU work per byte of
// a word-pair layout (a probe of whether the widening limits the stream; its rows are not the
// tile's).
template <int kAhead>
__attribute__((target("avx512f,avx512bw"), noinline)) float PairGemv(const uint8_t* w,
                                                                     int64_t bytes, const float* x,
                                                                     int64_t steps) {
  float total = 0;
  const __m512i high = _mm512_set1_epi32(static_cast<int>(0xFFFF0000u));
  for (int64_t g = 0; g < bytes / (128 * steps); ++g) {
    const uint8_t* group = w + g * 128 * steps;
    __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),
                     _mm512_setzero_ps()};
    for (int64_t kk = 0; kk < steps; ++kk) {
      const uint8_t* s = group + kk * 128;
      __builtin_prefetch(s + kAhead, 0, 2);
      __builtin_prefetch(s + kAhead + 64, 0, 2);
      const __m512 xb = _mm512_set1_ps(x[kk]);
      for (int p = 0; p < 2; ++p) {
        const __m512i v = _mm512_loadu_si512(s + 64 * p);
        acc[2 * p] = _mm512_fmadd_ps(xb, _mm512_castsi512_ps(_mm512_slli_epi32(v, 16)), acc[2 * p]);
        acc[2 * p + 1] =
            _mm512_fmadd_ps(xb, _mm512_castsi512_ps(_mm512_and_si512(v, high)), acc[2 * p + 1]);
      }
    }
    total += _mm512_reduce_add_ps(
        _mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), _mm512_add_ps(acc[2], acc[3])));
  }
  return total;
}

// F32 weights (the F32 model's tile): 256 bytes per k-step, one FMA per load.
template <int kAhead>
__attribute__((target("avx512f,avx512bw"), noinline)) float F32Gemv(const uint8_t* w,
                                                                    int64_t bytes, const float* x,
                                                                    int64_t steps) {
  float total = 0;
  for (int64_t g = 0; g < bytes / (256 * steps); ++g) {
    const uint8_t* group = w + g * 256 * steps;
    __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),
                     _mm512_setzero_ps()};
    for (int64_t kk = 0; kk < steps; ++kk) {
      const uint8_t* s = group + kk * 256;
      for (int p = 0; p < 4; ++p) __builtin_prefetch(s + kAhead + 64 * p, 0, 2);
      const __m512 xb = _mm512_set1_ps(x[kk]);
      for (int p = 0; p < 4; ++p)
        acc[p] = _mm512_fmadd_ps(
            xb, _mm512_loadu_ps(reinterpret_cast<const float*>(s + 64 * p)), acc[p]);
    }
    total += _mm512_reduce_add_ps(
        _mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), _mm512_add_ps(acc[2], acc[3])));
  }
  return total;
}

using Gemv = float (*)(const uint8_t*, int64_t, const float*, int64_t);
struct Variant {
  std::string name;
  Gemv gemv;  // nullptr: the plain read
  bool model_step;
};

struct Shape {
  int64_t rows, steps;
};
std::vector<Shape> DecodeStep() {  // Qwen2.5-0.5B: qkv, o, gate/up, down per layer; lm_head
  std::vector<Shape> ops;
  for (int l = 0; l < 24; ++l)
    for (Shape s : {Shape{1152, 896}, Shape{896, 896}, Shape{9728, 896}, Shape{896, 4864}})
      ops.push_back(s);
  ops.push_back({151936, 896});
  return ops;
}

}  // namespace

int main(int argc, char** argv) {
  if (!__builtin_cpu_supports("avx512bw")) {
    std::printf("stream_prefetch_bench: needs AVX-512 (the tile it measures)\n");
    return 0;
  }
  const int rounds = argc > 1 ? std::max(1, std::atoi(argv[1])) : 20;
  auto* buf = static_cast<uint8_t*>(xinfer::MapHugePages(kBytes));
  // Distinct contents per page (see BandwidthProbe: hosts may merge identical pages).
  for (size_t i = 0; i < kBytes / 4; ++i)
    reinterpret_cast<uint32_t*>(buf)[i] =
        (static_cast<uint32_t>(i) * 2654435761u >> 8) | 0x3f000000u;
  std::vector<float> x(8192, 1e-3f);
  const std::vector<Variant> variants = {
      {"read", nullptr, false},
      {"t1_4k", GroupGemv<4096, 2>, false},
      {"t1_8k", GroupGemv<8192, 2>, false},
      {"t1_16k", GroupGemv<16384, 2>, false},
      {"t1_32k", GroupGemv<32768, 2>, false},
      {"t0_8k", GroupGemv<8192, 3>, false},
      {"t2_8k", GroupGemv<8192, 1>, false},
      {"t2_16k", GroupGemv<16384, 1>, false},
      {"nta_4k", GroupGemv<4096, 0>, false},
      {"nta_8k", GroupGemv<8192, 0>, false},
      {"nta_12k", GroupGemv<12288, 0>, false},
      {"none", GroupGemv<0, 0>, false},
      {"pair_t1_8k", PairGemv<8192>, false},
      {"f32_t1_8k", F32Gemv<8192>, false},
      {"step_t1_4k", GroupGemv<4096, 2>, true},
      {"step_t1_8k", GroupGemv<8192, 2>, true},
      {"step_pair_t1_8k", PairGemv<8192>, true},
      {"step_nta_8k", GroupGemv<8192, 0>, true},
      {"step_none", GroupGemv<0, 0>, true},
  };
  const std::vector<Shape> step = DecodeStep();
  std::vector<std::vector<double>> gb_s(variants.size());
  std::barrier sync(kThreads);
  volatile float sink = 0;
  auto worker = [&](int tid) {
    for (int r = 0; r < rounds; ++r) {
      for (size_t v = 0; v < variants.size(); ++v) {
        const Variant& var = variants[v];
        sync.arrive_and_wait();
        const double t0 = Now();
        double bytes = 0;
        float s = 0;
        if (!var.model_step) {
          const int64_t half = kBytes / kThreads / (128 * kSteps) * (128 * kSteps);
          const uint8_t* mine = buf + tid * half;
          // The plain read: the bandwidth probe's own loop (BandwidthProbe, cpu_limits.cc).
          s = var.gemv == nullptr
                  ? xinfer::cpu::avx512::ReadSum(reinterpret_cast<const float*>(mine), half / 4)
                  : var.gemv(mine, half, x.data(), kSteps);
          bytes = static_cast<double>(half) * kThreads;
        } else {
          size_t offset = 0;
          for (const Shape& op : step) {
            const int64_t groups = op.rows / 64, group_bytes = 128 * op.steps;
            const int64_t g0 = groups * tid / kThreads, g1 = groups * (tid + 1) / kThreads;
            s += var.gemv(buf + offset + g0 * group_bytes, (g1 - g0) * group_bytes, x.data(),
                          op.steps);
            offset += groups * group_bytes;
            sync.arrive_and_wait();
          }
          bytes = static_cast<double>(offset);
        }
        sink = sink + s;
        sync.arrive_and_wait();
        if (tid == 0) gb_s[v].push_back(bytes / (Now() - t0) / 1e9);
      }
    }
  };
  std::thread other(worker, 1);
  worker(0);
  other.join();
  xinfer::UnmapHugePages(buf, kBytes);

  std::printf("round  read GB/s  then each variant / read\n");
  for (int r = 0; r < rounds; ++r) {
    std::printf("%5d  %8.1f ", r, gb_s[0][r]);
    for (size_t v = 1; v < variants.size(); ++v)
      std::printf(" %s=%.3f", variants[v].name.c_str(), gb_s[v][r] / gb_s[0][r]);
    std::printf("\n");
  }
  const double bounds[] = {0, 55, 62, 1e9};
  const char* kinds[] = {"read <= 55 GB/s", "55-62 GB/s", "read > 62 GB/s"};
  for (int c = 0; c < 3; ++c) {
    std::printf("medians, rounds with %s:", kinds[c]);
    int n = 0;
    for (size_t v = 1; v < variants.size(); ++v) {
      std::vector<double> f;
      for (int r = 0; r < rounds; ++r)
        if (gb_s[0][r] > bounds[c] && gb_s[0][r] <= bounds[c + 1])
          f.push_back(gb_s[v][r] / gb_s[0][r]);
      n = static_cast<int>(f.size());
      if (f.empty()) break;
      std::nth_element(f.begin(), f.begin() + f.size() / 2, f.end());
      std::printf(" %s=%.3f", variants[v].name.c_str(), f[f.size() / 2]);
    }
    std::printf(" (%d rounds)\n", n);
  }
  return 0;
}
