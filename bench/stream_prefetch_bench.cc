// How well a decode GEMV streams its weights against the plain read the roofline is measured
// with, in the same round (docs/performance.md, session 16). The host's bandwidth moves by 2x
// from one minute to the next, so each round times the plain read-and-add first and then every
// variant over the same bytes, and reports each variant as a fraction of that round's read;
// rounds are grouped by the read's rate at the end (medians).
//
// The variants are the AVX-512 64-row BF16 group tile at T = 1 (one broadcast x, four F32 FMA
// chains; cpu_kernels_dense_panels_avx512.cc) with different software prefetches, run either as
// one stream per thread over the whole buffer or as the Qwen2.5-0.5B decode step's 97 GEMVs one
// after another (each split in two halves, a std::barrier after each — a futex wait that costs
// the AWQ-sized step ~20 % in fast minutes —, or `_pool`: on xinfer::ThreadPool, whose joins
// spin as the engine's do), the AWQ g128 model's step in the same bytes (`awq_step_*`), and the
// engine's own kernels on the 24 layers' Linears of the AWQ model (int8 and BF16 activations) and
// of the BF16 model, weights placed as the engine places them (`*_layers_*`; session 27).
//
//   taskset -c 0,1 build/bin/stream_prefetch_bench [rounds] [name ...]
// Names pick the variants to run (the plain read always runs first); none: all of them.
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <barrier>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/quant_test_util.h"
#include "base/huge_pages.h"
#include "base/thread_pool.h"

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
__attribute__((target("avx512f,avx512bw"), noinline)) float F32Gemv(const uint8_t* w, int64_t bytes,
                                                                    const float* x, int64_t steps) {
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
        acc[p] = _mm512_fmadd_ps(xb, _mm512_loadu_ps(reinterpret_cast<const float*>(s + 64 * p)),
                                 acc[p]);
    }
    total += _mm512_reduce_add_ps(
        _mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), _mm512_add_ps(acc[2], acc[3])));
  }
  return total;
}

using Gemv = float (*)(const uint8_t*, int64_t, const float*, int64_t);
// Which decode step a model_step variant runs.
enum class Step { kNone, kBf16, kAwq };
struct Variant {
  std::string name;
  Gemv gemv;  // nullptr: the plain read
  Step step = Step::kNone;
  bool pool = false;  // the ops run on xinfer::ThreadPool (the engine's joins) instead
  // Instead: the engine's kernels on the Linears of a decode step's 24 layers (EngineLayers).
  enum class Layers { kNone, kAwqInt8, kAwqBf16, kDenseBf16 } layers = Layers::kNone;
};

// The Linears of the Qwen2.5-0.5B decode step's 24 layers (q/k/v and gate/up as one LinearMany
// each, o, down) on the engine's kernels, one sequence: AWQ g128 (~202 MB; int8 or BF16
// activations) or BF16 weights (`dense`, ~716 MB, BF16 activations), placed by the CPU backend as
// the engine places them (one huge-page region, in execution order, in the kernels' layouts).
class EngineLayers {
 public:
  EngineLayers(bool int8, bool dense) {
    xinfer::CpuBackendOptions options;
    options.num_threads = kThreads;
    options.int8_activations = int8;
    options.bf16_activations = !int8;
    backend_ = xinfer::CreateCpuBackend(options);
    if (dense) {
      // BF16 weights (the dense model's), placed as Linear weights.
      std::vector<xinfer::Backend::WeightToPlace> host;
      for (int l = 0; l < kLayers; ++l)
        for (int p = 0; p < 7; ++p) {
          xinfer::Tensor t =
              backend_->NewTensor(xinfer::DType::kBF16, {kShapes[p][0], kShapes[p][1]});
          for (int64_t i = 0; i < t.numel(); ++i)
            t.data<uint16_t>()[i] = static_cast<uint16_t>(0x3c00 + (i * 2654435761u >> 20) % 512);
          host.push_back({t, true, nullptr});
        }
      const std::vector<xinfer::Tensor> placed = backend_->PlaceWeights(host);
      for (const xinfer::Tensor& t : placed) {
        bytes_ += t.size_bytes();
        w_.emplace_back(t);
      }
    } else {
      std::vector<xinfer::QuantTensor> quant;
      quant.reserve(kLayers * 7);
      for (int l = 0; l < kLayers; ++l)
        for (int p = 0; p < 7; ++p)
          quant.push_back(xinfer::MakeQuant(*backend_, xinfer::QuantType::kAwq4, kShapes[p][0],
                                            kShapes[p][1], static_cast<uint32_t>(7 * l + p),
                                            nullptr, 128));
      std::vector<xinfer::Backend::WeightToPlace> host;
      for (const xinfer::QuantTensor& q : quant)
        for (const xinfer::Tensor* part : {&q.data, &q.scales, &q.zeros})
          host.push_back({*part, false, &q});
      const std::vector<xinfer::Tensor> placed = backend_->PlaceWeights(host);
      size_t next = 0;
      for (xinfer::QuantTensor q : quant) {
        q.data = placed[next++];
        q.scales = placed[next++];
        q.zeros = placed[next++];
        bytes_ += q.data.size_bytes() + q.scales.size_bytes() + q.zeros.size_bytes();
        w_.emplace_back(std::move(q));
      }
    }
    x_ = backend_->NewTensor(xinfer::DType::kF32, {1, 896});
    xi_ = backend_->NewTensor(xinfer::DType::kF32, {1, 4864});
    for (int64_t i = 0; i < 896; ++i) x_.data<float>()[i] = 1e-3f * static_cast<float>(i % 17);
    for (int64_t i = 0; i < 4864; ++i) xi_.data<float>()[i] = 1e-3f * static_cast<float>(i % 13);
    for (int p = 0; p < 7; ++p)
      y_.push_back(backend_->NewTensor(xinfer::DType::kF32, {1, kShapes[p][0]}));
  }
  double bytes() const { return static_cast<double>(bytes_); }
  void Run() {
    xinfer::Ops& ops = backend_->ops();
    for (int l = 0; l < kLayers; ++l) {
      const xinfer::Weight* lw = &w_[7 * l];
      const xinfer::Ops::LinearOut qkv[3] = {
          {&lw[0], nullptr, &y_[0]}, {&lw[1], nullptr, &y_[1]}, {&lw[2], nullptr, &y_[2]}};
      ops.LinearMany(x_, qkv);
      ops.Linear(x_, lw[3], nullptr, y_[3]);
      const xinfer::Ops::LinearOut gate_up[2] = {{&lw[4], nullptr, &y_[4]},
                                                 {&lw[5], nullptr, &y_[5]}};
      ops.LinearMany(x_, gate_up);
      ops.Linear(xi_, lw[6], nullptr, y_[6]);
    }
  }

 private:
  static constexpr int kLayers = 24;
  static constexpr int64_t kShapes[7][2] = {{896, 896},  {128, 896},  {128, 896}, {896, 896},
                                            {4864, 896}, {4864, 896}, {896, 4864}};
  std::unique_ptr<xinfer::Backend> backend_;
  std::vector<xinfer::Weight> w_;
  xinfer::Tensor x_, xi_;
  std::vector<xinfer::Tensor> y_;
  size_t bytes_ = 0;
};

struct Shape {
  int64_t rows, steps;
};
// A Qwen2.5-0.5B decode step: 24 layers of the four ops (q/k/v, o, gate/up, down), then the
// BF16 lm_head.
std::vector<Shape> DecodeStep(const std::array<Shape, 4>& layer) {
  std::vector<Shape> ops;
  for (int l = 0; l < 24; ++l) ops.insert(ops.end(), layer.begin(), layer.end());
  ops.push_back({151936, 896});
  return ops;
}
// The BF16 model's layer, and the AWQ g128 model's in bytes (4-bit codes + F32 scales and zero
// points, ~0.5625 bytes per weight: ~0.28 of BF16's) as BF16 64-row groups of the same K: q/k/v
// ~580 KB, o ~450 KB, gate/up ~4.9 MB, down ~2.45 MB.
constexpr std::array<Shape, 4> kBf16Layer = {Shape{1152, 896}, Shape{896, 896}, Shape{9728, 896},
                                             Shape{896, 4864}};
constexpr std::array<Shape, 4> kAwqLayer = {Shape{320, 896}, Shape{256, 896}, Shape{2752, 896},
                                            Shape{256, 4864}};

// Share `c` of kThreads of op `op` (64-row groups from `base`) through `gemv`.
float OpShare(Gemv gemv, const uint8_t* base, const Shape& op, int64_t c, const float* x) {
  const int64_t groups = op.rows / 64, group_bytes = 128 * op.steps;
  const int64_t g0 = groups * c / kThreads, g1 = groups * (c + 1) / kThreads;
  return gemv(base + g0 * group_bytes, (g1 - g0) * group_bytes, x, op.steps);
}
int64_t OpBytes(const Shape& op) { return op.rows / 64 * 128 * op.steps; }

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
  using Layers = Variant::Layers;
  const std::vector<Variant> all_variants = {
      {"read", nullptr},
      {"t1_4k", GroupGemv<4096, 2>},
      {"t1_8k", GroupGemv<8192, 2>},
      {"t1_16k", GroupGemv<16384, 2>},
      {"t1_32k", GroupGemv<32768, 2>},
      {"t0_8k", GroupGemv<8192, 3>},
      {"t2_8k", GroupGemv<8192, 1>},
      {"t2_16k", GroupGemv<16384, 1>},
      {"nta_4k", GroupGemv<4096, 0>},
      {"nta_8k", GroupGemv<8192, 0>},
      {"nta_12k", GroupGemv<12288, 0>},
      {"none", GroupGemv<0, 0>},
      {"pair_t1_8k", PairGemv<8192>},
      {"f32_t1_8k", F32Gemv<8192>},
      {"step_t1_4k", GroupGemv<4096, 2>, Step::kBf16},
      {"step_t1_8k", GroupGemv<8192, 2>, Step::kBf16},
      {"step_pair_t1_8k", PairGemv<8192>, Step::kBf16},
      {"step_nta_8k", GroupGemv<8192, 0>, Step::kBf16},
      {"step_none", GroupGemv<0, 0>, Step::kBf16},
      {"step_none_pool", GroupGemv<0, 0>, Step::kBf16, true},
      {"awq_step_none", GroupGemv<0, 0>, Step::kAwq},
      {"awq_step_none_pool", GroupGemv<0, 0>, Step::kAwq, true},
      {"awq_layers_int8", nullptr, Step::kNone, false, Layers::kAwqInt8},
      {"awq_layers_bf16", nullptr, Step::kNone, false, Layers::kAwqBf16},
      {"dense_layers_bf16", nullptr, Step::kNone, false, Layers::kDenseBf16},
  };
  std::vector<Variant> variants = {all_variants[0]};
  for (size_t v = 1; v < all_variants.size(); ++v) {
    bool picked = argc <= 2;
    for (int a = 2; a < argc; ++a) picked = picked || all_variants[v].name == argv[a];
    if (picked) variants.push_back(all_variants[v]);
  }
  if (variants.size() == 1) {
    std::fprintf(stderr, "stream_prefetch_bench: no variant of that name; the variants:");
    for (size_t v = 1; v < all_variants.size(); ++v)
      std::fprintf(stderr, " %s", all_variants[v].name.c_str());
    std::fprintf(stderr, "\n");
    return 2;
  }
  const std::vector<Shape> bf16_step = DecodeStep(kBf16Layer), awq_step = DecodeStep(kAwqLayer);
  std::vector<std::vector<double>> gb_s(variants.size());
  std::barrier sync(kThreads);
  xinfer::ThreadPool pool(kThreads);
  auto int8_layers = std::make_unique<EngineLayers>(/*int8=*/true, /*dense=*/false);
  auto bf16_layers = std::make_unique<EngineLayers>(false, false);
  auto dense_layers = std::make_unique<EngineLayers>(false, true);
  volatile float sink = 0;
  auto worker = [&](int tid) {
    for (int r = 0; r < rounds; ++r) {
      for (size_t v = 0; v < variants.size(); ++v) {
        const Variant& var = variants[v];
        // Lets the pools' idle workers stop polling (ThreadPool spins ~0.5 ms after a job).
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        sync.arrive_and_wait();
        const double t0 = Now();
        double bytes = 0;
        float s = 0;
        if (var.layers != Variant::Layers::kNone) {
          if (tid == 0) {
            EngineLayers& layers = var.layers == Variant::Layers::kAwqInt8   ? *int8_layers
                                   : var.layers == Variant::Layers::kAwqBf16 ? *bf16_layers
                                                                             : *dense_layers;
            layers.Run();
            bytes = layers.bytes();
          }
        } else if (var.pool) {
          if (tid == 0) {
            const std::vector<Shape>& step = var.step == Step::kBf16 ? bf16_step : awq_step;
            size_t offset = 0;
            for (const Shape& op : step) {
              pool.Run(kThreads, [&](int64_t c, int) {
                sink = sink + OpShare(var.gemv, buf + offset, op, c, x.data());
              });
              offset += OpBytes(op);
            }
            bytes = static_cast<double>(offset);
          }
        } else if (var.step == Step::kNone) {
          const int64_t half = kBytes / kThreads / (128 * kSteps) * (128 * kSteps);
          const uint8_t* mine = buf + tid * half;
          // The plain read: the bandwidth probe's own loop (BandwidthProbe, cpu_limits.cc).
          s = var.gemv == nullptr
                  ? xinfer::cpu::avx512::ReadSum(reinterpret_cast<const float*>(mine), half / 4)
                  : var.gemv(mine, half, x.data(), kSteps);
          bytes = static_cast<double>(half) * kThreads;
        } else {
          const std::vector<Shape>& step = var.step == Step::kBf16 ? bf16_step : awq_step;
          size_t offset = 0;
          for (const Shape& op : step) {
            s += OpShare(var.gemv, buf + offset, op, tid, x.data());
            offset += OpBytes(op);
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
