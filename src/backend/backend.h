// The device abstraction. Model code sees only `Backend` and `Ops`; only backend/ names devices.
//
// Ownership: a Backend owns its device resources and outlives every Buffer it allocated (the
// engine creates it first and destroys it last). Buffers are shared_ptr so tensors can alias.
// Thread-safety: Allocate() is thread-safe; an Ops object runs one op at a time (the runner thread
// calls it), each op may use the backend's own worker threads internally.
//
// Conventions for all ops: activations are F32, row-major, contiguous. Weights may be F32, F16 or
// BF16 and are consumed in their stored layout. Shapes are CHECKed (a mismatch is a bug in model
// code, not user input).
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tensor/quant.h"
#include "tensor/tensor.h"

namespace xinfer {

// Rotary embedding's frequencies: pair i of a head (elements i and i + dim / 2) at position p
// turns by the angle p * inv_freq[i], and cos and sin are multiplied by `scale` (YaRN's attention
// scaling; 1 otherwise). The model builds one from its config (model/layers/rope_scaling.h).
struct RopeSpec {
  std::vector<double> inv_freq;  // dim / 2 entries
  double scale = 1;
  bool operator==(const RopeSpec&) const = default;
};
// Unscaled RoPE: inv_freq[i] = theta^(-2i / dim).
inline RopeSpec PlainRope(double theta, int64_t dim) {
  RopeSpec r;
  for (int64_t i = 0; i < dim / 2; ++i)
    r.inv_freq.push_back(1.0 / std::pow(theta, static_cast<double>(2 * i) / dim));
  return r;
}

class Ops {
 public:
  virtual ~Ops() = default;

  // out[t, :] = float(table[ids[t], :]). Ids must be in range (validated by the caller).
  virtual void Embedding(const Tensor& table, std::span<const int32_t> ids, Tensor& out) = 0;
  // Row-wise RMSNorm over the last dimension of x: out = x / rms(x) * weight.
  // x is [rows, n]; weight is [n]. out may alias x.
  virtual void RmsNorm(const Tensor& x, const Tensor& weight, float eps, Tensor& out) = 0;
  // out[T, N] = x[T, K] @ w[N, K]^T (+ bias[N]).
  virtual void Linear(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& out) = 0;
  // Quantized weights (tensor/quant.h). Non-virtual front doors taking a Weight: a dense weight
  // goes to Embedding/Linear above, a quantized one to QuantEmbedding/QuantLinear below, so a
  // backend overrides only the primitives. (Derived classes that override Linear or Embedding add
  // `using Ops::Linear; using Ops::Embedding;` to keep these visible through their own type.)
  void Embedding(const Weight& table, std::span<const int32_t> ids, Tensor& out);
  void Linear(const Tensor& x, const Weight& w, const Tensor* bias, Tensor& out);
  // Several Linears of the same x (q/k/v, gate/up): parts[i].out = x @ parts[i].w^T (+ bias),
  // bitwise what separate Linear calls give. A backend may run them as one job (one fork-join,
  // x prepared once); the default calls Linear for each.
  struct LinearOut {
    const Weight* w;
    const Tensor* bias;  // may be null
    Tensor* out;
  };
  virtual void LinearMany(const Tensor& x, std::span<const LinearOut> parts);
  // A Linear per group of x's rows, no bias: out's rows [row_begin, row_end) = the same rows of
  // x (2-D [T, K]) @ w^T. A mixture-of-experts layer runs each expert's weight on its tokens' rows
  // this way. `out` is [T, w rows]; groups may share one (disjoint rows) or not (gate and up of
  // the same rows). Bitwise what a Linear per group on its rows gives; a backend may run them all
  // as one job (x prepared once, one fork-join). The default calls Linear per group.
  struct RowGroupLinear {
    const Weight* w;
    Tensor* out;
    int64_t row_begin, row_end;
  };
  virtual void LinearRowGroups(const Tensor& x, std::span<const RowGroupLinear> groups);
  // out[t, :] = dequantize(table row ids[t]).
  virtual void QuantEmbedding(const QuantTensor& table, std::span<const int32_t> ids, Tensor& out);
  // out[T, N] = x[T, K] @ dequantize(w)[N, K]^T (+ bias[N]), accumulated in F32. Every output
  // element is computed in the same order whatever T is (batch invariance).
  // Defaults: the portable reference kernels in backend/cpu/quant_ops.cc.
  virtual void QuantLinear(const Tensor& x, const QuantTensor& w, const Tensor* bias, Tensor& out);
  // Rotary embedding, rotate-half layout (as Hugging Face Llama/Qwen): x is [T, heads, dim],
  // token t is at position positions[t], rope.inv_freq has dim / 2 entries. In place.
  virtual void Rope(Tensor& x, std::span<const int32_t> positions, const RopeSpec& rope) = 0;
  // out = silu(gate) * up, elementwise. out may alias gate.
  virtual void SiluMul(const Tensor& gate, const Tensor& up, Tensor& out) = 0;
  // out = a + b, elementwise. out may alias a.
  virtual void Add(const Tensor& a, const Tensor& b, Tensor& out) = 0;
  // dst rows [dst_row, dst_row + src.dim(0)) = src (same row width, both F32).
  virtual void CopyRows(const Tensor& src, Tensor& dst, int64_t dst_row) = 0;
  // dst[:, dst_col : dst_col + src.dim(1)] = src (both 2-D F32 with the same rows): one rank's
  // columns of a result split across a tensor-parallel group (its vocabulary slice of the logits).
  virtual void CopyColumns(const Tensor& src, Tensor& dst, int64_t dst_col) = 0;
  // Mixture-of-experts routing (2-D F32, rows of one width): dst[i, :] = src[rows[i], :] for
  // each i; and dst[rows[i], :] += weights[i] * src[i, :], in order of i.
  virtual void GatherRows(const Tensor& src, std::span<const int32_t> rows, Tensor& dst) = 0;
  virtual void ScatterAddRows(const Tensor& src, std::span<const int32_t> rows,
                              std::span<const float> weights, Tensor& dst) = 0;
  // Stores k, v [T, Hkv, D] (F32) into the paged caches [num_slots, Hkv, D] at rows slots[t].
  // The caches are F32, or BF16 (both alike; values rounded to nearest even).
  virtual void WriteKvSlots(const Tensor& k, const Tensor& v, std::span<const int32_t> slots,
                            Tensor& k_cache, Tensor& v_cache) = 0;
  // Causal attention over a paged KV cache for a batch of sequences (PagedAttention): query t of
  // sequence s sees the keys at positions 0..positions[t] of s, found through s's block table
  // (slot = block_tables[s * max_blocks_per_seq + pos / block_size] * block_size
  //        + pos % block_size). GQA when Hq > Hkv. q and out are [T, Hq, D].
  // Each query row is computed independently of the others, in the same order, so results do not
  // depend on how requests are batched or chunked.
  // The caches are F32 or BF16 (both alike); BF16 is widened exactly, so the result is the one an
  // F32 cache holding the same values gives.
  struct PagedAttentionBatch {
    std::span<const int32_t> query_start;   // [S + 1]: sequence s owns query rows [qs[s], qs[s+1])
    std::span<const int32_t> positions;     // [T]
    std::span<const int32_t> block_tables;  // [S * max_blocks_per_seq]
    int32_t max_blocks_per_seq = 0;
    int32_t block_size = 0;
  };
  virtual void PagedAttention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                              const PagedAttentionBatch& batch, Tensor& out) = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;
  // One line for the startup log: the device and the kernels it runs (e.g. the CPU's ISA).
  virtual std::string description() const { return name(); }
  // Zero-initialized device memory of `bytes` bytes.
  virtual std::shared_ptr<Buffer> Allocate(size_t bytes) = 0;
  virtual Ops& ops() = 0;
  // Weight placement, once per model at load time: returns the weights' tensors (same dtype and
  // shape, in the same order) in the memory and layout this device's ops should read them in.
  // `linear`: the tensor is the `w` of Ops::Linear, which the backend may store in a layout of its
  // kernels' choosing (Tensor::layout(); every op, Embedding included, accepts the result).
  // Inputs may point into a memory-mapped file; inputs that alias the same bytes (a tied lm_head)
  // alias each other in the result too, laid out for Linear if either is. The results share
  // Buffers that outlive the inputs.
  // `quant_of`: the quantized Linear weight this tensor is a part of (its codes, scales or zero
  // points), which the backend may likewise store in a layout of its kernels' choosing (all parts
  // alike; QuantTensor::data's layout tells). Not owned; only read during the call.
  struct WeightToPlace {
    Tensor tensor;
    bool linear = false;
    const QuantTensor* quant_of = nullptr;
  };
  virtual std::vector<Tensor> PlaceWeights(std::span<const WeightToPlace> weights) = 0;

  // Runs fn(i) for every i in [0, n), possibly concurrently, on the host threads this backend
  // computes with (the CPU backend: its ops' thread pool, the caller included), for host-side
  // work between model steps such as sampling each sequence's next token. Returns when all have
  // run. Call it from the thread that runs the ops, never from inside fn or while an op runs.
  // Default (a device backend): one after another on the caller.
  virtual void ParallelForHost(int64_t n, const std::function<void(int64_t)>& fn) {
    for (int64_t i = 0; i < n; ++i) fn(i);
  }

  // Binds the calling thread to this backend's cores, for a thread that will drive its ops (a
  // tensor-parallel rank's thread: its pool's thread 0). Default: nothing to bind.
  virtual void BindCallerThread() {}

  // Convenience: a new zeroed tensor on this device.
  Tensor NewTensor(DType dtype, Shape shape) {
    size_t bytes = static_cast<size_t>(NumElements(shape)) * DTypeSize(dtype);
    return Tensor(Allocate(bytes), 0, dtype, std::move(shape));
  }
};

struct CpuBackendOptions {
  int num_threads = 0;  // 0: all cores
  // BF16 weights meet activations rounded to BF16 (vdpbf16ps, ~1.7x the compute-bound speed on
  // Zen 4) instead of F32 ones, and so do AWQ g128 / Q4_0 weights on the vdpbf16ps 4-bit kernels
  // (which otherwise split x into BF16 hi + lo); `--dtype bfloat16` (whose loader also converts
  // F32 / F16 weights to BF16: ModelLoadOptions). F32/F16/Q8_0 weights are unaffected.
  bool bf16_activations = false;
  // GGUF Q4_0/Q5_0/Q4_1/Q5_1/Q8_0/Q4_K/Q5_K/Q6_K and AWQ g128 weights meet activations quantized
  // to int8 per block of 32 (vpdpbusd on AVX512-VNNI CPUs, vpmaddubsw on AVX2 ones, sdot on ARM64
  // DotProd ones), as llama.cpp computes GGUF files and vLLM's CPU backend AWQ: ~2x fewer vector
  // ops per weight than the BF16/F32-activation kernels, logits move by ~1e-2;
  // `--int8-activations`. Other formats (and CPUs without those instructions) are unaffected.
  bool int8_activations = false;
  // Weights stay in the model file's mapped pages (page cache shared between processes, no copy
  // at startup) instead of being copied into huge-page memory; `--mmap-weights`. Decode streams
  // the weights, and 4 KiB pages cost ~25 % of its speed in TLB misses.
  bool mmap_weights = false;
  // Weights larger than this stay in the mapped file (with a warning) instead of being copied:
  // a model that only fits as page cache still loads. 0: 90 % of AvailableMemoryBytes() at load.
  size_t weight_copy_limit_bytes = 0;
  // Where a tensor-parallel rank runs (base/cpu_topology.h PlanRankPlacement): the pool's
  // workers are bound to these CPUs (thread t to cpus[t], thread 0 by BindCallerThread); empty:
  // unbound. With num_threads 0 the pool has one thread per CPU listed.
  std::vector<int> cpus = {};
  // The NUMA node whose memory the large buffers (copied weights, KV cache, activations) should
  // take (mbind MPOL_PREFERRED before their first touch); -1: wherever the first touch lands.
  int numa_node = -1;
};
std::unique_ptr<Backend> CreateCpuBackend(const CpuBackendOptions& options = {});

}  // namespace xinfer
