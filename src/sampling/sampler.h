// Sampler: turns one sequence's last-position logits into its next token.
//
// One Sampler per sequence (per choice of an n > 1 request), created from validated
// SamplingParams. Randomness is counter-based (counter_rng.h): the draw at step t depends only
// on (seed, t), with t = output_ids.size(), so a sequence's tokens are reproducible from its seed
// and logits whatever else is in the batch, and greedy decoding uses no randomness at all.
//
// Thread-safety: a Sampler is not thread-safe, but distinct Samplers may run on distinct threads
// concurrently (large scratch buffers are thread_local, not per-Sampler, so thousands of live
// sequences do not each hold vocab-sized buffers).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "base/status.h"
#include "sampling/guided_json.h"
#include "sampling/logits_processors.h"
#include "sampling/logprobs.h"
#include "sampling/sampling_params.h"

namespace xinfer {

struct SampleResult {
  int32_t token = -1;
  // Raw logprob (log_softmax of the unprocessed logits) of `token`; filled only when
  // params.logprobs >= 0, else 0. May be -inf (e.g. a token forced by logit_bias that the model
  // gave -inf); the server must map non-finite values before writing JSON.
  float logprob = 0.0f;
  // The params.logprobs most likely tokens under the raw logits, descending, ties → lower id.
  std::vector<TokenLogprob> top_logprobs;
};

class Sampler {
 public:
  // `params` must have passed Validate(). `eos_token_ids`: the model's end-of-sequence ids, masked
  // (with params.stop_token_ids) while the output is shorter than min_tokens, unless ignore_eos.
  // `fallback_seed`: used when params.seed is absent; the engine should pass a fresh random value
  // per sequence.
  // `vocabulary`: the tokens' bytes, required when params.guided is set (shared, read-only).
  Sampler(const SamplingParams& params, std::vector<int32_t> eos_token_ids, uint64_t fallback_seed,
          std::shared_ptr<const TokenVocabulary> vocabulary = nullptr);

  // Picks the next token. `logits`: the model's raw last-position logits for this sequence
  // (vocab-sized); used as scratch and left processed. `prompt_ids`: the sequence's prompt, the
  // same on every call. `output_ids`: the tokens generated so far, append-only across calls.
  //
  // Order (as vLLM): NaN → -inf; raw logprobs; allowed_token_ids; logit_bias; repetition,
  // presence, frequency penalties; min_tokens masking; the guided-decoding mask (a complete guided
  // value that nothing can continue ends even before min_tokens); then greedy
  // argmax, or temperature, top-k, top-p, min-p and an inverse-CDF draw.
  //
  // Errors (never a crash): InvalidArgument if a prompt/output/logit_bias id is outside the
  // logits; Internal if no token is left with a finite logit (e.g. all-NaN model output).
  StatusOr<SampleResult> Sample(std::span<float> logits, std::span<const int32_t> prompt_ids,
                                std::span<const int32_t> output_ids);

  // The logit-level half of Sample (bias, penalties, min_tokens masking), in place. Public so the
  // exact effect of each parameter on the logits can be tested; Sample() calls it.
  Status ProcessLogits(std::span<float> logits, std::span<const int32_t> prompt_ids,
                       std::span<const int32_t> output_ids);

  uint64_t seed() const { return seed_; }
  const SamplingParams& params() const { return params_; }

 private:
  // Sorted unique prompt ids, computed once (the prompt is fixed for the sequence's life).
  Status CachePromptIds(std::span<const int32_t> prompt_ids, int32_t vocab_size);

  SamplingParams params_;
  std::vector<int32_t> eos_token_ids_;
  uint64_t seed_;
  bool prompt_cached_ = false;
  size_t prompt_cached_size_ = 0;
  std::vector<int32_t> prompt_unique_;
  TokenCounter output_counts_;
  std::unique_ptr<Guide> guided_;  // params.guided set
};

}  // namespace xinfer
