// Log-probabilities of raw logits (vLLM's default "raw_logprobs" mode: log_softmax of the model's
// logits before any penalty, bias, temperature or filtering). Pure functions / value types,
// thread-compatible.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace xinfer {

struct TokenLogprob {
  int32_t id;
  float logprob;  // <= 0; -inf for a token with a -inf (or NaN) logit
};

// The log_softmax normalizer of one logits vector, computed once with max subtraction (terms in
// float, summed in double) so that LogProb(x) is exact to float precision for any magnitude of
// logits. The logits must have
// no NaN (see SanitizeLogits). Degenerate inputs are defined, not UB: if some logits are +inf
// those tokens share the whole probability equally; if all are -inf every LogProb is -inf.
class LogSoftmax {
 public:
  explicit LogSoftmax(std::span<const float> logits);
  float LogProb(float logit) const;

 private:
  double max_ = 0.0;
  double log_sum_ = 0.0;  // log(sum(exp(x - max)))
  int64_t num_pos_inf_ = 0;
};

// The `n` most likely tokens of `logits`, by descending logprob, ties → lower id. n <= size.
std::vector<TokenLogprob> TopLogprobs(std::span<const float> logits, int32_t n,
                                      const LogSoftmax& log_softmax);

}  // namespace xinfer
