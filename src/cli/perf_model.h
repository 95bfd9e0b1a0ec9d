// What a model costs per token (bytes of weights read, FLOPs) and the rooflines that follow from
// measured machine limits; shared by `xinfer doctor` and `xinfer bench offline`.
#pragma once

#include <cstdint>
#include <string>

#include "backend/cpu/cpu_limits.h"
#include "base/status.h"
#include "tensor/dtype.h"

namespace xinfer {

struct ModelCost {
  size_t weight_bytes = 0;  // all tensors as held (stored, converted to BF16, AWQ repacked)
  // Weights one decode step of one sequence reads: projections (of a mixture-of-experts model,
  // the routed share of the experts'), lm_head, norms.
  size_t decode_read_bytes = 0;
  double linear_flops = 0;  // 2 x projection parameters (per token, every row; routed experts)
  // A mixture-of-experts model's experts, all of them, and the share one token is routed to
  // (num_experts_per_tok / num_experts; 0 for a dense model). A batch reads more of them.
  size_t expert_bytes = 0;
  double routed_share = 0;
  double lm_head_flops = 0;       // 2 x vocab x hidden (per sampled row)
  double attn_flops_per_ctx = 0;  // 4 x layers x heads x head_dim (per token per context token)
  size_t kv_bytes_per_token = 0;  // K and V of all layers in the KV cache's dtype
  std::string dtype;              // dtype of the projection weights ("BF16", "F32", ...)
  // Of weight_bytes, what tensor parallelism does not split: the norms, held whole by every rank,
  // and the key / value projections (with their biases and AWQ scales), held by every rank
  // whose queries use them once the ranks outnumber the key-value heads (decoder_shard.h).
  size_t norm_bytes = 0;
  size_t kv_proj_bytes = 0;
  int64_t kv_heads = 0;
};

// The weight bytes `tensor_parallel_size` ranks hold together (what the engine's weight_bytes()
// reports, and what the KV cache is sized after): the model's, plus a copy of the norms per rank
// beyond the first, plus the key / value projections' copies when the ranks outnumber the
// key-value heads.
size_t TensorParallelWeightBytes(const ModelCost& cost, int tensor_parallel_size);

// `model_path`: a Hugging Face folder (dense or AWQ safetensors) or a .gguf file; `kv_dtype`: the
// KV cache's element type (EngineConfig::KvCacheDType); `bf16_weights`: the loader converts the
// dense F16 / F32 Linear weights and the embedding table to BF16 (ModelLoadOptions, `--dtype
// bfloat16`), so they count 2 bytes per element.
StatusOr<ModelCost> ComputeModelCost(const std::string& model_path, DType kv_dtype = DType::kF32,
                                     bool bf16_weights = false);

struct Roofline {
  double decode_tok_s_per_seq = 0;  // one sequence: bandwidth / bytes per step
  double prefill_tok_s = 0;         // compute peak / FLOPs per prompt token
  double peak_gflop_s = 0;          // the peak the kernels in use can reach
  const char* peak_name = "";
};
// The compute peak the projections run at: FP32 FMAs, vdpbf16ps (BF16 / 4-bit weights with
// `--dtype bfloat16` on a CPU with it) or vpdpbusd (quantized weights with int8 activations on
// AVX512-VNNI); see ComputePeakFor.
enum class ComputePeak { kF32Fma, kBf16Dot, kInt8Dot };
// Rooflines for that peak. `context`: average context length attended during decode / prefill.
Roofline ComputeRoofline(const ModelCost& cost, const MachineLimits& limits, double context,
                         ComputePeak peak);
// Aggregate decode roofline for `batch` sequences: min(memory bound, compute bound).
double BatchedDecodeRoofline(const ModelCost& cost, const MachineLimits& limits, int batch,
                             double context, ComputePeak peak);
// The peak a model of this cost runs its projections at in this process.
ComputePeak ComputePeakFor(const ModelCost& cost, bool bf16_activations, bool int8_activations);

}  // namespace xinfer
