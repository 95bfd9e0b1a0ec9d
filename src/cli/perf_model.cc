#include "cli/perf_model.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "backend/cpu/cpu_kernels.h"
#include "formats/gguf.h"
#include "formats/safetensors.h"
#include "tensor/dtype.h"

namespace xinfer {
namespace {

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Bytes a tensor of `elements` stored as `bytes` is held in: 2 per element for a dense matrix the
// loader converts from F16 / F32 to BF16, 4 for a vector (norm weights and biases: F32 from load,
// WidenVectorsToF32), else as stored.
size_t HeldBytes(size_t bytes, int64_t elements, bool converted, bool vector) {
  if (vector) return static_cast<size_t>(elements) * 4;
  return converted ? static_cast<size_t>(elements) * 2 : bytes;
}

double PeakFor(const MachineLimits& m, ComputePeak peak, const char** name) {
  if (peak == ComputePeak::kInt8Dot && m.int8_gop_s > 0) {
    *name = "int8-dot";
    return m.int8_gop_s;
  }
  if (peak == ComputePeak::kBf16Dot && m.bf16_gflop_s > 0) {
    *name = "bf16-dot";
    return m.bf16_gflop_s;
  }
  *name = "f32-fma";
  return m.f32_gflop_s;
}

// A GGUF file: projections are the 2-D blk.* weights and a MoE file's stacked experts (3-D
// ffn_*_exps, of which a token reads expert_used_count / expert_count); token_embd doubles as the
// lm_head when there is no output.weight.
StatusOr<ModelCost> GgufModelCost(const std::string& path, DType kv_dtype, bool bf16_weights) {
  XI_ASSIGN_OR_RETURN(auto gguf, GgufFile::Open(path));
  XI_ASSIGN_OR_RETURN(std::string arch, gguf->GetString("general.architecture"));
  XI_ASSIGN_OR_RETURN(int64_t hidden, gguf->GetInt(arch + ".embedding_length"));
  XI_ASSIGN_OR_RETURN(int64_t layers, gguf->GetInt(arch + ".block_count"));
  XI_ASSIGN_OR_RETURN(int64_t heads, gguf->GetInt(arch + ".attention.head_count"));
  auto kv = gguf->GetInt(arch + ".attention.head_count_kv");
  const int64_t kv_heads = kv.ok() ? *kv : heads;
  auto key_length = gguf->GetInt(arch + ".attention.key_length");
  const int64_t head_dim = key_length.ok() ? *key_length : (heads > 0 ? hidden / heads : 0);
  ModelCost cost;
  auto experts = gguf->GetInt(arch + ".expert_count");
  auto experts_per_tok = gguf->GetInt(arch + ".expert_used_count");
  if (experts.ok() && experts_per_tok.ok() && *experts > 0)
    cost.routed_share = static_cast<double>(*experts_per_tok) / static_cast<double>(*experts);
  bool has_output = false;
  size_t embed_bytes = 0;
  int64_t vocab = 0;
  for (const GgufTensorInfo& t : gguf->tensors()) {
    const bool block_weight = t.name.rfind("blk.", 0) == 0 && EndsWith(t.name, ".weight");
    const bool stacked_experts = block_weight && t.shape.size() == 3 && cost.routed_share > 0;
    const bool matrix = block_weight && (t.shape.size() == 2 || stacked_experts);
    const double active = stacked_experts ? cost.routed_share : 1.0;
    const bool converted = bf16_weights && (t.type == ggml::kF16 || t.type == ggml::kF32) &&
                           (matrix || t.name == "output.weight" || t.name == "token_embd.weight");
    const size_t bytes = HeldBytes(t.size, t.num_elements, converted, t.shape.size() == 1);
    cost.weight_bytes += bytes;
    if (stacked_experts) cost.expert_bytes += bytes;
    if (EndsWith(t.name, "_norm.weight")) cost.norm_bytes += bytes;
    if (t.name.find(".attn_k.") != std::string::npos ||
        t.name.find(".attn_v.") != std::string::npos)
      cost.kv_proj_bytes += bytes;
    if (matrix) {
      cost.linear_flops += active * 2.0 * static_cast<double>(t.num_elements);
      cost.decode_read_bytes += static_cast<size_t>(active * static_cast<double>(bytes));
      // The router stays F32 in any file; the projections say what the file is.
      if (!EndsWith(t.name, ".ffn_gate_inp.weight"))
        cost.dtype = converted ? "BF16" : GgmlTypeName(t.type);
    } else if (t.name == "output.weight") {
      has_output = true;
      cost.decode_read_bytes += bytes;
    } else if (t.name == "token_embd.weight") {
      embed_bytes = bytes;
      vocab = t.shape.empty() ? 0 : t.shape[0];
    } else {
      cost.decode_read_bytes += bytes;
    }
  }
  if (!has_output) cost.decode_read_bytes += embed_bytes;
  cost.lm_head_flops = 2.0 * static_cast<double>(vocab) * static_cast<double>(hidden);
  cost.attn_flops_per_ctx = 4.0 * layers * heads * head_dim;
  cost.kv_bytes_per_token =
      static_cast<size_t>(layers) * 2 * kv_heads * head_dim * DTypeSize(kv_dtype);
  cost.kv_heads = kv_heads;
  return cost;
}

}  // namespace

size_t TensorParallelWeightBytes(const ModelCost& cost, int tensor_parallel_size) {
  const size_t ranks = static_cast<size_t>(std::max(tensor_parallel_size, 1));
  const size_t kv_copies = cost.kv_heads > 0 && static_cast<int64_t>(ranks) > cost.kv_heads
                               ? ranks / static_cast<size_t>(cost.kv_heads)
                               : 1;
  return cost.weight_bytes + (ranks - 1) * cost.norm_bytes + (kv_copies - 1) * cost.kv_proj_bytes;
}

StatusOr<ModelCost> ComputeModelCost(const std::string& model_path, DType kv_dtype,
                                     bool bf16_weights) {
  if (EndsWith(model_path, ".gguf")) return GgufModelCost(model_path, kv_dtype, bf16_weights);
  const std::string& model_dir = model_path;
  std::ifstream in(model_dir + "/config.json");
  if (!in) return NotFound("no config.json in {}", model_dir);
  nlohmann::json c = nlohmann::json::parse(in, nullptr, false);
  if (c.is_discarded()) return InvalidArgument("config.json is not valid JSON");
  XI_ASSIGN_OR_RETURN(auto store, WeightStore::OpenDir(model_dir));
  ModelCost cost;
  const int64_t hidden = c.value("hidden_size", 0), vocab = c.value("vocab_size", 0);
  const int64_t layers = c.value("num_hidden_layers", 0), heads = c.value("num_attention_heads", 0);
  const int64_t kv_heads = c.value("num_key_value_heads", heads);
  const int64_t head_dim = c.value("head_dim", heads > 0 ? hidden / heads : 0);
  // A mixture-of-experts model reads (and multiplies by) the experts a token is routed to: on
  // average num_experts_per_tok of num_experts of each sparse layer's.
  const int64_t experts = c.value("num_experts", 0),
                experts_per_tok = c.value("num_experts_per_tok", 0);
  const double routed = experts > 0 ? static_cast<double>(experts_per_tok) / experts : 1.0;
  cost.routed_share = experts > 0 ? routed : 0;
  bool has_lm_head = false;
  size_t embed_bytes = 0;
  for (const std::string& name : store->Names()) {
    const double active = name.find(".mlp.experts.") != std::string::npos ? routed : 1.0;
    const TensorInfo* info = store->Find(name);
    const bool dense_matrix = EndsWith(name, "_proj.weight") || name == "lm_head.weight" ||
                              name == "model.embed_tokens.weight";
    const bool converted =
        bf16_weights && dense_matrix && (info->dtype == DType::kF16 || info->dtype == DType::kF32);
    const size_t bytes =
        HeldBytes(info->size, NumElements(info->shape), converted, info->shape.size() == 1);
    if (!EndsWith(name, "_proj.scales") && !EndsWith(name, "_proj.qzeros"))
      cost.weight_bytes += bytes;
    const bool kv_proj =
        name.find(".k_proj.") != std::string::npos || name.find(".v_proj.") != std::string::npos;
    if (EndsWith(name, "norm.weight")) cost.norm_bytes += bytes;
    if (kv_proj && !EndsWith(name, "_proj.scales") && !EndsWith(name, "_proj.qzeros"))
      cost.kv_proj_bytes += bytes;
    if (active < 1 && (EndsWith(name, "_proj.weight") || EndsWith(name, "_proj.qweight")))
      cost.expert_bytes += EndsWith(name, "_proj.weight") ? bytes : info->size;
    if (EndsWith(name, "_proj.weight")) {
      cost.linear_flops += active * 2.0 * static_cast<double>(NumElements(info->shape));
      cost.decode_read_bytes += static_cast<size_t>(active * static_cast<double>(bytes));
      cost.dtype = DTypeName(converted ? DType::kBF16 : info->dtype);
    } else if (EndsWith(name, "_proj.qweight") && info->shape.size() == 2) {
      // AWQ: int32 [in, out / 8]. The loader repacks to one byte per two weights plus an F32
      // scale and an F32 zero per group (model/awq.cc): that is what decode reads.
      const double params = 8.0 * static_cast<double>(NumElements(info->shape));
      cost.linear_flops += active * 2.0 * params;
      cost.decode_read_bytes += static_cast<size_t>(active * static_cast<double>(info->size));
      const std::string base = name.substr(0, name.size() - std::string("qweight").size());
      if (const TensorInfo* scales = store->Find(base + "scales")) {
        const size_t scale_and_zero_bytes = static_cast<size_t>(NumElements(scales->shape)) * 8;
        cost.decode_read_bytes +=
            static_cast<size_t>(active * static_cast<double>(scale_and_zero_bytes));
        cost.weight_bytes += scale_and_zero_bytes;
        if (kv_proj) cost.kv_proj_bytes += scale_and_zero_bytes;
      }
      cost.dtype = "AWQ4";
    } else if (EndsWith(name, "_proj.scales") || EndsWith(name, "_proj.qzeros")) {
      // counted with the qweight, as the loader holds them
    } else if (name == "lm_head.weight") {
      has_lm_head = true;
      cost.decode_read_bytes += bytes;
    } else if (name == "model.embed_tokens.weight") {
      embed_bytes = bytes;
    } else {
      cost.decode_read_bytes += bytes;  // norms and biases
    }
  }
  if (!has_lm_head) cost.decode_read_bytes += embed_bytes;  // tied: the table is the lm_head
  cost.lm_head_flops = 2.0 * static_cast<double>(vocab) * static_cast<double>(hidden);
  cost.attn_flops_per_ctx = 4.0 * layers * heads * head_dim;
  cost.kv_bytes_per_token =
      static_cast<size_t>(layers) * 2 * kv_heads * head_dim * DTypeSize(kv_dtype);
  cost.kv_heads = kv_heads;
  return cost;
}

Roofline ComputeRoofline(const ModelCost& cost, const MachineLimits& m, double context,
                         ComputePeak peak) {
  Roofline r;
  r.peak_gflop_s = PeakFor(m, peak, &r.peak_name);
  const double bytes = cost.decode_read_bytes + context * cost.kv_bytes_per_token;
  r.decode_tok_s_per_seq = m.read_gb_s * 1e9 / bytes;
  const double flops = cost.linear_flops + cost.attn_flops_per_ctx * context;
  r.prefill_tok_s = flops > 0 ? r.peak_gflop_s * 1e9 / flops : 0;
  return r;
}

double BatchedDecodeRoofline(const ModelCost& cost, const MachineLimits& m, int batch,
                             double context, ComputePeak compute) {
  const char* name;
  const double peak = PeakFor(m, compute, &name);
  // A batch's tokens route independently: each expert is read when any of them picks it.
  const double expert_reads =
      cost.expert_bytes * (1 - std::pow(1 - cost.routed_share, batch) - cost.routed_share);
  const double bytes =
      cost.decode_read_bytes + expert_reads + batch * context * cost.kv_bytes_per_token;
  const double memory_bound = batch * m.read_gb_s * 1e9 / bytes;
  const double flops = cost.linear_flops + cost.lm_head_flops + cost.attn_flops_per_ctx * context;
  const double compute_bound = peak * 1e9 / flops;
  return std::min(memory_bound, compute_bound);
}

ComputePeak ComputePeakFor(const ModelCost& cost, bool bf16_activations, bool int8_activations) {
  const cpu::CpuFeatures& f = cpu::DetectCpuFeatures();
  // The formats the int8 kernels take (cpu_kernels_int8_avx512.cc); `dtype` is the file's main
  // projection type.
  static constexpr const char* kInt8Formats[] = {"Q4_0", "Q5_0", "Q4_1", "Q5_1", "Q8_0",
                                                 "Q4_K", "Q5_K", "Q6_K", "AWQ4"};
  if (int8_activations && f.avx512 && f.avx512_vnni &&
      std::find(std::begin(kInt8Formats), std::end(kInt8Formats), cost.dtype) !=
          std::end(kInt8Formats))
    return ComputePeak::kInt8Dot;
  // The 4-bit vdpbf16ps kernels also run at the BF16 peak once x is not split in two halves.
  const bool dot_weights = cost.dtype == "BF16" || cost.dtype == "AWQ4" || cost.dtype == "Q4_0";
  if (dot_weights && cpu::SelectBf16Path(f, bf16_activations) == cpu::Bf16Path::kBf16Dot)
    return ComputePeak::kBf16Dot;
  return ComputePeak::kF32Fma;
}

}  // namespace xinfer
