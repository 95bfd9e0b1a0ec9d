// Microbenchmarks of the CPU kernels on Qwen2.5-0.5B shapes (hidden 896, MLP 4864, vocab
// 151936, 14/2 heads of 64). Counters: bytes/s of weights streamed (decode is bandwidth-bound)
// and FLOP/s (prefill and batched decode are compute-bound).
//   build-perf/bin/kernel_bench --benchmark_filter=Linear --benchmark_repetitions=5
// XINFER_THREADS=N sets the ops' thread count (default: every CPU this process may use).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <random>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/cpu_limits.h"
#include "backend/cpu/fast_cpu_ops.h"
#include "backend/cpu/quant_test_util.h"

namespace xinfer {
namespace {

int Threads() {
  const char* e = std::getenv("XINFER_THREADS");
  return e != nullptr ? std::atoi(e) : 0;
}

// The ops a benchmark measures: FastCpuOps (optionally with BF16 activations) or the reference.
std::unique_ptr<Ops> MakeOps(bool reference, bool bf16_activations = false) {
  if (reference) return std::make_unique<CpuOps>(Threads());
  return std::make_unique<FastCpuOps>(bf16_activations, Threads());
}

Backend& TheBackend() {
  static std::unique_ptr<Backend> backend = CreateCpuBackend();
  return *backend;
}

Tensor Random(DType dtype, Shape shape) {
  Tensor t = TheBackend().NewTensor(dtype, shape);
  std::mt19937 rng(1);
  std::normal_distribution<float> dist(0.f, 1.f);
  for (int64_t i = 0; i < t.numel(); ++i) {
    const float v = dist(rng);
    if (dtype == DType::kF32) t.data<float>()[i] = v;
    if (dtype == DType::kBF16) t.data<uint16_t>()[i] = F32ToBf16(v);
    if (dtype == DType::kF16) t.data<uint16_t>()[i] = F32ToF16(v);
  }
  return t;
}

// Weights as the engine stores them: placed by the backend as a Linear weight (row tiles where
// the AVX-512 kernels read them), or row-major with tiles = 0.
Tensor PlacedLinearWeight(const Tensor& w, bool tiles, bool bf16_activations) {
  if (!tiles) return w;
  auto backend = CreateCpuBackend({.num_threads = 1, .bf16_activations = bf16_activations});
  return backend->PlaceWeights({{{w, true}}})[0];  // the Buffer outlives the backend
}

// Args: T, N, K, dtype (0 F32, 1 BF16, 2 F16), path (0: FastCpuOps, 1: the portable CpuOps,
// 2: FastCpuOps with BF16 activations, i.e. `--dtype bfloat16`), tiles (1: the weights as the
// engine places them, 0: row-major).
DType LinearDType(int64_t arg) {
  return arg == 0 ? DType::kF32 : arg == 1 ? DType::kBF16 : DType::kF16;
}

// Bytes of the weight (dense or quantized) and multiply-adds of T rows of x per iteration, as
// rates.
void SetLinearCounters(benchmark::State& state, size_t weight_bytes, int64_t t, int64_t n,
                       int64_t k) {
  state.counters["weight_B/s"] = benchmark::Counter(static_cast<double>(weight_bytes),
                                                    benchmark::Counter::kIsIterationInvariantRate);
  state.counters["FLOP/s"] =
      benchmark::Counter(2.0 * t * n * k, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_Linear(benchmark::State& state) {
  const int64_t t = state.range(0), n = state.range(1), k = state.range(2);
  const DType dt = LinearDType(state.range(3));
  const std::unique_ptr<Ops> ops_ptr = MakeOps(state.range(4) == 1, state.range(4) == 2);
  Ops& ops = *ops_ptr;
  Tensor x = Random(DType::kF32, {t, k});
  Tensor w = PlacedLinearWeight(Random(dt, {n, k}), state.range(5) != 0, state.range(4) == 2);
  Tensor y = TheBackend().NewTensor(DType::kF32, {t, n});
  for (auto _ : state) {
    ops.Linear(x, w, nullptr, y);
    benchmark::ClobberMemory();
  }
  SetLinearCounters(state, w.size_bytes(), t, n, k);
}

// A Linear whose weight comes from DRAM as in a decode step, where every layer's weights are read
// once per step: the weight is cycled through enough copies to exceed the last-level cache
// (>= 96 MiB in all). Args as BM_Linear's, tiles always 1.
void BM_LinearFromDram(benchmark::State& state) {
  const int64_t t = state.range(0), n = state.range(1), k = state.range(2);
  const DType dt = LinearDType(state.range(3));
  const bool bf16 = state.range(4) == 2;
  const std::unique_ptr<Ops> ops_ptr = MakeOps(false, bf16);
  Tensor x = Random(DType::kF32, {t, k});
  const Tensor w0 = Random(dt, {n, k});
  const int64_t copies =
      std::max<int64_t>(2, (int64_t{96} << 20) / static_cast<int64_t>(w0.size_bytes()) + 1);
  std::vector<Tensor> ws;
  for (int64_t c = 0; c < copies; ++c) ws.push_back(PlacedLinearWeight(w0, true, bf16));
  Tensor y = TheBackend().NewTensor(DType::kF32, {t, n});
  size_t next = 0;
  for (auto _ : state) {
    ops_ptr->Linear(x, ws[next], nullptr, y);
    next = (next + 1) % ws.size();
    benchmark::ClobberMemory();
  }
  SetLinearCounters(state, w0.size_bytes(), t, n, k);
}
BENCHMARK(BM_LinearFromDram)
    ->ArgsProduct({{1, 16, 64}, {9728}, {896}, {1}, {0, 2}})
    ->ArgsProduct({{1, 16, 64}, {896}, {4864}, {1}, {0, 2}})
    ->ArgsProduct({{1, 16}, {1152}, {896}, {1}, {0, 2}})
    ->ArgsProduct({{16}, {896}, {896}, {1}, {2}})
    ->ArgNames({"T", "N", "K", "dtype", "path"})
    ->UseRealTime();

void LinearArgs(benchmark::internal::Benchmark* b) {
  for (int dt : {1, 0}) {
    for (int t : {1, 16, 64, 512}) {
      b->Args({t, 4864, 896, dt, 0, 1});  // gate/up
      b->Args({t, 896, 4864, dt, 0, 1});  // down
      b->Args({t, 128, 896, dt, 0, 1});   // k/v
    }
    b->Args({1, 151936, 896, dt, 0, 1});  // lm_head, one sampled row
    b->Args({16, 151936, 896, dt, 0, 1});
  }
  for (int t : {1, 16, 64, 512}) {  // BF16 activations
    b->Args({t, 4864, 896, 1, 2, 1});
    b->Args({t, 896, 4864, 1, 2, 1});
  }
  b->Args({16, 1152, 896, 1, 2, 1});  // q/k/v and o_proj at 16 rows (from cache)
  b->Args({16, 896, 896, 1, 2, 1});
  b->Args({1, 151936, 896, 1, 2, 1});
  b->Args({16, 151936, 896, 1, 2, 1});
  b->Args({64, 151936, 896, 1, 2, 1});  // 64 rows, weights from DRAM
  b->Args({64, 151936, 896, 1, 0, 1});
  b->Args({1, 4864, 896, 2, 0, 1});
  b->Args({1, 151936, 896, 2, 0, 1});  // F16 lm_head (AWQ checkpoints keep it in F16)
  b->Args({1, 151936, 896, 1, 0, 0});  // row-major weights (before session 7), for comparison
  b->Args({1, 151936, 896, 0, 0, 0});
  b->Args({1, 4864, 896, 1, 1, 0});  // the portable reference, for scale
  b->Args({64, 4864, 896, 1, 1, 0});
}
BENCHMARK(BM_Linear)
    ->Apply(LinearArgs)
    ->ArgNames({"T", "N", "K", "dtype", "path", "tiles"})
    ->UseRealTime();

// Args: T, N, K, type (0 Q8_0, 1 Q4_0, 2 AWQ4-g128), path (0: FastCpuOps, 1: the portable
// reference, 2: FastCpuOps with int8 activations, i.e. `--int8-activations`).
void BM_QuantLinear(benchmark::State& state) {
  const int64_t t = state.range(0), n = state.range(1), k = state.range(2);
  const QuantType type = state.range(3) == 0   ? QuantType::kQ8_0
                         : state.range(3) == 1 ? QuantType::kQ4_0
                                               : QuantType::kAwq4;
  // path 0: F32 activations, 1: the reference, 2: int8 activations, 3: BF16 activations
  // (`--dtype bfloat16`: AWQ g128 on the vdpbf16ps panel kernel on AVX512-BF16 CPUs).
  const std::unique_ptr<Ops> ops_ptr = state.range(4) == 2
                                           ? std::make_unique<FastCpuOps>(false, Threads(), true)
                                           : MakeOps(state.range(4) == 1, state.range(4) == 3);
  Ops& ops = *ops_ptr;
  Tensor x = Random(DType::kF32, {t, k});
  // AWQ4 with group 128, as Qwen's AWQ checkpoints; in the panel layout where the path's kernel
  // reads it (as CpuBackend::PlaceWeights stores it: int8 activations, or AWQ on AVX2 CPUs).
  QuantTensor w = MakeQuant(TheBackend(), type, n, k, 2, nullptr, 128);
  if (state.range(4) != 1 && static_cast<FastCpuOps&>(ops).QuantLayoutFor(w) != Layout::kRowMajor)
    w = PanelTiledCopy(TheBackend(), w);
  Tensor y = TheBackend().NewTensor(DType::kF32, {t, n});
  for (auto _ : state) {
    ops.QuantLinear(x, w, nullptr, y);
    benchmark::ClobberMemory();
  }
  SetLinearCounters(state, w.size_bytes(), t, n, k);
}

void QuantLinearArgs(benchmark::internal::Benchmark* b) {
  for (int path : {0, 2, 3}) {
    for (int type : {2, 1, 0}) {
      if (path == 3 && type != 2) continue;  // BF16 activations: AWQ's panel kernel only
      for (int t : {1, 16, 64}) {
        b->Args({t, 4864, 896, type, path});  // gate/up
        b->Args({t, 896, 4864, type, path});  // down
      }
      b->Args({1, 1152, 896, type, path});    // q/k/v
      b->Args({1, 896, 896, type, path});     // o_proj
      b->Args({1, 151936, 896, type, path});  // lm_head (streams from DRAM)
    }
  }
}
BENCHMARK(BM_QuantLinear)
    ->Apply(QuantLinearArgs)
    ->ArgNames({"T", "N", "K", "type", "path"})
    ->UseRealTime();

// AWQ g128 from DRAM as in a decode step (BM_LinearFromDram's copies, >= 96 MiB in all), placed
// as CpuBackend places it for the path. Args: T, N, K, path (BM_QuantLinear's: 0 F32, 2 int8,
// 3 BF16 activations).
void BM_QuantLinearFromDram(benchmark::State& state) {
  const int64_t t = state.range(0), n = state.range(1), k = state.range(2);
  FastCpuOps ops(state.range(3) == 3, Threads(), state.range(3) == 2);
  Tensor x = Random(DType::kF32, {t, k});
  // Each copy its own bytes, placed in the layout the path's kernel reads.
  auto placed_copy = [&] {
    QuantTensor w = MakeQuant(TheBackend(), QuantType::kAwq4, n, k, 2, nullptr, 128);
    return ops.QuantLayoutFor(w) != Layout::kRowMajor ? PanelTiledCopy(TheBackend(), w) : w;
  };
  std::vector<QuantTensor> ws = {placed_copy()};
  const int64_t copies =
      std::max<int64_t>(2, (int64_t{96} << 20) / static_cast<int64_t>(ws[0].size_bytes()) + 1);
  while (static_cast<int64_t>(ws.size()) < copies) ws.push_back(placed_copy());
  Tensor y = TheBackend().NewTensor(DType::kF32, {t, n});
  size_t next = 0;
  for (auto _ : state) {
    ops.QuantLinear(x, ws[next], nullptr, y);
    next = (next + 1) % ws.size();
    benchmark::ClobberMemory();
  }
  SetLinearCounters(state, ws[0].size_bytes(), t, n, k);
}
BENCHMARK(BM_QuantLinearFromDram)
    ->ArgsProduct({{1, 16}, {9728}, {896}, {0, 2, 3}})
    ->ArgsProduct({{1}, {896}, {4864}, {0, 2, 3}})
    ->ArgsProduct({{1}, {1152}, {896}, {2, 3}})  // q/k/v
    ->ArgNames({"T", "N", "K", "path"})
    ->UseRealTime();

// The plain read the decode roofline is measured with (BandwidthProbe: every thread sums its share
// of a huge-page buffer), over 128 MiB per pass: run it beside the FromDram benches with
// --benchmark_enable_random_interleaving so that each kernel's rate has the read of its minutes
// to compare with (the host's bandwidth moves by 2x from one minute to the next).
void BM_ReadFromDram(benchmark::State& state) {
  constexpr size_t kBytes = size_t{128} << 20;
  BandwidthProbe probe(Threads(), kBytes);
  for (auto _ : state)
    state.SetIterationTime(static_cast<double>(kBytes) / (probe.Measure(1) * 1e9));
  state.counters["weight_B/s"] = benchmark::Counter(static_cast<double>(kBytes),
                                                    benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_ReadFromDram)->UseManualTime();

// Decode attention: T rows (one per sequence) over `ctx` keys each; `heads` 0: Qwen2.5-0.5B's 14
// query / 2 KV heads of 64, 1: Qwen3-0.6B's 16 / 8 heads of 128 (4x the K/V bytes per key).
// `cold` 1: one cache (huge pages, as the engine's) holding enough layers' keys to fill 64 MiB,
// one layer per call in turn, so every call finds its rows out of cache, as a decode step does
// after streaming the other weights. `prefill` 1: one sequence's prompt instead, T = ctx rows at
// positions 0 .. ctx - 1 (causal: row p attends to p + 1 keys). `bf16` 1: a BF16 cache
// (`--kv-cache-dtype bfloat16`: half the bytes per key) under F32 activations; 2: that cache under
// BF16 activations (`--dtype bfloat16`: BF16 products, AttentionGroupBf16).
void BM_PagedAttention(benchmark::State& state) {
  const bool prefill = state.range(3) != 0;
  const DType kv_dtype = state.range(4) != 0 ? DType::kBF16 : DType::kF32;
  const int64_t t = state.range(0), ctx = state.range(1);
  const int64_t seqs = prefill ? 1 : t;
  const bool qwen3 = state.range(5) == 1;
  const int hq = qwen3 ? 16 : 14, hkv = qwen3 ? 8 : 2, d = qwen3 ? 128 : 64, block = 16;
  const int64_t blocks_per_seq = (ctx + block - 1) / block;
  const int64_t layer_blocks = seqs * blocks_per_seq;
  const int64_t layer_bytes = 2 * layer_blocks * block * hkv * d * DTypeSize(kv_dtype);
  const int64_t layers =
      state.range(2) != 0 ? std::max<int64_t>(2, (int64_t{64} << 20) / layer_bytes) : 1;
  Tensor kc = Random(kv_dtype, {layers * layer_blocks * block, hkv, d});
  Tensor vc = Random(kv_dtype, {layers * layer_blocks * block, hkv, d});
  std::vector<int32_t> qstart, pos;
  std::vector<std::vector<int32_t>> tables(layers);
  int64_t keys = 0;  // summed over the query rows
  for (int64_t s = 0; s < seqs; ++s) {
    qstart.push_back(static_cast<int32_t>(pos.size()));
    for (int64_t p = prefill ? 0 : ctx - 1; p < ctx; ++p) {
      pos.push_back(static_cast<int32_t>(p));
      keys += p + 1;
    }
    for (int64_t l = 0; l < layers; ++l)
      for (int64_t j = 0; j < blocks_per_seq; ++j)
        tables[l].push_back(static_cast<int32_t>(l * layer_blocks + s * blocks_per_seq + j));
  }
  qstart.push_back(static_cast<int32_t>(pos.size()));
  const int64_t rows = static_cast<int64_t>(pos.size());
  Tensor q = Random(DType::kF32, {rows, hq, d});
  Tensor o = TheBackend().NewTensor(DType::kF32, {rows, hq, d});
  FastCpuOps ops(/*bf16_activations=*/state.range(4) == 2, Threads());
  int64_t layer = 0;
  for (auto _ : state) {
    const Ops::PagedAttentionBatch batch{qstart, pos, tables[layer],
                                         static_cast<int32_t>(blocks_per_seq), block};
    ops.PagedAttention(q, kc, vc, batch, o);
    layer = layer + 1 == layers ? 0 : layer + 1;
  }
  state.counters["FLOP/s"] =
      benchmark::Counter(4.0 * hq * d * keys, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_PagedAttention)
    ->ArgsProduct({{1}, {512}, {0}, {0}, {0, 1, 2}, {0}})
    ->ArgsProduct({{16, 64}, {256}, {0}, {0}, {0, 1, 2}, {0}})
    ->ArgsProduct({{1}, {144, 512}, {1}, {0}, {0, 1, 2}, {0}})
    ->ArgsProduct({{16}, {144, 256}, {1}, {0}, {0, 1, 2}, {0}})
    ->ArgsProduct({{8}, {1024}, {1}, {0}, {1, 2}, {0}})  // long contexts, out of cache
    ->ArgsProduct({{512}, {512}, {0}, {1}, {0, 1, 2}, {0}})
    // Qwen3's heads: decode from cache and out of it, a long context, a prefill.
    ->ArgsProduct({{1, 16}, {256}, {0, 1}, {0}, {0, 1, 2}, {1}})
    ->ArgsProduct({{8}, {1024}, {1}, {0}, {0, 1, 2}, {1}})
    ->ArgsProduct({{512}, {512}, {0}, {1}, {0, 1, 2}, {1}})
    ->ArgNames({"T", "ctx", "cold", "prefill", "bf16", "heads"})
    ->UseRealTime();

void BM_Elementwise(benchmark::State& state) {
  const int64_t rows = state.range(0);
  Tensor g = Random(DType::kF32, {rows, 4864});
  Tensor u = Random(DType::kF32, {rows, 4864});
  Tensor x = Random(DType::kF32, {rows, 896});
  Tensor w = Random(DType::kBF16, {896});
  FastCpuOps ops(false, Threads());
  for (auto _ : state) {
    ops.SiluMul(g, u, g);
    ops.RmsNorm(x, w, 1e-6f, x);
  }
}
BENCHMARK(BM_Elementwise)->Arg(1)->Arg(512)->UseRealTime();

}  // namespace
}  // namespace xinfer

BENCHMARK_MAIN();
