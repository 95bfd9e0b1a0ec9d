// Guided decoding of JSON output (`response_format` json_object or json_schema, vLLM's
// guided_json): per step, the tokens that would take the output off every valid value are masked,
// and the end of the sequence is allowed only once the value is complete, so a sequence that ends
// by itself is one valid value. The allowed tokens of each matcher state are computed once per
// sequence and reused when the state comes back (token_set.h), as they do between tokens and
// inside strings.
//
// Ownership and threading: a TokenVocabulary is built once per engine (from
// Tokenizer::TokenBytes) and shared read-only by every sampler on every thread, as is a compiled
// JsonSchema. A Guide belongs to one sequence's Sampler and is not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "sampling/json_schema.h"
#include "sampling/sampling_params.h"
#include "sampling/token_trie.h"

namespace xinfer {

class TokenVocabulary {
 public:
  // `bytes`: each token id's bytes as they appear mid-text; "" for tokens a grammar never allows
  // (special tokens). Ids past the end are never allowed either.
  explicit TokenVocabulary(std::vector<std::string> bytes);

  size_t size() const { return bytes_.size(); }
  const std::string& bytes(size_t id) const { return bytes_[id]; }
  // An output token's bytes, or null for an id a guide never allows (outside the vocabulary, or
  // a special token): what a guide's CatchUp feeds its matcher.
  const std::string* output_bytes(int32_t id) const {
    if (id < 0 || static_cast<size_t>(id) >= bytes_.size()) return nullptr;
    const std::string& b = bytes_[static_cast<size_t>(id)];
    return b.empty() ? nullptr : &b;
  }
  // The first byte (0 for an empty token), contiguous so that a mask pass skips most tokens
  // without touching their strings.
  uint8_t first_byte(size_t id) const { return first_byte_[id]; }
  // Whole UTF-8 characters >= U+0020, none of them '"' or '\\': text that continues any JSON
  // string as it is, so a matcher inside a string need not try it byte by byte.
  bool plain_string_text(size_t id) const { return plain_string_text_[id] != 0; }
  // The tokens' bytes as a prefix tree, built on first use (a guide that walks it; thread-safe).
  const TokenTrie& trie() const;

 private:
  std::vector<std::string> bytes_;
  std::vector<uint8_t> first_byte_;
  std::vector<uint8_t> plain_string_text_;
  mutable std::once_flag trie_once_;
  mutable std::unique_ptr<const TokenTrie> trie_;
};

class Guide {
 public:
  virtual ~Guide() = default;
  // Feeds the output tokens not fed yet (`output_ids` grows by appends between calls).
  // InvalidArgument when a token cannot continue the value (one the mask did not allow).
  virtual Status CatchUp(std::span<const int32_t> output_ids) = 0;
  // Sets to -inf every logit whose token cannot come next. `end_ids` (EOS, stop token ids) keep
  // their logits once the value is complete, and are masked before.
  virtual void Mask(std::span<float> logits, std::span<const int32_t> end_ids) const = 0;
  virtual bool complete() const = 0;
  // Some token with a byte other than whitespace can come now: false when the vocabulary cannot
  // write the value at all (a model without '{', say), which would otherwise only pad the output
  // with whitespace until no token is left.
  virtual bool CanBegin() const = 0;
};

// The guide `params.guided` asks for (with its schema or expression); null for kNone.
std::unique_ptr<Guide> NewGuide(const SamplingParams& params,
                                std::shared_ptr<const TokenVocabulary> vocabulary);
// One JSON object (response_format json_object): JsonMatcher. `whitespace`: false for no
// whitespace between tokens (vLLM's disable_any_whitespace).
std::unique_ptr<Guide> NewJsonObjectGuide(std::shared_ptr<const TokenVocabulary> vocabulary,
                                          bool whitespace = true);
// One value of `schema` (response_format json_schema): SchemaMatcher.
std::unique_ptr<Guide> NewJsonSchemaGuide(std::shared_ptr<const TokenVocabulary> vocabulary,
                                          std::shared_ptr<const JsonSchema> schema,
                                          bool whitespace = true);

}  // namespace xinfer
