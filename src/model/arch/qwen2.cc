// Qwen2ForCausalLM (Qwen2, Qwen2.5): biases on q/k/v but not o; lm_head tied or not per config.
#include "model/arch/arch.h"

namespace xinfer {

StatusOr<DecoderSpec> Qwen2Spec(const ModelConfig& /*config*/) {
  DecoderSpec spec;
  spec.qkv_bias = true;
  return spec;
}

}  // namespace xinfer
