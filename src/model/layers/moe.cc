#include "model/layers/moe.h"

#include <algorithm>
#include <cmath>

#include "base/check.h"

namespace xinfer {

void RouteTokens(std::span<const float> logits, int num_experts, int top_k, bool renormalize,
                 MoeRouting& routing) {
  XI_CHECK(num_experts > 0 && top_k >= 1 && top_k <= num_experts);
  XI_CHECK(logits.size() % static_cast<size_t>(num_experts) == 0);
  const int64_t num_tokens = static_cast<int64_t>(logits.size()) / num_experts;
  // Each token's choice first (expert, weight), then counted into per-expert runs.
  std::vector<int32_t>& chosen = routing.chosen;
  std::vector<float>& chosen_weight = routing.chosen_weight;
  std::vector<int32_t>& order = routing.order;
  std::vector<double>& probs = routing.probs;
  chosen.resize(static_cast<size_t>(num_tokens * top_k));
  chosen_weight.resize(chosen.size());
  order.resize(num_experts);
  probs.resize(num_experts);
  for (int64_t t = 0; t < num_tokens; ++t) {
    const float* row = logits.data() + t * num_experts;
    const float max = *std::max_element(row, row + num_experts);
    double sum = 0;
    for (int e = 0; e < num_experts; ++e)
      sum += probs[e] = std::exp(static_cast<double>(row[e]) - max);
    for (int e = 0; e < num_experts; ++e) order[e] = e;
    std::partial_sort(order.begin(), order.begin() + top_k, order.end(),
                      [&](int a, int b) { return row[a] > row[b] || (row[a] == row[b] && a < b); });
    double kept = 0;
    for (int k = 0; k < top_k; ++k) kept += probs[order[k]];
    const double scale = renormalize ? 1 / kept : 1 / sum;
    for (int k = 0; k < top_k; ++k) {
      chosen[t * top_k + k] = order[k];
      chosen_weight[t * top_k + k] = static_cast<float>(probs[order[k]] * scale);
    }
  }
  routing.begin.assign(num_experts + 1, 0);
  for (int32_t e : chosen) ++routing.begin[e + 1];
  for (int e = 0; e < num_experts; ++e) routing.begin[e + 1] += routing.begin[e];
  routing.tokens.resize(chosen.size());
  routing.weights.resize(chosen.size());
  std::vector<int32_t>& fill = routing.fill;
  fill.assign(routing.begin.begin(), routing.begin.end() - 1);
  for (int64_t i = 0; i < static_cast<int64_t>(chosen.size()); ++i) {
    const int32_t slot = fill[chosen[i]]++;
    routing.tokens[slot] = static_cast<int32_t>(i / top_k);
    routing.weights[slot] = chosen_weight[i];
  }
}

}  // namespace xinfer
