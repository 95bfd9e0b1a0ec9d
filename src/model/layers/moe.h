// Mixture-of-experts routing as Qwen3-MoE (transformers' Qwen3MoeSparseMoeBlock, vLLM's FusedMoE
// with renormalize = norm_topk_prob): each token's router logits → softmax over the experts →
// the top k (ties to the lower expert index) → their probabilities, renormalized to sum 1 when
// asked. Pure host-side bookkeeping; the experts' matrix products are the decoder's.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace xinfer {

// Tokens grouped by expert: expert e computes rows `tokens[begin[e] .. begin[e + 1])`, each
// token's output scaled by the matching `weights` entry. Within an expert, tokens ascend.
struct MoeRouting {
  std::vector<int32_t> begin;  // num_experts + 1 offsets
  std::vector<int32_t> tokens;
  std::vector<float> weights;
  // RouteTokens' scratch: each token's choices in order, the experts by logit, their softmax.
  std::vector<int32_t> chosen, order, fill;
  std::vector<float> chosen_weight;
  std::vector<double> probs;
};

// `logits`: [num_tokens, num_experts] row-major. `routing` is reused across calls: its vectors
// keep their capacity, so a steady state allocates nothing.
void RouteTokens(std::span<const float> logits, int num_experts, int top_k, bool renormalize,
                 MoeRouting& routing);

}  // namespace xinfer
