// Guided decoding of `response_format: {"type": "json_object"}`: per step, the tokens that would
// take the output off every valid JSON object are masked, and the end of the sequence is allowed
// only once the object is complete, so a sequence that ends by itself is one JSON object.
//
// Ownership and threading: a TokenVocabulary is built once per engine (from
// Tokenizer::TokenBytes) and shared read-only by every sampler on every thread. A GuidedJsonObject
// belongs to one sequence's Sampler and is not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "sampling/json_matcher.h"

namespace xinfer {

class TokenVocabulary {
 public:
  // `bytes`: each token id's bytes as they appear mid-text; "" for tokens a grammar never allows
  // (special tokens). Ids past the end are never allowed either.
  explicit TokenVocabulary(std::vector<std::string> bytes);

  size_t size() const { return bytes_.size(); }
  const std::string& bytes(size_t id) const { return bytes_[id]; }
  // The first byte (0 for an empty token), contiguous so that a mask pass skips most tokens
  // without touching their strings.
  uint8_t first_byte(size_t id) const { return first_byte_[id]; }
  // Whole UTF-8 characters >= U+0020, none of them '"' or '\\': text that continues any JSON
  // string as it is, so a matcher inside a string need not try it byte by byte.
  bool plain_string_text(size_t id) const { return plain_string_text_[id] != 0; }

 private:
  std::vector<std::string> bytes_;
  std::vector<uint8_t> first_byte_;
  std::vector<uint8_t> plain_string_text_;
};

class GuidedJsonObject {
 public:
  explicit GuidedJsonObject(std::shared_ptr<const TokenVocabulary> vocabulary);

  // Feeds the output tokens not fed yet (`output_ids` grows by appends between calls).
  // InvalidArgument when a token cannot continue the object (one this mask did not allow).
  Status CatchUp(std::span<const int32_t> output_ids);
  // Sets to -inf every logit whose token cannot come next. `end_ids` (EOS, stop token ids) keep
  // their logits once the object is complete, and are masked before.
  void Mask(std::span<float> logits, std::span<const int32_t> end_ids) const;

  bool complete() const { return matcher_.complete(); }

 private:
  std::shared_ptr<const TokenVocabulary> vocabulary_;
  JsonMatcher matcher_;
  size_t consumed_ = 0;  // output tokens fed to matcher_
};

}  // namespace xinfer
