// The tokenizer of a llama.cpp GGUF model file: reads the tokenizer.ggml.* metadata into a
// GgufVocab (tokenizer/gguf_tokenizer.h) and builds the Tokenizer from it. Lives above both the
// formats and tokenizer layers so that neither depends on the other.
#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "formats/gguf.h"
#include "tokenizer/gguf_tokenizer.h"
#include "tokenizer/tokenizer.h"

namespace xinfer {

// True when `model` names a GGUF file rather than a Hugging Face model folder (the same rule
// LoadCausalLM uses).
bool IsGgufModelPath(const std::string& model);

// tokenizer.ggml.* and tokenizer.chat_template of `file`; missing required keys and ill-typed
// values are Status naming the key.
StatusOr<GgufVocab> ReadGgufVocab(const GgufFile& file);

// Opens `path` and builds its tokenizer; errors carry the path.
StatusOr<std::unique_ptr<Tokenizer>> LoadGgufTokenizer(const std::string& path);

}  // namespace xinfer
