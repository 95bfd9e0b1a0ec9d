#include <fmt/core.h>

#include "model/layers/decoder.h"

namespace xinfer {
namespace {

Status CheckFloatDType(const std::string& name, const Tensor& t) {
  if (t.dtype() == DType::kF32 || t.dtype() == DType::kBF16 || t.dtype() == DType::kF16)
    return Status::Ok();
  return Unimplemented("tensor '{}' has dtype {}; only F32, BF16 and F16 weights are supported",
                       name, DTypeName(t.dtype()));
}

Status Load(const WeightStore& store, const std::string& name, const Shape& shape, Tensor* out) {
  XI_ASSIGN_OR_RETURN(*out, store.GetWithShape(name, shape));
  return CheckFloatDType(name, *out);
}

}  // namespace

StatusOr<DecoderWeights> LoadDecoderWeights(const WeightStore& store, const ModelConfig& c,
                                            const DecoderSpec& spec) {
  const int64_t h = c.hidden_size, d = c.head_dim, i_size = c.intermediate_size;
  const int64_t q_out = static_cast<int64_t>(c.num_attention_heads) * d;
  const int64_t kv_out = static_cast<int64_t>(c.num_key_value_heads) * d;
  DecoderWeights w;
  // Tied checkpoints saved by transformers keep only one copy of the shared tensor, under either
  // name (the other is recorded in the safetensors metadata).
  const char* embed_name = "model.embed_tokens.weight";
  if (c.tie_word_embeddings && !store.Has(embed_name) && store.Has("lm_head.weight"))
    embed_name = "lm_head.weight";
  XI_RETURN_IF_ERROR(Load(store, embed_name, {c.vocab_size, h}, &w.embed_tokens));
  XI_RETURN_IF_ERROR(Load(store, "model.norm.weight", {h}, &w.final_norm));
  if (c.tie_word_embeddings) {
    w.lm_head = w.embed_tokens;
  } else {
    XI_RETURN_IF_ERROR(Load(store, "lm_head.weight", {c.vocab_size, h}, &w.lm_head));
  }
  w.layers.resize(c.num_hidden_layers);
  for (int l = 0; l < c.num_hidden_layers; ++l) {
    const std::string p = fmt::format("model.layers.{}.", l);
    DecoderLayerWeights& lw = w.layers[l];
    XI_RETURN_IF_ERROR(Load(store, p + "input_layernorm.weight", {h}, &lw.input_norm));
    XI_RETURN_IF_ERROR(
        Load(store, p + "post_attention_layernorm.weight", {h}, &lw.post_attention_norm));
    XI_RETURN_IF_ERROR(Load(store, p + "self_attn.q_proj.weight", {q_out, h}, &lw.q_proj));
    XI_RETURN_IF_ERROR(Load(store, p + "self_attn.k_proj.weight", {kv_out, h}, &lw.k_proj));
    XI_RETURN_IF_ERROR(Load(store, p + "self_attn.v_proj.weight", {kv_out, h}, &lw.v_proj));
    XI_RETURN_IF_ERROR(Load(store, p + "self_attn.o_proj.weight", {h, q_out}, &lw.o_proj));
    if (spec.qkv_bias) {
      XI_RETURN_IF_ERROR(Load(store, p + "self_attn.q_proj.bias", {q_out}, &lw.q_bias));
      XI_RETURN_IF_ERROR(Load(store, p + "self_attn.k_proj.bias", {kv_out}, &lw.k_bias));
      XI_RETURN_IF_ERROR(Load(store, p + "self_attn.v_proj.bias", {kv_out}, &lw.v_bias));
    }
    if (spec.o_bias)
      XI_RETURN_IF_ERROR(Load(store, p + "self_attn.o_proj.bias", {h}, &lw.o_bias));
    if (spec.qk_norm) {
      XI_RETURN_IF_ERROR(Load(store, p + "self_attn.q_norm.weight", {d}, &lw.q_norm));
      XI_RETURN_IF_ERROR(Load(store, p + "self_attn.k_norm.weight", {d}, &lw.k_norm));
    }
    XI_RETURN_IF_ERROR(Load(store, p + "mlp.gate_proj.weight", {i_size, h}, &lw.gate_proj));
    XI_RETURN_IF_ERROR(Load(store, p + "mlp.up_proj.weight", {i_size, h}, &lw.up_proj));
    XI_RETURN_IF_ERROR(Load(store, p + "mlp.down_proj.weight", {h, i_size}, &lw.down_proj));
  }
  return w;
}

}  // namespace xinfer
