// Loading llama.cpp GGUF files (llama, qwen2, qwen3) into the shared decoder. Quantized tensors
// (Q8_0, Q4_0, Q5_0, Q4_1, Q5_1, Q4_K, Q5_K, Q6_K) stay in the mapped file in their block layout
// and run through Ops::QuantLinear; F32/F16/BF16 ones run as dense weights.
//
// Tensor names: token_embd, output_norm, output (absent when tied), blk.N.{attn_norm, attn_q,
// attn_k, attn_v, attn_output, attn_q_norm, attn_k_norm, ffn_norm, ffn_gate, ffn_up, ffn_down}
// (.weight, and .bias for qwen2's q/k/v). llama.cpp's converter permutes the rows of llama-arch
// attn_q / attn_k so that its interleaved ("NORM") rotary embedding reproduces Hugging Face's
// rotate-half one; we run rotate-half, so those rows are permuted back at load time (a copy of
// two matrices per layer). qwen2/qwen3 files use NEOX (rotate-half) rope and are not permuted.
#pragma once

#include <memory>
#include <string>

#include "backend/backend.h"
#include "formats/gguf.h"
#include "model/causal_lm.h"
#include "model/layers/decoder.h"

namespace xinfer {

// Weights of `file` for `config` (from GgufModelConfig) and `spec`, shapes checked.
StatusOr<DecoderWeights> LoadGgufDecoderWeights(const GgufFile& file, const ModelConfig& config,
                                                const DecoderSpec& spec);

// Opens `path` and reads its config and weights (LoadCausalLM builds the model from them).
// Status names the file and the culprit on failure.
StatusOr<DecoderModelParts> LoadGgufDecoderParts(const std::string& path);

// Inverse of llama.cpp's HF->GGUF Q/K permutation: row h*D + j*D/2 + i of the result is row
// h*D + 2i + j of `w` (heads of D = rows / n_heads rows each). Returns a new weight.
StatusOr<Weight> UnpermuteLlamaRows(const Weight& w, int n_heads);

}  // namespace xinfer
