// Logit-level processing steps, applied in place to one sequence's vocab-sized logits before
// temperature and filtering (the order is Sampler's). Functions are pure apart from their output
// argument; TokenCounter is thread-compatible. Token ids passed here must be in range: Sampler
// checks ids that come from requests before calling.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <utility>

#include "base/status.h"

namespace xinfer {

// NaN → -inf, so a broken logit can never be chosen and never poisons a sum or a comparison.
void SanitizeLogits(std::span<float> logits);

// logits[id] += bias for each (id, bias).
void ApplyLogitBias(std::span<float> logits, std::span<const std::pair<int32_t, float>> bias);

// HF/vLLM repetition penalty for each id in `unique_ids` (each id must appear once, or it would
// be penalized twice): positive logits are divided by `penalty`, others multiplied by it, so a
// penalty > 1 always makes the token less likely.
void ApplyRepetitionPenalty(std::span<float> logits, std::span<const int32_t> unique_ids,
                            float penalty);

// OpenAI penalties: logits[id] -= presence + frequency * count for every id with count > 0.
void ApplyPresenceFrequencyPenalties(std::span<float> logits,
                                     const std::unordered_map<int32_t, int32_t>& counts,
                                     float presence, float frequency);

// logits[id] = -inf for each id; ids outside the vocab are skipped (they cannot be sampled, so
// there is nothing to mask — e.g. an EOS id from a config whose vocab is padded differently).
void MaskTokens(std::span<float> logits, std::span<const int32_t> ids);

// Index of the largest logit, ties → lowest id; -1 if every logit is -inf (or NaN).
int32_t Argmax(std::span<const float> logits);

// Occurrence counts of the ids of an append-only token sequence (a sequence's output so far),
// updated incrementally: each Update() only counts ids past the previous call's length, so
// per-step cost is O(new tokens) rather than O(output). A shorter sequence than last time
// (never expected) triggers a full recount.
class TokenCounter {
 public:
  // InvalidArgument (naming `what`) if an id is outside [0, vocab_size); the counter is then
  // reset so the next call recounts from scratch.
  Status Update(std::span<const int32_t> ids, int32_t vocab_size, const char* what);
  const std::unordered_map<int32_t, int32_t>& counts() const { return counts_; }

 private:
  size_t counted_ = 0;
  std::unordered_map<int32_t, int32_t> counts_;
};

}  // namespace xinfer
