#include "sampling/logits_filters.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "sampling/vocab_math.h"
#include "sampling/vocab_scan.h"

namespace xinfer {
namespace {

bool HigherLogit(const Candidate& a, const Candidate& b) {
  return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}

bool HigherWeight(const Candidate& a, const Candidate& b) {
  return a.weight > b.weight || (a.weight == b.weight && a.id < b.id);
}

// Relative slack when comparing a cumulative probability with top_p (see header).
constexpr double kTopPSlack = 1e-6;

// ApplyTopP buckets weights (in (0, 1], the max being 1) by binary exponent and the top 4 mantissa
// bits: 16 buckets per octave down to 2^-64, plus one bucket for everything lighter (whose total
// mass, < V * 2^-64, is far below the top_p slack). A bucket index never increases with weight.
constexpr int kTopPOctaves = 64;
constexpr size_t kTopPBuckets = kTopPOctaves * 16 + 1;

size_t TopPBucket(double weight) {
  const auto bits = std::bit_cast<uint64_t>(weight);
  const int64_t octave = 1023 - static_cast<int64_t>(bits >> 52);  // 0 for [1, 2)
  if (octave < 0) return 0;  // weight > 1 cannot happen after ComputeWeights; be total anyway
  if (octave >= kTopPOctaves) return kTopPBuckets - 1;
  const auto mantissa4 = static_cast<size_t>((bits >> 48) & 0xF);
  return static_cast<size_t>(octave) * 16 + (15 - mantissa4);
}

// Given that [0, lo) holds the heaviest lo candidates (mass `acc` < threshold) and [lo, hi) the
// next ones, returns the smallest m in (lo, hi] whose top-m mass reaches the threshold (hi if
// none), leaving the top m in [0, m). Bisection with nth_element: expected O(hi - lo), no sort.
size_t KeepWithinBoundary(std::vector<Candidate>& c, size_t lo, size_t hi, double acc,
                          double threshold) {
  // Invariant: [0, lo) is the top lo with mass acc < threshold; the answer is in (lo, hi].
  while (hi - lo > 1) {
    const size_t mid = lo + (hi - lo) / 2;
    std::nth_element(c.begin() + static_cast<ptrdiff_t>(lo),
                     c.begin() + static_cast<ptrdiff_t>(mid),
                     c.begin() + static_cast<ptrdiff_t>(hi), HigherWeight);
    double sum = acc;
    for (size_t i = lo; i < mid; ++i) sum += c[i].weight;
    if (sum >= threshold) {
      hi = mid;
    } else {
      acc = sum;
      lo = mid;
    }
  }
  return hi;
}

// Weight mass per TopPBucket in kChains tables, a token's chain by its id (most of a vocabulary
// falls into a few light buckets: one table waited on every add to the same bucket; by id, so
// that DrawNucleus, which also adds the zero weights of non-candidates, gets ApplyTopP's sums).
constexpr size_t kChains = 4;
using BucketChains = std::array<std::array<double, kTopPBuckets>, kChains>;
void AddToChains(BucketChains& chains, int32_t id, double weight) {
  chains[static_cast<size_t>(id) % kChains][TopPBucket(weight)] += weight;
}

struct TopPCut {
  size_t boundary;   // the bucket in which the cumulative mass reaches the threshold
  double before;     // the mass of all heavier buckets, which are kept whole
  double threshold;  // (top_p - slack) x total
};
TopPCut CutFromChains(const BucketChains& chains, float top_p) {
  std::array<double, kTopPBuckets> mass{};
  double total = 0.0;
  for (size_t b = 0; b < kTopPBuckets; ++b) {
    mass[b] = (chains[0][b] + chains[1][b]) + (chains[2][b] + chains[3][b]);
    total += mass[b];
  }
  TopPCut cut{kTopPBuckets - 1, 0.0, (static_cast<double>(top_p) - kTopPSlack) * total};
  for (size_t b = 0; b < kTopPBuckets; ++b) {
    if (cut.before + mass[b] >= cut.threshold) {
      cut.boundary = b;
      break;
    }
    cut.before += mass[b];
  }
  return cut;
}

// c: exactly the candidates of the buckets up to cut.boundary. Leaves the nucleus: the heavier
// buckets whole, then the fewest of the boundary bucket's heaviest that reach the threshold.
void KeepNucleus(std::vector<Candidate>& c, const TopPCut& cut) {
  const auto heavy_end = std::partition(c.begin(), c.end(), [&cut](const Candidate& x) {
    return TopPBucket(x.weight) < cut.boundary;
  });
  const auto lo = static_cast<size_t>(heavy_end - c.begin());
  const size_t hi = c.size();
  if (hi == lo) {  // only via rounding in the sums: keep everything that is left
    c.resize(std::max<size_t>(lo, 1));
    return;
  }
  c.resize(KeepWithinBoundary(c, lo, hi, cut.before, cut.threshold));
}

// ComputeWeights' arithmetic on every token of the vocabulary, in place: weights[i] for the
// token with logits[i], 0 for those that are not candidates (-inf or NaN: 0 changes no sum and
// DrawToken skips it). max_logit: the largest finite logit.
void WeightsOfVocabulary(std::span<const float> logits, float max_logit, float temperature,
                         std::vector<float>& weights) {
  const float inv_t = 1.0f / temperature;
  weights.resize(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) weights[i] = (logits[i] - max_logit) * inv_t;
  // -inf and NaN logits give -inf / NaN exponents, whose exp is exactly 0.
  vocab::ExpOfNonPositive(weights.data(), static_cast<int64_t>(weights.size()), weights.data());
}

}  // namespace

void CollectCandidates(std::span<const float> logits, std::vector<Candidate>& out) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  if (scan::Max(logits) < kInf) {
    // No +inf (the usual case): every logit above -inf, written without a branch per logit.
    out.resize(logits.size());
    size_t kept = 0;
    for (size_t i = 0; i < logits.size(); ++i) {
      out[kept] = {static_cast<int32_t>(i), logits[i], 0.0};
      kept += logits[i] > -kInf ? 1 : 0;  // also 0 for NaN
    }
    out.resize(kept);
    return;
  }
  out.clear();
  bool any_pos_inf = false;
  for (size_t i = 0; i < logits.size(); ++i) {
    const float x = logits[i];
    if (x == kInf) {
      if (!any_pos_inf) out.clear();  // finite candidates so far carry no probability
      any_pos_inf = true;
      out.push_back({static_cast<int32_t>(i), 0.0f, 0.0});
    } else if (!any_pos_inf && x > -kInf) {  // also false for NaN
      out.push_back({static_cast<int32_t>(i), x, 0.0});
    }
  }
}

void CollectTopK(std::span<const float> logits, int32_t k, std::vector<Candidate>& out) {
  const size_t keep = k > 0 ? static_cast<size_t>(k) : 0;
  if (keep == 0 || keep >= logits.size()) {
    CollectCandidates(logits, out);
    return;
  }
  out.clear();
  // A logit <= the keep-th best kept so far can never make the top k: those kept are as high or
  // higher, and an equal one has a lower id. So only logits above that bar are appended (a vector
  // scan skips the rest), and the list is cut back to the top k whenever it doubles.
  const size_t cap = std::max<size_t>(2 * keep, 64);
  float bar = -std::numeric_limits<float>::infinity();
  for (size_t i = scan::FirstAbove(logits, 0, bar); i < logits.size();
       i = scan::FirstAbove(logits, i + 1, bar)) {
    const float x = logits[i];
    if (std::isinf(x)) {  // +inf: CollectCandidates' limit-of-softmax rule decides
      CollectCandidates(logits, out);
      ApplyTopK(out, k);
      std::sort(out.begin(), out.end(), HigherLogit);
      return;
    }
    out.push_back({static_cast<int32_t>(i), x, 0.0});
    if (out.size() == cap) {
      std::nth_element(out.begin(), out.begin() + static_cast<ptrdiff_t>(keep - 1), out.end(),
                       HigherLogit);
      out.resize(keep);
      bar = out[keep - 1].logit;  // the lowest of the top k (nth_element put it there)
    }
  }
  ApplyTopK(out, k);
  std::sort(out.begin(), out.end(), HigherLogit);
}

void ApplyTopK(std::vector<Candidate>& c, int32_t k) {
  if (k <= 0 || static_cast<size_t>(k) >= c.size()) return;
  std::nth_element(c.begin(), c.begin() + k, c.end(), HigherLogit);
  c.resize(static_cast<size_t>(k));
}

void ComputeWeights(std::vector<Candidate>& c, float temperature) {
  float max_logit = -std::numeric_limits<float>::infinity();
  for (const auto& x : c) max_logit = std::max(max_logit, x.logit);
  // In float, as vLLM's softmax is, and in blocks through Highway's vector exp: the logits carry
  // float rounding already, and all 152K weights of an unfiltered draw took ~550 us in glibc's
  // scalar double exp. Sums over the weights stay in double.
  const float inv_t = 1.0f / temperature;
  constexpr size_t kBlock = 256;
  float exponent[kBlock];
  for (size_t b = 0; b < c.size(); b += kBlock) {
    const size_t n = std::min(kBlock, c.size() - b);
    for (size_t i = 0; i < n; ++i) exponent[i] = (c[b + i].logit - max_logit) * inv_t;
    vocab::ExpOfNonPositive(exponent, static_cast<int64_t>(n), exponent);
    for (size_t i = 0; i < n; ++i) c[b + i].weight = exponent[i];
  }
}

void ApplyTopP(std::vector<Candidate>& c, float top_p) {
  if (top_p >= 1.0f || c.size() <= 1) return;
  if (static_cast<double>(top_p) - kTopPSlack <= 0.0) {  // within the slack of 0: the top token
    std::nth_element(c.begin(), c.begin(), c.end(), HigherWeight);
    c.resize(1);
    return;
  }
  BucketChains chains{};
  for (const Candidate& x : c) AddToChains(chains, x.id, x.weight);
  const TopPCut cut = CutFromChains(chains, top_p);
  // The heavier and the boundary buckets' candidates moved to the front, in order (usually a few
  // of the vocabulary); the lighter ones are dropped.
  size_t kept = 0;
  for (size_t i = 0; i < c.size(); ++i)
    if (TopPBucket(c[i].weight) <= cut.boundary) c[kept++] = c[i];
  c.resize(kept);
  KeepNucleus(c, cut);
}

void ApplyMinP(std::vector<Candidate>& c, float min_p) {
  if (min_p <= 0.0f || c.empty()) return;
  double max_weight = 0.0;
  for (const auto& x : c) max_weight = std::max(max_weight, x.weight);
  const double threshold = static_cast<double>(min_p) * max_weight;
  std::erase_if(c, [threshold](const Candidate& x) { return x.weight < threshold; });
}

int32_t DrawUnfiltered(std::span<const float> logits, float temperature, float min_p, double u,
                       std::vector<float>& weights) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  const float max_logit = scan::Max(logits);
  if (max_logit == kInf || max_logit == -kInf) {  // +inf's limit rule, or nothing to draw
    std::vector<Candidate> c;
    CollectCandidates(logits, c);
    ComputeWeights(c, temperature);
    ApplyMinP(c, min_p);
    return DrawToken(c, u);
  }
  // Every token's weight (0 for non-candidates and, with min_p, for those ApplyMinP drops: 0
  // changes no sum), then DrawToken's double sums in id order, which is the candidates' order:
  // the same token for the same u.
  WeightsOfVocabulary(logits, max_logit, temperature, weights);
  if (min_p > 0.0f) {
    float max_weight = 0.0f;
    for (float w : weights) max_weight = std::max(max_weight, w);
    const double threshold = static_cast<double>(min_p) * max_weight;
    for (float& w : weights)
      if (w < threshold) w = 0.0f;
  }
  double total = 0.0;
  for (float w : weights) total += w;
  const double target = u * total;
  double cum = 0.0;
  int32_t last_positive = -1;
  for (size_t i = 0; i < weights.size(); ++i) {
    if (weights[i] <= 0.0f) continue;
    cum += weights[i];
    last_positive = static_cast<int32_t>(i);
    if (cum > target) return last_positive;
  }
  return last_positive;
}

int32_t DrawNucleus(std::span<const float> logits, float temperature, float top_p, double u,
                    std::vector<float>& weights, std::vector<Candidate>& nucleus) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  const float max_logit = scan::Max(logits);
  if (max_logit == kInf || max_logit == -kInf || top_p >= 1.0f ||
      static_cast<double>(top_p) - kTopPSlack <= 0.0) {  // the rare cases: the candidate path
    CollectCandidates(logits, nucleus);
    ComputeWeights(nucleus, temperature);
    ApplyTopP(nucleus, top_p);
    return DrawToken(nucleus, u);
  }
  // Every token's weight (0 for non-candidates), then ApplyTopP's sums and cut; only the candidates
  // up to the boundary bucket are listed, in id order as CollectCandidates has them, so the nucleus
  // and its order are ApplyTopP's.
  WeightsOfVocabulary(logits, max_logit, temperature, weights);
  BucketChains chains{};
  for (size_t i = 0; i < weights.size(); ++i)
    AddToChains(chains, static_cast<int32_t>(i), weights[i]);
  const TopPCut cut = CutFromChains(chains, top_p);
  nucleus.clear();
  for (size_t i = 0; i < logits.size(); ++i) {
    if (logits[i] > -kInf && TopPBucket(weights[i]) <= cut.boundary)
      nucleus.push_back({static_cast<int32_t>(i), logits[i], weights[i]});
  }
  if (nucleus.size() > 1) KeepNucleus(nucleus, cut);  // ApplyTopP leaves a single one alone
  return DrawToken(nucleus, u);
}

int32_t DrawToken(std::span<const Candidate> c, double u) {
  double total = 0.0;
  for (const auto& x : c) total += x.weight;
  const double target = u * total;
  double cum = 0.0;
  int32_t last_positive = -1;
  for (const auto& x : c) {
    if (x.weight <= 0.0) continue;
    cum += x.weight;
    last_positive = x.id;
    if (cum > target) return x.id;
  }
  // Only reachable through rounding (target within an ulp of total): the last live candidate.
  return last_positive >= 0 ? last_positive : (c.empty() ? -1 : c.back().id);
}

}  // namespace xinfer
