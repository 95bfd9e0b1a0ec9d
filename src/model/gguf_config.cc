#include "model/gguf_config.h"

#include <fmt/core.h>

#include <cmath>

namespace xinfer {
namespace {

struct ArchName {
  const char* gguf;
  const char* hf;
};
constexpr ArchName kArchitectures[] = {{"llama", "LlamaForCausalLM"},
                                       {"qwen2", "Qwen2ForCausalLM"},
                                       {"qwen2moe", "Qwen2MoeForCausalLM"},
                                       {"qwen3", "Qwen3ForCausalLM"},
                                       {"qwen3moe", "Qwen3MoeForCausalLM"}};

StatusOr<int> PositiveInt(const GgufFile& f, const std::string& key) {
  XI_ASSIGN_OR_RETURN(int64_t v, f.GetInt(key));
  if (v <= 0 || v > (1 << 30)) return InvalidArgument("metadata '{}' = {} is out of range", key, v);
  return static_cast<int>(v);
}

// llama.cpp's rope.scaling.* keys: `factor` for linear and yarn, yarn's trained context.
Status ReadRopeScaling(const GgufFile& f, const std::string& p, const std::string& type,
                       ModelConfig& c) {
  if (type != "linear" && type != "yarn") return Status::Ok();
  RopeScaling& s = c.rope_scaling;
  s.type = type;
  XI_ASSIGN_OR_RETURN(s.factor, f.GetDouble(p + "rope.scaling.factor"));
  if (!(s.factor >= 1) || !std::isfinite(s.factor))
    return InvalidArgument("metadata '{}' = {} must be a number >= 1", p + "rope.scaling.factor",
                           s.factor);
  if (type == "yarn" && f.Has(p + "rope.scaling.original_context_length")) {
    XI_ASSIGN_OR_RETURN(s.original_max_position_embeddings,
                        PositiveInt(f, p + "rope.scaling.original_context_length"));
  }
  return Status::Ok();
}

// qwen3moe's and qwen2moe's expert keys, as llama.cpp's loaders read them: every layer sparse,
// softmax routing, expert_feed_forward_length defaulting to feed_forward_length /
// expert_used_count. The graphs hard-code what the configs of each family set: qwen3moe
// renormalizes the picked experts' weights, qwen2moe does not and adds one shared expert
// (expert_shared_feed_forward_length wide, feed_forward_length by default) under a sigmoid gate.
Status ReadExperts(const GgufFile& f, const std::string& p, ModelConfig& c) {
  XI_ASSIGN_OR_RETURN(c.num_experts, PositiveInt(f, p + "expert_count"));
  XI_ASSIGN_OR_RETURN(c.num_experts_per_tok, PositiveInt(f, p + "expert_used_count"));
  if (c.num_experts_per_tok > c.num_experts)
    return InvalidArgument("metadata '{}' = {} exceeds '{}' = {}", p + "expert_used_count",
                           c.num_experts_per_tok, p + "expert_count", c.num_experts);
  if (f.Has(p + "expert_feed_forward_length")) {
    XI_ASSIGN_OR_RETURN(c.moe_intermediate_size, PositiveInt(f, p + "expert_feed_forward_length"));
  } else if (c.intermediate_size > 0) {
    c.moe_intermediate_size = c.intermediate_size / c.num_experts_per_tok;
  }
  if (c.moe_intermediate_size <= 0)
    return InvalidArgument("metadata needs '{}' (or '{}')", p + "expert_feed_forward_length",
                           p + "feed_forward_length");
  const bool qwen2moe = c.model_type == "qwen2moe";
  if (auto shared = f.GetInt(p + "expert_shared_count");
      shared.ok() && *shared != (qwen2moe ? 1 : 0))
    return Unimplemented("{} = {} is not supported for {} ({} expected)", p + "expert_shared_count",
                         *shared, c.model_type, qwen2moe ? 1 : 0);
  if (auto gating = f.GetInt(p + "expert_gating_func"); gating.ok() && *gating != 1)
    return Unimplemented("expert gating function {} is not supported (softmax, 1, is)", *gating);
  if (auto scale = f.GetDouble(p + "expert_weights_scale");
      scale.ok() && *scale != 0 && *scale != 1)
    return Unimplemented("{} = {} is not supported (the experts' weights unscaled)",
                         p + "expert_weights_scale", *scale);
  c.norm_topk_prob = !qwen2moe;
  c.decoder_sparse_step = 1;
  if (qwen2moe) {
    c.shared_expert_intermediate_size = c.intermediate_size;
    if (f.Has(p + "expert_shared_feed_forward_length")) {
      XI_ASSIGN_OR_RETURN(c.shared_expert_intermediate_size,
                          PositiveInt(f, p + "expert_shared_feed_forward_length"));
    }
    if (c.shared_expert_intermediate_size <= 0)
      return InvalidArgument("metadata needs '{}' (or '{}')",
                             p + "expert_shared_feed_forward_length", p + "feed_forward_length");
  }
  // No layer keeps a dense MLP; intermediate_size only sizes scratch that no layer uses.
  if (c.intermediate_size <= 0) c.intermediate_size = c.moe_intermediate_size;
  return Status::Ok();
}

}  // namespace

StatusOr<std::string> GgufArchitectureToHf(const std::string& gguf_arch) {
  std::string supported;
  for (const auto& a : kArchitectures) {
    if (gguf_arch == a.gguf) return std::string(a.hf);
    supported += (supported.empty() ? "" : ", ") + std::string(a.gguf);
  }
  return Unimplemented("unsupported GGUF architecture '{}' (supported: {})", gguf_arch, supported);
}

StatusOr<ModelConfig> GgufModelConfig(const GgufFile& f) {
  XI_ASSIGN_OR_RETURN(std::string arch, f.GetString("general.architecture"));
  ModelConfig c;
  XI_ASSIGN_OR_RETURN(c.architecture, GgufArchitectureToHf(arch));
  c.model_type = arch;
  const std::string p = arch + ".";
  XI_ASSIGN_OR_RETURN(c.hidden_size, PositiveInt(f, p + "embedding_length"));
  const bool moe = arch == "qwen3moe" || arch == "qwen2moe";
  // llama.cpp's MoE loaders take feed_forward_length as optional; the dense ones need it.
  if (!moe || f.Has(p + "feed_forward_length")) {
    XI_ASSIGN_OR_RETURN(c.intermediate_size, PositiveInt(f, p + "feed_forward_length"));
  }
  if (moe) XI_RETURN_IF_ERROR(ReadExperts(f, p, c));
  XI_ASSIGN_OR_RETURN(c.num_hidden_layers, PositiveInt(f, p + "block_count"));
  XI_ASSIGN_OR_RETURN(c.num_attention_heads, PositiveInt(f, p + "attention.head_count"));
  c.num_key_value_heads = c.num_attention_heads;
  if (f.Has(p + "attention.head_count_kv")) {
    XI_ASSIGN_OR_RETURN(c.num_key_value_heads, PositiveInt(f, p + "attention.head_count_kv"));
  }
  if (c.num_attention_heads % c.num_key_value_heads != 0)
    return InvalidArgument("{} attention heads do not divide into {} key/value heads",
                           c.num_attention_heads, c.num_key_value_heads);
  if (f.Has(p + "attention.key_length")) {
    XI_ASSIGN_OR_RETURN(c.head_dim, PositiveInt(f, p + "attention.key_length"));
  } else {
    if (c.hidden_size % c.num_attention_heads != 0)
      return InvalidArgument("embedding_length {} is not a multiple of head_count {}",
                             c.hidden_size, c.num_attention_heads);
    c.head_dim = c.hidden_size / c.num_attention_heads;
  }
  if (f.Has(p + "attention.value_length")) {
    XI_ASSIGN_OR_RETURN(int v, PositiveInt(f, p + "attention.value_length"));
    if (v != c.head_dim)
      return Unimplemented("attention.value_length {} differs from key_length {}", v, c.head_dim);
  }
  if (f.Has(p + "rope.dimension_count")) {
    XI_ASSIGN_OR_RETURN(int rot, PositiveInt(f, p + "rope.dimension_count"));
    if (rot != c.head_dim)
      return Unimplemented("partial rotary embeddings (rope.dimension_count {} < head dim {})", rot,
                           c.head_dim);
  }
  if (const GgufValue* s = f.Find(p + "rope.scaling.type")) {
    if (s->type != GgufType::kString ||
        (s->str != "none" && !s->str.empty() && s->str != "linear" && s->str != "yarn"))
      return Unimplemented("rope scaling '{}' is not supported (linear and yarn are)",
                           s->ToString());
    XI_RETURN_IF_ERROR(ReadRopeScaling(f, p, s->str, c));
  }
  XI_ASSIGN_OR_RETURN(c.rms_norm_eps, f.GetDouble(p + "attention.layer_norm_rms_epsilon"));
  if (f.Has(p + "rope.freq_base")) {
    XI_ASSIGN_OR_RETURN(c.rope_theta, f.GetDouble(p + "rope.freq_base"));
  }
  // As config.json's: a zero, negative or NaN value loads, then every logit is NaN.
  if (!(c.rms_norm_eps > 0) || !std::isfinite(c.rms_norm_eps))
    return InvalidArgument("metadata '{}' = {} must be a positive number",
                           p + "attention.layer_norm_rms_epsilon", c.rms_norm_eps);
  if (!(c.rope_theta > 0) || !std::isfinite(c.rope_theta))
    return InvalidArgument("metadata '{}' = {} must be a positive number", p + "rope.freq_base",
                           c.rope_theta);
  if (f.Has(p + "context_length")) {
    XI_ASSIGN_OR_RETURN(c.max_position_embeddings, PositiveInt(f, p + "context_length"));
  }
  if (c.rope_scaling.type == "yarn" && c.rope_scaling.original_max_position_embeddings == 0)
    c.rope_scaling.original_max_position_embeddings = c.max_position_embeddings;
  if (c.rope_scaling.type == "yarn" && c.rope_scaling.original_max_position_embeddings == 0)
    return InvalidArgument("yarn rope scaling needs '{}' or '{}'",
                           p + "rope.scaling.original_context_length", p + "context_length");
  // Llama 3.1's frequency scaling, as llama.cpp's converter stores it: one divisor per frequency.
  if (f.FindTensor("rope_freqs.weight") != nullptr) {
    XI_ASSIGN_OR_RETURN(Tensor factors, f.GetDense("rope_freqs.weight"));
    if (factors.numel() != c.head_dim / 2 || factors.dtype() != DType::kF32)
      return InvalidArgument("rope_freqs.weight must be {} F32 values (head_dim / 2), got {} {}",
                             c.head_dim / 2, factors.numel(), DTypeName(factors.dtype()));
    for (int64_t i = 0; i < factors.numel(); ++i) {
      const float v = factors.data<float>()[i];
      if (!(v > 0) || !std::isfinite(v))
        return InvalidArgument("rope_freqs.weight[{}] = {} must be a positive number", i, v);
      c.rope_scaling.freq_factors.push_back(v);
    }
  }

  const GgufTensorInfo* embd = f.FindTensor("token_embd.weight");
  if (embd == nullptr) return NotFound("tensor 'token_embd.weight' not found");
  if (embd->ne.size() != 2 || embd->ne[0] != c.hidden_size)
    return InvalidArgument("token_embd.weight has dimensions {} (expected [{}, vocab])",
                           ShapeToString(embd->ne), c.hidden_size);
  c.vocab_size = static_cast<int>(embd->ne[1]);
  c.tie_word_embeddings = f.FindTensor("output.weight") == nullptr;
  c.attention_bias = f.FindTensor("blk.0.attn_q.bias") != nullptr;
  c.torch_dtype = GgmlTypeName(embd->type);
  if (auto bos = f.GetInt("tokenizer.ggml.bos_token_id"); bos.ok())
    c.bos_token_id = static_cast<int>(*bos);
  if (auto eos = f.GetInt("tokenizer.ggml.eos_token_id"); eos.ok())
    c.eos_token_ids.push_back(static_cast<int>(*eos));
  if (auto eot = f.GetInt("tokenizer.ggml.eot_token_id"); eot.ok())
    if (c.eos_token_ids.empty() || c.eos_token_ids[0] != *eot)
      c.eos_token_ids.push_back(static_cast<int>(*eot));
  c.quantization.method = "gguf";
  if (auto ft = f.GetInt("general.file_type"); ft.ok())
    c.quantization.version = fmt::format("file_type {}", *ft);
  return c;
}

}  // namespace xinfer
