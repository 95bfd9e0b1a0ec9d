// Candidate-level steps of random sampling: temperature, top-k, top-p, min-p and the draw itself.
// They work on a compact candidate list rather than the full vocab-sized logits so that filters
// which shrink the set make later steps cheaper, and so that no step needs an O(V log V) sort of
// the whole vocabulary. Pure functions over caller-owned vectors; thread-compatible.
//
// Ordering used wherever ties matter: higher logit/weight first, then lower token id. This makes
// every result a deterministic function of the logits.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace xinfer {

struct Candidate {
  int32_t id;
  float logit;    // processed logit (after bias/penalties), finite
  double weight;  // unnormalized probability, set by ComputeWeights
};

// Replaces `out` with every token whose logit is not -inf (NaN must be sanitized already). If any
// logit is +inf, only those tokens become candidates, with logit 0: the limit of softmax, where
// they share all probability. An empty result means nothing can be sampled.
void CollectCandidates(std::span<const float> logits, std::vector<Candidate>& out);

// CollectCandidates then ApplyTopK, in one pass that never materializes the whole vocabulary:
// for k > 0 the same k candidates, sorted by logit (ties → lower id); k <= 0 or k >= the
// vocabulary: exactly CollectCandidates. Expected O(V) with a vector scan; ~40x faster than the
// two steps at V = 152K, k = 20 (the per-step cost of Qwen's default top_k).
void CollectTopK(std::span<const float> logits, int32_t k, std::vector<Candidate>& out);

// Keeps exactly the k highest logits (ties → lower id). k <= 0 or k >= size: no-op. O(n).
void ApplyTopK(std::vector<Candidate>& c, int32_t k);

// weight = exp((logit - max_logit) / temperature), temperature > 0, computed in float (about
// 1 ulp; exactly 0 where the exponent is below log(FLT_MIN), about -87.3). The max subtraction
// keeps the largest weight at exactly 1, so no overflow for any temperature.
void ComputeWeights(std::vector<Candidate>& c, float temperature);

// Keeps the smallest highest-weight prefix whose cumulative probability reaches top_p (always at
// least one token). A cumulative probability within 1e-6 of top_p counts as reaching it, so float
// rounding (0.8f is 0.800000012) does not pull in an extra token. Expected cost O(n) (bisection
// with nth_element; nothing is sorted). The kept candidates are left in unspecified order.
void ApplyTopP(std::vector<Candidate>& c, float top_p);

// Keeps candidates with weight >= min_p * max weight (the max itself always survives).
void ApplyMinP(std::vector<Candidate>& c, float min_p);

// Inverse-CDF draw: the candidate at which the running weight sum first exceeds u * total,
// u in [0, 1). Zero-weight candidates are never chosen. Returns -1 only for an empty list.
int32_t DrawToken(std::span<const Candidate> c, double u);

// A draw with temperature, min_p (0: off) and no top_k or top_p: the token that
// CollectCandidates, ComputeWeights, ApplyMinP and DrawToken give for the same u, bit for bit,
// without the candidate list (~3x faster over 152K logits). `weights`: caller-owned scratch.
int32_t DrawUnfiltered(std::span<const float> logits, float temperature, float min_p, double u,
                       std::vector<float>& weights);

// A draw with temperature and top_p < 1 but no top_k or min_p: the token that CollectCandidates,
// ComputeWeights, ApplyTopP and DrawToken give for the same u, bit for bit, listing only the
// candidates near the nucleus. `weights` and `nucleus`: caller-owned scratch.
int32_t DrawNucleus(std::span<const float> logits, float temperature, float top_p, double u,
                    std::vector<float>& weights, std::vector<Candidate>& nucleus);

}  // namespace xinfer
