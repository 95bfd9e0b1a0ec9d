// `xinfer quantize --gguf TYPE SRC_DIR DST.gguf`: a Hugging Face folder (LlamaForCausalLM,
// Qwen2ForCausalLM, Qwen3ForCausalLM, Qwen3MoeForCausalLM; F32/F16/BF16 safetensors) as one GGUF
// v3 file laid out as
// llama.cpp's convert_hf_to_gguf.py (+ llama-quantize --pure for q8_0/q4_0) lays it out, so
// llama.cpp and xinfer's GGUF loader both run it:
//   - metadata: general.*, <arch>.* hyperparameters, general.file_type, and the tokenizer
//     (tokenizer.ggml.*, tokenizer.chat_template; see gguf_export_vocab.h);
//   - tensors: llama.cpp's names (token_embd, blk.N.attn_q, ..., output_norm, output only when
//     untied); llama-architecture attn_q/attn_k rows permuted as the converter does (GGML's rope
//     pairs adjacent elements, Hugging Face's rotates halves; model/gguf_model.h undoes it);
//   - MoE (qwen3moe): each layer's experts stacked into ffn_{gate,up,down}_exps, ne = {cols,
//     rows, n_experts}, the router ffn_gate_inp kept F32, expert_count / expert_used_count /
//     expert_feed_forward_length; a dense layer or norm_topk_prob false is refused (llama.cpp's
//     graph cannot express either);
//   - types: 1-D tensors (norms, biases) F32; 2-D weights and stacked experts TYPE; with q8_0/q4_0
//   a weight whose row
//     length is not a multiple of 32 falls back to F16 (logged). Quantization is round-to-nearest
//     exactly as llama.cpp's reference quantizers (tensor/quant_blocks.h), without an imatrix.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace xinfer {

enum class GgufExportType { kF32, kF16, kBF16, kQ8_0, kQ4_0 };

// "f32", "f16", "bf16", "q8_0", "q4_0" (any case); InvalidArgument listing them otherwise.
StatusOr<GgufExportType> ParseGgufExportType(const std::string& name);
const char* GgufExportTypeName(GgufExportType type);

struct GgufExportOptions {
  GgufExportType type = GgufExportType::kBF16;
};

// Writes `dst_file` from the model folder `src_dir`. The file is written as `dst_file`.tmp and
// renamed into place, so a failure leaves nothing behind. A missing source is NotFound; an
// existing `dst_file`, an unsupported architecture, a quantized source or a tensor without a
// GGUF name is InvalidArgument / Unimplemented naming the culprit.
Status ExportGguf(const std::string& src_dir, const std::string& dst_file,
                  const GgufExportOptions& options);

// Converts `rows` rows of `cols` floats to ggml type `ggml_type` (F32, F16, BF16, Q8_0, Q4_0)
// as llama.cpp does: F16/BF16 round to nearest even, Q8_0/Q4_0 quantize each row's blocks of 32.
std::string EncodeGgmlRows(uint32_t ggml_type, const float* src, int64_t rows, int64_t cols);

// The converter's Q/K row order for llama: within each of `n_heads` heads of D rows, row 2i + j
// of the result is row j * D/2 + i of the source (the inverse of UnpermuteLlamaRows).
std::vector<int64_t> LlamaPermutedRowOrder(int64_t rows, int n_heads);

}  // namespace xinfer
