#include "sampling/sampling_params.h"

#include <cmath>
#include <unordered_set>

#include "base/utf8.h"

namespace xinfer {

Status SamplingParams::Validate(int32_t vocab_size, int32_t max_logprobs) const {
  // Written as !(x >= lo) etc. so NaN fails every range check.
  if (!(temperature >= 0.0f) || !std::isfinite(temperature)) {
    return InvalidArgument("temperature must be a finite number >= 0, got {}", temperature);
  }
  if (!(top_p > 0.0f && top_p <= 1.0f)) {
    return InvalidArgument("top_p must be in (0, 1], got {}", top_p);
  }
  if (top_k < -1) {
    return InvalidArgument("top_k must be -1 or 0 (disabled) or >= 1, got {}", top_k);
  }
  if (!(min_p >= 0.0f && min_p <= 1.0f)) {
    return InvalidArgument("min_p must be in [0, 1], got {}", min_p);
  }
  if (!(repetition_penalty > 0.0f) || !std::isfinite(repetition_penalty)) {
    return InvalidArgument("repetition_penalty must be a finite number > 0, got {}",
                           repetition_penalty);
  }
  if (!(std::fabs(presence_penalty) <= kMaxPresenceFrequencyPenalty)) {
    return InvalidArgument("presence_penalty must be in [-2, 2], got {}", presence_penalty);
  }
  if (!(std::fabs(frequency_penalty) <= kMaxPresenceFrequencyPenalty)) {
    return InvalidArgument("frequency_penalty must be in [-2, 2], got {}", frequency_penalty);
  }
  std::unordered_set<int32_t> biased;
  for (const auto& [id, bias] : logit_bias) {
    if (id < 0 || id >= vocab_size) {
      return InvalidArgument("logit_bias token id {} is out of range [0, {})", id, vocab_size);
    }
    if (!(std::fabs(bias) <= kMaxLogitBias)) {
      return InvalidArgument("logit_bias for token {} must be in [-100, 100], got {}", id, bias);
    }
    if (!biased.insert(id).second) {
      return InvalidArgument("logit_bias has token id {} more than once", id);
    }
  }
  for (int32_t id : allowed_token_ids) {
    if (id < 0 || id >= vocab_size) {
      return InvalidArgument("allowed_token_ids entry {} is out of range [0, {})", id, vocab_size);
    }
  }
  if (guided == GuidedDecoding::kJsonSchema && json_schema == nullptr) {
    return InvalidArgument("response_format json_schema needs a schema");
  }
  if (guided == GuidedDecoding::kRegex && regex == nullptr) {
    return InvalidArgument("guided_regex needs a compiled expression");
  }
  if (guided == GuidedDecoding::kGrammar && grammar == nullptr) {
    return InvalidArgument("guided_grammar needs a compiled grammar");
  }
  if (guided != GuidedDecoding::kNone && ignore_eos) {
    return InvalidArgument(
        "ignore_eos cannot be combined with guided decoding (response_format, guided_json, "
        "guided_regex, guided_choice, guided_grammar): the output ends when the value is complete");
  }
  if (logprobs < -1 || logprobs > max_logprobs) {
    return InvalidArgument("logprobs must be in [0, {}] (or absent; --max-logprobs), got {}",
                           max_logprobs, logprobs);
  }
  for (const auto& word : bad_words_token_ids) {
    if (word.empty()) return InvalidArgument("bad_words: a word has no tokens");
    for (int32_t id : word)
      if (id < 0 || id >= vocab_size)
        return InvalidArgument("bad_words: token id {} is out of range [0, {})", id, vocab_size);
  }
  if (prompt_logprobs < -1 || prompt_logprobs > max_logprobs) {
    return InvalidArgument("prompt_logprobs must be in [0, {}] (or absent; --max-logprobs), got {}",
                           max_logprobs, prompt_logprobs);
  }
  if (max_tokens < 1) {
    return InvalidArgument("max_tokens must be >= 1, got {}", max_tokens);
  }
  for (size_t i = 0; i < stop.size(); ++i) {
    if (stop[i].empty()) return InvalidArgument("stop string {} is empty", i);
    if (!IsValidUtf8(stop[i])) return InvalidArgument("stop string {} is not valid UTF-8", i);
  }
  for (int32_t id : stop_token_ids) {
    if (id < 0 || id >= vocab_size) {
      return InvalidArgument("stop_token_ids entry {} is out of range [0, {})", id, vocab_size);
    }
  }
  if (min_tokens < 0 || min_tokens > max_tokens) {
    return InvalidArgument("min_tokens must be in [0, max_tokens={}], got {}", max_tokens,
                           min_tokens);
  }
  if (n < 1 || n > kMaxN) {
    return InvalidArgument("n must be in [1, {}], got {}", kMaxN, n);
  }
  return Status::Ok();
}

SamplingParams SamplingParams::ForChoice(int32_t index) const {
  SamplingParams child = *this;
  child.n = 1;
  // Unsigned arithmetic: wraps instead of overflowing for seeds near 2^64.
  if (seed) child.seed = *seed + static_cast<uint64_t>(index);
  return child;
}

}  // namespace xinfer
