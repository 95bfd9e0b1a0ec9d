// The subset of a Hugging Face `config.json` that decoder-only LLMs of the Llama/Qwen family
// need, parsed and validated once. Plain value type.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace xinfer {

struct QuantizationConfig {
  std::string method;  // "" when the checkpoint is not quantized, else e.g. "awq"
  int bits = 0;
  int group_size = 0;
  bool zero_point = false;
  std::string version;  // AWQ packing, e.g. "gemm"
};

// config.json's `rope_scaling` (keyed `rope_type` or `type`): how RoPE's rotation frequencies
// stretch over a longer context than the model was trained at, read as vLLM's get_rope reads it.
struct RopeScaling {
  std::string type;  // "" (none, or "default"), "linear", "dynamic", "yarn", "llama3"
  double factor = 1;
  int original_max_position_embeddings = 0;  // yarn and llama3: the trained context
  // yarn: the dimensions rotating more than beta_fast times over the original context keep their
  // frequency, those rotating less than beta_slow times are interpolated (divided by factor), a
  // linear ramp between; cos and sin are scaled by (0.1 ln factor + 1) * attn_factor.
  double beta_fast = 32, beta_slow = 1, extrapolation_factor = 1, attn_factor = 1;
  double low_freq_factor = 1, high_freq_factor = 4;  // llama3
  // Per-frequency divisors (llama.cpp's rope_freqs tensor in GGUF files); empty: none.
  std::vector<double> freq_factors{};
};

struct ModelConfig {
  std::string architecture;  // architectures[0], e.g. "Qwen3ForCausalLM"
  std::string model_type;    // e.g. "qwen3"
  int vocab_size = 0;
  int hidden_size = 0;
  int intermediate_size = 0;
  int num_hidden_layers = 0;
  int num_attention_heads = 0;
  int num_key_value_heads = 0;
  int head_dim = 0;  // explicit in Qwen3; hidden_size / num_attention_heads otherwise
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;
  int max_position_embeddings = 0;
  // Mixture of experts (Qwen3MoeForCausalLM): each sparse layer's MLP is `num_experts` SwiGLU
  // experts of moe_intermediate_size, num_experts_per_tok of them per token by the router's
  // softmax (renormalized over those when norm_topk_prob). Layers in mlp_only_layers, and all but
  // every decoder_sparse_step-th, keep a dense MLP of intermediate_size. 0 experts: dense model.
  int num_experts = 0;
  int num_experts_per_tok = 0;
  int moe_intermediate_size = 0;
  bool norm_topk_prob = false;
  // Qwen2MoeForCausalLM: each sparse layer also runs a shared SwiGLU expert of this width on every
  // token, scaled by sigmoid(shared_expert_gate . x) and added to the routed experts' sum; 0: none.
  int shared_expert_intermediate_size = 0;
  int decoder_sparse_step = 1;
  std::vector<int> mlp_only_layers{};
  bool is_moe() const { return num_experts > 0; }
  bool IsSparseLayer(int layer) const;
  bool tie_word_embeddings = false;
  bool attention_bias = false;  // q/k/v (and o for Llama) biases
  std::string torch_dtype;      // as stored: "bfloat16", "float32", ...
  std::optional<int> bos_token_id;
  std::vector<int> eos_token_ids;
  QuantizationConfig quantization;
  // Matryoshka-trained embeddings (sentence-transformers' / vLLM's is_matryoshka, or the listed
  // matryoshka_dimensions): a request may ask for the first `dimensions` of an embedding.
  bool is_matryoshka = false;
  std::vector<int> matryoshka_dimensions;  // empty: any in [1, hidden_size]
  // A *ForSequenceClassification architecture scores its prompts from the last position, either
  //  - with two rows of the lm_head, as vLLM runs the original Qwen3-Reranker (--hf-overrides
  //    '{"architectures": ["Qwen3ForSequenceClassification"], "classifier_from_token": ["no",
  //    "yes"], "is_original_qwen3_reranker": true}'): the score is softmax over those two tokens'
  //    logits, the second's share (sigmoid(yes - no));
  //  - or with its own head, `score.weight` [num_labels, hidden] on the final hidden state
  //    (transformers' checkpoints, e.g. the converted "...-seq-cls" rerankers): one label's
  //    sigmoid is the score, several labels' softmax the class probabilities (/classify).
  std::vector<std::string> classifier_from_token{};
  // A classifier's id2label from config.json, by label index (num_labels = its size; "LABEL_i"
  // names when only num_labels is given, two of them when neither is, as transformers).
  std::vector<std::string> id2label{};
  bool is_classifier() const { return architecture.ends_with("ForSequenceClassification"); }
  bool has_score_head() const { return is_classifier() && classifier_from_token.empty(); }
};

// The longest sequence the model supports, as vLLM derives it: max_position_embeddings, times the
// rope scaling factor (yarn: original_max_position_embeddings times it; llama3: unchanged);
// 0 when the config names none.
int DerivedMaxModelLen(const ModelConfig& config);

// Parses config.json text. Missing required fields, non-positive sizes, heads that do not divide
// or unsupported features (hidden_act other than silu, rope scaling types other than the above)
// are InvalidArgument / Unimplemented with the field named.
StatusOr<ModelConfig> ParseHfConfig(const std::string& json_text);
// `overrides`: vLLM's --hf-overrides, a JSON object merged onto config.json first (RFC 7396: its
// objects merge key by key, null removes a key); empty: none.
StatusOr<ModelConfig> LoadHfConfig(const std::string& model_dir, const std::string& overrides = "");

// Sampling defaults and extra EOS ids from `generation_config.json` (absent file: all empty):
// the fields vLLM takes from it (get_diff_sampling_param).
struct GenerationConfig {
  std::optional<float> temperature;
  std::optional<float> top_p;
  std::optional<int> top_k;
  std::optional<float> min_p;
  std::optional<float> repetition_penalty;
  std::vector<int> eos_token_ids;
};
StatusOr<GenerationConfig> LoadGenerationConfig(const std::string& model_dir);
// Lays `json_text` (vLLM's --override-generation-config: an object of temperature, top_p, top_k,
// min_p, repetition_penalty) over `config`. Not an object, another key or a value of the wrong
// type is InvalidArgument naming it; ranges are the sampling parameters' to check.
Status OverrideGenerationConfig(const std::string& json_text, GenerationConfig& config);

}  // namespace xinfer
