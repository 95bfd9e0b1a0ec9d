// The mapping from a GGUF file's metadata (llama.cpp's `<arch>.*` keys) to ModelConfig, for the
// architectures the shared decoder runs: llama, qwen2, qwen3.
#pragma once

#include "formats/gguf.h"
#include "formats/hf_config.h"

namespace xinfer {

// general.architecture -> the Hugging Face architecture name the registry uses
// ("qwen3" -> "Qwen3ForCausalLM"); Unimplemented for others, listing the supported ones.
StatusOr<std::string> GgufArchitectureToHf(const std::string& gguf_arch);

// Reads hidden size, layers, heads, head_dim (attention.key_length), eps, rope base, context
// length, vocab size (from token_embd.weight), tied embeddings (no output.weight), q/k/v biases,
// and BOS/EOS ids. Missing keys are NotFound naming the key; rope scaling or partial rotary
// dimensions are Unimplemented. quantization.method is "gguf", bits/version describe the file.
StatusOr<ModelConfig> GgufModelConfig(const GgufFile& file);

}  // namespace xinfer
