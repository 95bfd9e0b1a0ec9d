// The tokenizer half of GGUF export (cli/gguf_export.h): a Hugging Face tokenizer.json (with
// tokenizer_config.json and config.json) as llama.cpp's tokenizer.ggml.* metadata.
//   - byte-level BPE (Qwen2/Qwen3, GPT-2): model "gpt2", pre "qwen2" or "gpt-2" (recognised from
//     the pre-tokenizer's regex), tokens padded to the embedding's rows with "[PADn]" (unused),
//     merges "left right". Added tokens are control tokens when special (or spelled like one,
//     "<|...|>"), user-defined otherwise, as the converter marks them.
//   - sentencepiece-style BPE with byte fallback (Llama / TinyStories tokenizer.json): model
//     "llama". llama.cpp's converter gives every piece the score -1000, which makes its
//     tokenizer merge left to right; here a piece's score is minus the rank of the merge that
//     forms it, so llama.cpp and xinfer merge in the checkpoint's own order.
// Special ids (bos, eos, unk, sep, pad, cls, mask) come from tokenizer_config.json's tokens, then
// config.json's *_token_id; add_bos/add_eos from tokenizer_config.json (or a post-processor that
// prepends BOS); tokenizer.chat_template from tokenizer_config.json or chat_template.jinja.
// Anything else (Unigram, WordPiece, unknown pre-tokenizers) is Unimplemented with the reason.
#pragma once

#include <string>

#include "base/status.h"
#include "formats/gguf_writer.h"

namespace xinfer {

// Adds the tokenizer metadata of `src_dir` for a model with `vocab_size` embedding rows.
Status AddGgufVocab(const std::string& src_dir, int vocab_size, GgufWriter* writer);

}  // namespace xinfer
