#include "sampling/logprobs.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "sampling/vocab_math.h"
#include "sampling/vocab_scan.h"

namespace xinfer {

LogSoftmax::LogSoftmax(std::span<const float> logits) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  const float max = scan::Max(logits);  // NaN ignored
  max_ = max;
  if (max == kInf) {
    for (float x : logits) num_pos_inf_ += x == kInf ? 1 : 0;
    return;  // LogProb handles it without the sum
  }
  if (max == -kInf) return;
  // The terms in float through Highway's vector exp (the full-vocabulary pass took ~550 us per
  // step in glibc's scalar double exp), summed in double. -inf and NaN logits contribute
  // exactly 0.
  constexpr size_t kBlock = 256;
  float term[kBlock];
  double partial[8] = {};  // independent chains: one would wait on each add's latency
  for (size_t b = 0; b < logits.size(); b += kBlock) {
    const size_t n = std::min(kBlock, logits.size() - b);
    for (size_t i = 0; i < n; ++i) term[i] = logits[b + i] - max;  // -inf, NaN: exp 0
    vocab::ExpOfNonPositive(term, static_cast<int64_t>(n), term);
    for (size_t i = 0; i < n; ++i) partial[i % 8] += term[i];
  }
  double sum = 0.0;
  for (double p : partial) sum += p;
  log_sum_ = std::log(sum);  // sum >= 1: the max term contributes exp(0)
}

float LogSoftmax::LogProb(float logit) const {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  if (num_pos_inf_ > 0) {
    return logit == std::numeric_limits<float>::infinity()
               ? static_cast<float>(-std::log(static_cast<double>(num_pos_inf_)))
               : kNegInf;
  }
  if (std::isnan(logit) || logit == kNegInf || std::isinf(max_)) return kNegInf;
  return static_cast<float>(static_cast<double>(logit) - max_ - log_sum_);
}

std::vector<TokenLogprob> TopLogprobs(std::span<const float> logits, int32_t n,
                                      const LogSoftmax& log_softmax) {
  const size_t k = std::min(static_cast<size_t>(std::max(n, 0)), logits.size());
  if (k == 0) return {};
  // One pass keeping a small sorted buffer (n <= 20): O(V) for typical logits, no O(V log V) sort.
  // Order: larger logit first, then lower id. A NaN-free input makes this a strict weak order.
  auto better = [](const TokenLogprob& a, const TokenLogprob& b) {
    return a.logprob > b.logprob || (a.logprob == b.logprob && a.id < b.id);
  };
  std::vector<TokenLogprob> best;  // holds raw logits until the end
  best.reserve(k + 1);
  // Once the buffer is full, only a logit above its last one can enter (an equal one has a
  // higher id): a vector scan skips to the next such logit.
  for (size_t i = 0; i < logits.size();
       i = best.size() == k ? scan::FirstAbove(logits, i + 1, best.back().logprob) : i + 1) {
    const TokenLogprob cand{static_cast<int32_t>(i), logits[i]};
    if (best.size() == k && !better(cand, best.back())) continue;
    best.insert(std::upper_bound(best.begin(), best.end(), cand, better), cand);
    if (best.size() > k) best.pop_back();
  }
  for (auto& t : best) t.logprob = log_softmax.LogProb(t.logprob);
  return best;
}

}  // namespace xinfer
