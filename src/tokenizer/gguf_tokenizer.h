// Tokenizers described by llama.cpp GGUF metadata (tokenizer.ggml.*). The tokenizer layer does
// not read GGUF files itself (formats/ is a sibling layer): a loader copies the metadata into a
// GgufVocab (see engine/gguf_tokenizer_loader.h) and this turns it into the same pipeline that a
// tokenizer.json would describe.
//
// Supported tokenizer.ggml.model values:
//   "gpt2"  byte-level BPE (vocab + ranked merges). tokenizer.ggml.pre picks the pre-tokenizer
//           regex: "qwen2" (Qwen2/Qwen3), "gpt-2" / "default" (GPT-2's).
//   "llama" sentencepiece BPE: pieces merge by highest score (llama.cpp's llm_tokenizer_spm),
//           spaces become U+2581 with one prepended, unknown characters fall back to <0xNN>.
// Token types (llama.cpp's llama_token_type): 3 control → special added token, 4 user-defined →
// added token; both are matched verbatim in the input before the model sees it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "tokenizer/tokenizer.h"

namespace xinfer {

// llama.cpp's token types.
enum GgufTokenType : int32_t {
  kGgufTokenNormal = 1,
  kGgufTokenUnknown = 2,
  kGgufTokenControl = 3,
  kGgufTokenUserDefined = 4,
  kGgufTokenUnused = 5,
  kGgufTokenByte = 6,
};

struct GgufVocab {
  std::string model;                 // tokenizer.ggml.model
  std::string pre;                   // tokenizer.ggml.pre ("" when absent)
  std::vector<std::string> tokens;   // tokenizer.ggml.tokens; index = id
  std::vector<float> scores;         // tokenizer.ggml.scores (llama; may be empty for gpt2)
  std::vector<int32_t> token_types;  // tokenizer.ggml.token_type (empty: all normal)
  std::vector<std::string> merges;   // tokenizer.ggml.merges, "left right" (gpt2)
  std::optional<int32_t> bos_id, eos_id, unk_id;
  std::optional<bool> add_bos, add_eos;  // absent: the model type's default
  std::optional<bool> add_space_prefix;  // llama only; absent: true
  std::string chat_template;             // tokenizer.chat_template
};

// Builds the tokenizer; a vocabulary that is inconsistent (sizes, ids out of range, merges of
// unknown tokens) or of an unsupported model/pre type is a Status naming the culprit.
StatusOr<std::unique_ptr<Tokenizer>> TokenizerFromGgufVocab(const GgufVocab& vocab);

}  // namespace xinfer
