// SamplingParams: everything a request says about how its tokens are chosen and when it ends.
// A plain value type (copyable, thread-compatible). The server fills it from the OpenAI/vLLM
// request JSON and must call Validate() before handing it to a Sampler or StopChecker; those two
// assume validated parameters.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "sampling/grammar.h"
#include "sampling/json_schema.h"
#include "sampling/regex_dfa.h"

namespace xinfer {

// Temperatures below this are greedy decoding (as vLLM's _SAMPLING_EPS): dividing by a tiny
// temperature would overflow, and the result is argmax anyway.
inline constexpr float kGreedyTemperature = 1e-5f;
// Largest accepted `logprobs` (vLLM's default max_logprobs).
inline constexpr int32_t kMaxLogprobs = 20;
// Largest accepted `n` (OpenAI's limit).
inline constexpr int32_t kMaxN = 128;
// |presence_penalty|, |frequency_penalty| and |logit_bias| bounds (OpenAI's).
inline constexpr float kMaxPresenceFrequencyPenalty = 2.0f;
inline constexpr float kMaxLogitBias = 100.0f;

// Grammar the output must follow (guided decoding). kJsonObject: one JSON object (OpenAI's
// response_format json_object); kJsonSchema: one value of `json_schema` (response_format
// json_schema, vLLM's guided_json); kRegex: one whole match of `regex` (vLLM's guided_regex and
// guided_choice); kGrammar: one whole match of `grammar` (vLLM's guided_grammar, GBNF). The
// sequence can end only once the value is complete.
enum class GuidedDecoding { kNone, kJsonObject, kJsonSchema, kRegex, kGrammar };

struct SamplingParams {
  // --- Token choice (Sampler) ---
  float temperature = 1.0f;  // >= 0; below kGreedyTemperature: greedy (argmax, ties → lowest id)
  float top_p = 1.0f;        // (0, 1]; 1 = disabled
  int32_t top_k = 0;         // 0 or -1 = disabled (vLLM accepts both), else >= 1 (> vocab is fine)
  float min_p = 0.0f;        // [0, 1]; 0 = disabled; relative to the most likely token
  // > 0. HF/vLLM semantics: tokens seen in the prompt OR the output get logit/p if the logit is
  // positive, logit*p otherwise.
  float repetition_penalty = 1.0f;
  // [-2, 2]. OpenAI semantics, output tokens only: logit -= presence * (count > 0)
  // + frequency * count.
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  // (token id, bias in [-100, 100]) added to the raw logits; ids unique and < vocab.
  std::vector<std::pair<int32_t, float>> logit_bias;
  // vLLM's allowed_token_ids: when non-empty, only these ids (< vocab; repeats harmless) may be
  // sampled — every other logit is -inf before any other processing, EOS included unless listed.
  std::vector<int32_t> allowed_token_ids;
  GuidedDecoding guided = GuidedDecoding::kNone;
  std::shared_ptr<const JsonSchema> json_schema;  // kJsonSchema: compiled, shared, immutable
  std::shared_ptr<const RegexDfa> regex;          // kRegex: compiled, shared, immutable
  std::shared_ptr<const Grammar> grammar;         // kGrammar: compiled, shared, immutable
  // JSON guides: whitespace between tokens (runs of up to 32 bytes) allowed; false for none
  // (vLLM's structured_outputs.disable_any_whitespace).
  bool guided_whitespace = true;
  // Same seed (and same logits) → same tokens, alone or in any batch. Absent: the engine supplies
  // a random per-sequence seed (Sampler's fallback_seed).
  std::optional<uint64_t> seed;
  // -1: no logprobs. N in [0, kMaxLogprobs]: the chosen token's logprob plus the top-N
  // alternatives, all from the raw (unprocessed) logits.
  int32_t logprobs = -1;
  // vLLM's prompt_logprobs: -1 none; N in [0, max_logprobs]: each prompt token's logprob (but the
  // first's) and its rank, plus the top-N alternatives at its position, from the raw logits.
  int32_t prompt_logprobs = -1;

  // --- Stop conditions (StopChecker; EOS/stop ids also masked by Sampler before min_tokens) ---
  int32_t max_tokens = 16;              // >= 1; the engine separately caps it to the context left
  std::vector<std::string> stop;        // non-empty, valid UTF-8; not emitted (see below)
  std::vector<int32_t> stop_token_ids;  // < vocab; end with "stop", their text not emitted
  // vLLM's bad_words: words never generated. The engine tokenizes them (AddRequest, as vLLM:
  // each as written and with a leading space) into bad_words_token_ids; a sequence's last token
  // is masked wherever the output so far ends with the rest of it.
  std::vector<std::string> bad_words;
  std::vector<std::vector<int32_t>> bad_words_token_ids;
  bool ignore_eos = false;
  bool include_stop_str_in_output = false;
  // [0, max_tokens]: EOS, stop_token_ids and stop strings cannot end the sequence before this
  // many tokens have been generated.
  int32_t min_tokens = 0;

  // --- Engine ---
  int32_t n = 1;  // [1, kMaxN] choices; expanded by the engine with ForChoice().
  // Leave special tokens (e.g. <|im_end|>, <|endoftext|>) out of the text (vLLM's default); their
  // ids are in the output either way.
  bool skip_special_tokens = true;

  // OK, or InvalidArgument whose message starts with the offending parameter's JSON name
  // (e.g. "top_p must be in (0, 1], got 0"), so the server can report it as `param`.
  // vocab_size bounds logit_bias and stop_token_ids ids.
  // `max_logprobs`: the most logprobs a request may ask for (the server's --max-logprobs).
  Status Validate(int32_t vocab_size, int32_t max_logprobs = kMaxLogprobs) const;

  bool greedy() const { return temperature < kGreedyTemperature; }
  bool top_k_enabled() const { return top_k > 0; }

  // The parameters for choice `index` of an n > 1 request: n = 1 and, when seeded, seed + index,
  // so the choices differ yet each stays reproducible (as vLLM does).
  SamplingParams ForChoice(int32_t index) const;
};

}  // namespace xinfer
