// LlamaForCausalLM (also TinyStories and Llama-shaped checkpoints): no biases unless
// attention_bias, optional tied embeddings.
#include "model/arch/arch.h"

namespace xinfer {

StatusOr<DecoderSpec> LlamaSpec(const ModelConfig& config) {
  DecoderSpec spec;
  spec.qkv_bias = config.attention_bias;
  spec.o_bias = config.attention_bias;
  return spec;
}

}  // namespace xinfer
