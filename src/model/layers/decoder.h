// The decoder-only transformer shared by the Llama family: RMSNorm, GQA attention with rotary
// embeddings (rotate-half), SwiGLU MLP. Architecture files (model/arch/) describe how their
// checkpoints differ (biases, per-head q/k norms, tied lm_head) in a DecoderSpec; this file
// holds the one forward pass.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "formats/safetensors.h"
#include "model/causal_lm.h"

namespace xinfer {

struct DecoderSpec {
  bool qkv_bias = false;  // Qwen2: q/k/v projections have biases
  bool o_bias = false;    // Llama with attention_bias: o_proj has one too
  bool qk_norm = false;   // Qwen3: RMSNorm over each head of q and k before RoPE
};

struct DecoderLayerWeights {
  Tensor input_norm, post_attention_norm;
  Tensor q_proj, k_proj, v_proj, o_proj;
  Tensor q_bias, k_bias, v_bias, o_bias;  // empty when absent
  Tensor q_norm, k_norm;                  // empty when absent
  Tensor gate_proj, up_proj, down_proj;
};

struct DecoderWeights {
  Tensor embed_tokens;
  std::vector<DecoderLayerWeights> layers;
  Tensor final_norm;
  Tensor lm_head;  // aliases embed_tokens when tied
};

// Loads the weights that `spec` says the architecture has, with HF names
// (model.layers.N.self_attn.q_proj.weight, ...) and shapes checked against `config`.
StatusOr<DecoderWeights> LoadDecoderWeights(const WeightStore& store, const ModelConfig& config,
                                            const DecoderSpec& spec);

StatusOr<std::unique_ptr<CausalLM>> CreateDecoderLM(ModelConfig config, DecoderSpec spec,
                                                    std::unique_ptr<WeightStore> store,
                                                    Backend& backend);

}  // namespace xinfer
