// The decoder-only transformer shared by the Llama family: RMSNorm, GQA attention with rotary
// embeddings (rotate-half), SwiGLU MLP. Architecture files (model/arch/) describe how their
// checkpoints differ (biases, per-head q/k norms, tied lm_head) in a DecoderSpec; this file
// holds the one forward pass.
#pragma once

#include <array>
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

// One SwiGLU MLP of a mixture-of-experts layer.
struct ExpertWeights {
  Weight gate_proj, up_proj, down_proj;
};

// Projections and the embedding table are Weights: dense or quantized (tensor/quant.h).
struct DecoderLayerWeights {
  Tensor input_norm, post_attention_norm;
  Weight q_proj, k_proj, v_proj, o_proj;
  Tensor q_bias, k_bias, v_bias, o_bias;  // empty when absent
  Tensor q_norm, k_norm;                  // empty when absent
  Weight gate_proj, up_proj, down_proj;   // the dense MLP; empty in a sparse (MoE) layer
  Weight router;                          // a sparse layer's [num_experts, hidden] gate
  std::vector<ExpertWeights> experts;     // a sparse layer's; empty in a dense one
  // A sparse layer's shared expert and its [1, hidden] gate (Qwen2-MoE); empty when none.
  ExpertWeights shared_expert;
  Weight shared_expert_gate;

  bool sparse() const { return !experts.empty(); }
  // Every projection (the seven, then the router, the shared expert's and the experts'), and the
  // vectors (norm weights and biases, some empty), in one place for the passes that visit every
  // weight. Empty ones included.
  std::vector<Weight*> projections() {
    std::vector<Weight*> p = {&q_proj,
                              &k_proj,
                              &v_proj,
                              &o_proj,
                              &gate_proj,
                              &up_proj,
                              &down_proj,
                              &router,
                              &shared_expert.gate_proj,
                              &shared_expert.up_proj,
                              &shared_expert.down_proj,
                              &shared_expert_gate};
    for (ExpertWeights& e : experts) p.insert(p.end(), {&e.gate_proj, &e.up_proj, &e.down_proj});
    return p;
  }
  std::vector<const Weight*> projections() const {
    std::vector<const Weight*> p;
    for (Weight* w : const_cast<DecoderLayerWeights*>(this)->projections()) p.push_back(w);
    return p;
  }
  std::array<Tensor*, 8> vectors() {
    return {&input_norm, &post_attention_norm, &q_bias, &k_bias, &v_bias, &o_bias, &q_norm,
            &k_norm};
  }
  std::array<const Tensor*, 8> vectors() const {
    return {&input_norm, &post_attention_norm, &q_bias, &k_bias, &v_bias, &o_bias, &q_norm,
            &k_norm};
  }
};

struct DecoderWeights {
  Weight embed_tokens;
  std::vector<DecoderLayerWeights> layers;
  Tensor final_norm;
  Weight lm_head;  // shares embed_tokens' storage when tied
};

// What a model file holds: its config, how its architecture differs, and its weights as stored
// (the tensors keep the mapped file alive).
struct DecoderModelParts {
  ModelConfig config;
  DecoderSpec spec;
  DecoderWeights weights;
};
// Reads a Hugging Face folder or a GGUF file (model/load.cc, where the architectures are
// registered). Status names the file and the culprit, as LoadCausalLM's.
StatusOr<DecoderModelParts> LoadDecoderParts(const std::string& model_dir,
                                             const std::string& hf_overrides = "");

// Bytes the weights occupy as stored (a tied lm_head counted once) and their logical parameter
// count (a quantized [N, K] matrix counts N * K).
size_t DecoderWeightBytes(const DecoderWeights& w);
int64_t DecoderParameterCount(const DecoderWeights& w);

// Loads the weights that `spec` says the architecture has, with HF names
// (model.layers.N.self_attn.q_proj.weight, ...) and shapes checked against `config`. With an AWQ
// `config.quantization`, the projections are read from qweight/qzeros/scales (model/awq.h).
StatusOr<DecoderWeights> LoadDecoderWeights(const WeightStore& store, const ModelConfig& config,
                                            const DecoderSpec& spec);

// ModelLoadOptions::bf16_weights: replaces the dense F16 / F32 Linear weights and the embedding
// table of `w` by BF16 copies in host memory (round to nearest even; tied tensors converted once
// and still tied), the conversion spread over `backend.ParallelForHost`. Returns the bytes
// converted from (0 when nothing was F16 or F32).
size_t ConvertDenseWeightsToBf16(DecoderWeights& w, Backend& backend);

// Replaces the F16 / BF16 norm weights and biases of `w` by F32 copies (exact). Every kernel reads
// them as F32; converted per call instead, they cost a scalar conversion of ~3K elements per
// layer and step (~4 us of each AWQ q/k/v projection's ~25 at one sequence on a 2-core Zen 4,
// docs/performance.md, session 26). Returns the elements widened.
size_t WidenVectorsToF32(DecoderWeights& w);

// Hands every weight tensor to `backend.PlaceWeights` once (backend.h) and rebinds `w` to the
// placed copies; tied tensors stay tied.
void PlaceDecoderWeights(DecoderWeights& w, Backend& backend);

// Builds the model from its loaded weights (LoadDecoderParts); the weights keep their storage
// alive.
std::unique_ptr<CausalLM> CreateDecoderLM(ModelConfig config, DecoderSpec spec,
                                          DecoderWeights weights, Backend& backend,
                                          const ModelLoadOptions& options = {});
// One rank of a tensor-parallel decoder (decoder_shard.h): `weights` are its shard
// (ShardDecoderWeights), `backend` its device; config is the whole model's.
struct DecoderShard;
std::unique_ptr<CausalLM> CreateDecoderLM(ModelConfig config, DecoderSpec spec,
                                          DecoderWeights weights, const DecoderShard& shard,
                                          Backend& backend, const ModelLoadOptions& options = {});

}  // namespace xinfer
