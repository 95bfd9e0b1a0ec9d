// Qwen3ForCausalLM: no q/k/v biases (unless attention_bias), RMSNorm on each q and k head before
// RoPE, and an explicit head_dim that may differ from hidden_size / num_attention_heads.
#include "model/arch/arch.h"

namespace xinfer {

StatusOr<DecoderSpec> Qwen3Spec(const ModelConfig& config) {
  DecoderSpec spec;
  spec.qk_norm = true;
  spec.qkv_bias = config.attention_bias;
  return spec;
}

}  // namespace xinfer
