#include "sampling/logprobs.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace xinfer {

LogSoftmax::LogSoftmax(std::span<const float> logits) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  max_ = -kInf;
  for (float x : logits) {
    if (x == std::numeric_limits<float>::infinity()) ++num_pos_inf_;
    max_ = std::max(max_, static_cast<double>(x));
  }
  if (num_pos_inf_ > 0 || max_ == -kInf) return;  // LogProb handles both without the sum
  double sum = 0.0;
  for (float x : logits) sum += std::exp(static_cast<double>(x) - max_);  // exp(-inf) = 0
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
  for (size_t i = 0; i < logits.size(); ++i) {
    const TokenLogprob cand{static_cast<int32_t>(i), logits[i]};
    if (best.size() == k && !better(cand, best.back())) continue;
    best.insert(std::upper_bound(best.begin(), best.end(), cand, better), cand);
    if (best.size() > k) best.pop_back();
  }
  for (auto& t : best) t.logprob = log_softmax.LogProb(t.logprob);
  return best;
}

}  // namespace xinfer
