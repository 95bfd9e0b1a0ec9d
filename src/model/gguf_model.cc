#include "model/gguf_model.h"

#include <fmt/core.h>

#include <cstring>

#include "model/arch/arch.h"
#include "model/awq.h"
#include "model/gguf_config.h"

namespace xinfer {
namespace {

Status CheckShape(const std::string& name, int64_t rows, int64_t cols, const Weight& w) {
  if (w.rows() != rows || w.cols() != cols)
    return InvalidArgument("tensor '{}' is [{}, {}], expected [{}, {}]", name, w.rows(), w.cols(),
                           rows, cols);
  return Status::Ok();
}

Status LoadMatrix(const GgufFile& f, const std::string& name, int64_t rows, int64_t cols,
                  Weight* out) {
  XI_ASSIGN_OR_RETURN(*out, f.GetWeight(name));
  if (!out->quantized() && out->dense().rank() != 2)
    return InvalidArgument("tensor '{}' has shape {}, expected [{}, {}]", name,
                           ShapeToString(out->dense().shape()), rows, cols);
  return CheckShape(name, rows, cols, *out);
}

Status LoadVector(const GgufFile& f, const std::string& name, int64_t n, Tensor* out) {
  XI_ASSIGN_OR_RETURN(*out, f.GetDense(name));
  if (out->rank() != 1 || out->dim(0) != n)
    return InvalidArgument("tensor '{}' has shape {}, expected [{}]", name,
                           ShapeToString(out->shape()), n);
  return Status::Ok();
}

// One of llama.cpp's stacked expert tensors, ne = {cols, rows, n_experts} (each expert's [rows,
// cols] matrix after the previous one's), cut into per-expert Weights that share its mapping.
Status LoadExpertMatrices(const GgufFile& f, const std::string& name, int64_t experts, int64_t rows,
                          int64_t cols, std::vector<Weight*> out) {
  const GgufTensorInfo* info = f.FindTensor(name);
  if (info == nullptr) return NotFound("tensor '{}' not found", name);
  if (info->ne != std::vector<int64_t>{cols, rows, experts})
    return InvalidArgument("tensor '{}' has dimensions {}, expected [{}, {}, {}]", name,
                           ShapeToString(info->ne), cols, rows, experts);
  XI_ASSIGN_OR_RETURN(Weight stacked, f.GetWeight(name));
  for (int64_t e = 0; e < experts; ++e) {
    if (!stacked.quantized()) {
      *out[e] = Weight(stacked.dense().Slice0(e, e + 1).Reshaped({rows, cols}));
      continue;
    }
    QuantTensor q = stacked.quant();
    q.rows = rows;
    q.data = q.data.Slice0(e * rows, (e + 1) * rows);
    *out[e] = Weight(std::move(q));
  }
  return Status::Ok();
}

// A qwen3moe / qwen2moe layer's router (ffn_gate_inp, [experts, hidden]) and stacked experts, and
// a qwen2moe layer's shared expert (ffn_*_shexp) and its gate (ffn_gate_inp_shexp, [hidden]).
Status LoadGgufExperts(const GgufFile& f, const std::string& p, const ModelConfig& c,
                       DecoderLayerWeights& lw) {
  const int64_t h = c.hidden_size, e_size = c.moe_intermediate_size, n = c.num_experts;
  XI_RETURN_IF_ERROR(LoadMatrix(f, p + "ffn_gate_inp.weight", n, h, &lw.router));
  lw.experts.resize(static_cast<size_t>(n));
  auto each = [&](Weight ExpertWeights::*proj) {
    std::vector<Weight*> out;
    for (ExpertWeights& e : lw.experts) out.push_back(&(e.*proj));
    return out;
  };
  XI_RETURN_IF_ERROR(LoadExpertMatrices(f, p + "ffn_gate_exps.weight", n, e_size, h,
                                        each(&ExpertWeights::gate_proj)));
  XI_RETURN_IF_ERROR(
      LoadExpertMatrices(f, p + "ffn_up_exps.weight", n, e_size, h, each(&ExpertWeights::up_proj)));
  XI_RETURN_IF_ERROR(LoadExpertMatrices(f, p + "ffn_down_exps.weight", n, h, e_size,
                                        each(&ExpertWeights::down_proj)));
  const int64_t s_size = c.shared_expert_intermediate_size;
  if (s_size <= 0) return Status::Ok();
  ExpertWeights& se = lw.shared_expert;
  XI_RETURN_IF_ERROR(LoadMatrix(f, p + "ffn_gate_shexp.weight", s_size, h, &se.gate_proj));
  XI_RETURN_IF_ERROR(LoadMatrix(f, p + "ffn_up_shexp.weight", s_size, h, &se.up_proj));
  XI_RETURN_IF_ERROR(LoadMatrix(f, p + "ffn_down_shexp.weight", h, s_size, &se.down_proj));
  // llama.cpp's loader takes {hidden} and, as ggml pads dimensions with 1s, {hidden, 1}.
  XI_ASSIGN_OR_RETURN(Tensor gate, f.GetDense(p + "ffn_gate_inp_shexp.weight"));
  if (gate.numel() != h || gate.shape().back() != h)
    return InvalidArgument("tensor '{}' has shape {}, expected [{}]",
                           p + "ffn_gate_inp_shexp.weight", ShapeToString(gate.shape()), h);
  lw.shared_expert_gate = Weight(gate.Reshaped({1, h}));
  return Status::Ok();
}

}  // namespace

StatusOr<Weight> UnpermuteLlamaRows(const Weight& w, int n_heads) {
  const int64_t rows = w.rows();
  if (n_heads <= 0 || rows % n_heads != 0 || (rows / n_heads) % 2 != 0)
    return InvalidArgument("cannot un-permute {} rows into {} heads", rows, n_heads);
  const int64_t d = rows / n_heads, half = d / 2;
  const uint8_t* src;
  size_t row_bytes;
  Tensor dst;
  if (w.quantized()) {
    src = w.quant().row(0);
    row_bytes = w.quant().row_bytes();
    dst = NewHostTensor(DType::kU8, {rows, static_cast<int64_t>(row_bytes)});
  } else {
    src = static_cast<const uint8_t*>(w.dense().raw());
    row_bytes = static_cast<size_t>(w.cols()) * DTypeSize(w.dense().dtype());
    dst = NewHostTensor(w.dense().dtype(), w.dense().shape());
  }
  uint8_t* out = static_cast<uint8_t*>(dst.raw());
  for (int64_t h = 0; h < n_heads; ++h)
    for (int64_t j = 0; j < 2; ++j)
      for (int64_t i = 0; i < half; ++i)
        std::memcpy(out + (h * d + j * half + i) * row_bytes, src + (h * d + 2 * i + j) * row_bytes,
                    row_bytes);
  if (!w.quantized()) return Weight(std::move(dst));
  QuantTensor q = w.quant();
  q.data = std::move(dst);
  return Weight(std::move(q));
}

StatusOr<DecoderWeights> LoadGgufDecoderWeights(const GgufFile& f, const ModelConfig& c,
                                                const DecoderSpec& spec) {
  const int64_t h = c.hidden_size, d = c.head_dim, i_size = c.intermediate_size;
  const int64_t q_out = static_cast<int64_t>(c.num_attention_heads) * d;
  const int64_t kv_out = static_cast<int64_t>(c.num_key_value_heads) * d;
  const bool permuted = c.model_type == "llama";
  DecoderWeights w;
  XI_RETURN_IF_ERROR(LoadMatrix(f, "token_embd.weight", c.vocab_size, h, &w.embed_tokens));
  XI_RETURN_IF_ERROR(LoadVector(f, "output_norm.weight", h, &w.final_norm));
  if (c.tie_word_embeddings) {
    w.lm_head = w.embed_tokens;
  } else {
    XI_RETURN_IF_ERROR(LoadMatrix(f, "output.weight", c.vocab_size, h, &w.lm_head));
  }
  // Grown one layer at a time, not resized up front: a config that claims 2^30 layers then fails
  // on the first missing tensor instead of aborting on the allocation.
  for (int l = 0; l < c.num_hidden_layers; ++l) {
    const std::string p = fmt::format("blk.{}.", l);
    DecoderLayerWeights& lw = w.layers.emplace_back();
    XI_RETURN_IF_ERROR(LoadVector(f, p + "attn_norm.weight", h, &lw.input_norm));
    XI_RETURN_IF_ERROR(LoadVector(f, p + "ffn_norm.weight", h, &lw.post_attention_norm));
    XI_RETURN_IF_ERROR(LoadMatrix(f, p + "attn_q.weight", q_out, h, &lw.q_proj));
    XI_RETURN_IF_ERROR(LoadMatrix(f, p + "attn_k.weight", kv_out, h, &lw.k_proj));
    XI_RETURN_IF_ERROR(LoadMatrix(f, p + "attn_v.weight", kv_out, h, &lw.v_proj));
    XI_RETURN_IF_ERROR(LoadMatrix(f, p + "attn_output.weight", h, q_out, &lw.o_proj));
    if (permuted) {
      XI_ASSIGN_OR_RETURN(lw.q_proj, UnpermuteLlamaRows(lw.q_proj, c.num_attention_heads));
      XI_ASSIGN_OR_RETURN(lw.k_proj, UnpermuteLlamaRows(lw.k_proj, c.num_key_value_heads));
    }
    if (spec.qkv_bias) {
      XI_RETURN_IF_ERROR(LoadVector(f, p + "attn_q.bias", q_out, &lw.q_bias));
      XI_RETURN_IF_ERROR(LoadVector(f, p + "attn_k.bias", kv_out, &lw.k_bias));
      XI_RETURN_IF_ERROR(LoadVector(f, p + "attn_v.bias", kv_out, &lw.v_bias));
      if (permuted) {
        // The converter permutes llama's biases like the rows they belong to.
        XI_ASSIGN_OR_RETURN(Weight qb, UnpermuteLlamaRows(Weight(lw.q_bias.Reshaped({q_out, 1})),
                                                          c.num_attention_heads));
        XI_ASSIGN_OR_RETURN(Weight kb, UnpermuteLlamaRows(Weight(lw.k_bias.Reshaped({kv_out, 1})),
                                                          c.num_key_value_heads));
        lw.q_bias = qb.dense().Reshaped({q_out});
        lw.k_bias = kb.dense().Reshaped({kv_out});
      }
    }
    if (spec.o_bias) XI_RETURN_IF_ERROR(LoadVector(f, p + "attn_output.bias", h, &lw.o_bias));
    if (spec.qk_norm) {
      XI_RETURN_IF_ERROR(LoadVector(f, p + "attn_q_norm.weight", d, &lw.q_norm));
      XI_RETURN_IF_ERROR(LoadVector(f, p + "attn_k_norm.weight", d, &lw.k_norm));
    }
    if (c.IsSparseLayer(l)) {
      XI_RETURN_IF_ERROR(LoadGgufExperts(f, p, c, lw));
      continue;
    }
    XI_RETURN_IF_ERROR(LoadMatrix(f, p + "ffn_gate.weight", i_size, h, &lw.gate_proj));
    XI_RETURN_IF_ERROR(LoadMatrix(f, p + "ffn_up.weight", i_size, h, &lw.up_proj));
    XI_RETURN_IF_ERROR(LoadMatrix(f, p + "ffn_down.weight", h, i_size, &lw.down_proj));
  }
  return w;
}

StatusOr<DecoderModelParts> LoadGgufDecoderParts(const std::string& path) {
  XI_ASSIGN_OR_RETURN(auto file, GgufFile::Open(path));
  auto config = GgufModelConfig(*file);
  if (!config.ok()) return config.status().WithContext(path);
  StatusOr<DecoderSpec> spec = Status(StatusCode::kInternal, "unreachable");
  if (config->model_type == "llama") spec = LlamaSpec(*config);
  if (config->model_type == "qwen2" || config->model_type == "qwen2moe") spec = Qwen2Spec(*config);
  if (config->model_type == "qwen3" || config->model_type == "qwen3moe") spec = Qwen3Spec(*config);
  if (!spec.ok()) return spec.status().WithContext(path);
  auto weights = LoadGgufDecoderWeights(*file, *config, *spec);
  if (!weights.ok()) return weights.status().WithContext(path);
  // The weights' tensors hold the mapping; the GgufFile object itself can go.
  return DecoderModelParts{std::move(config).value(), *spec, std::move(weights).value()};
}

}  // namespace xinfer
