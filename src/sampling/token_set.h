// The tokens a guide allows in one state, as one bit per vocabulary id, and a per-sequence cache
// of them keyed by the guide's state: the states of a guided output repeat (between tokens of a
// JSON object, inside its strings, a regex's loops), and a set costs a pass over the whole
// vocabulary to compute but only a pass over the logits to apply.
//
// Owned by one Guide (one sequence); not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

namespace xinfer {

using TokenSet = std::vector<uint64_t>;  // bit id: token id may come next

inline bool TokenSetHas(const TokenSet& set, size_t id) { return (set[id / 64] >> (id % 64)) & 1; }
inline void TokenSetAdd(TokenSet& set, size_t id) { set[id / 64] |= uint64_t{1} << (id % 64); }

// Sets to -inf every logit whose token is not in `allowed` (ids past `vocab_size` too), and the
// end tokens' logits: kept once the guided value is `complete`, masked before (an end token that is
// also text, a client's stop token id, must not end an incomplete value).
inline void ApplyTokenSet(std::span<float> logits, const TokenSet& allowed, size_t vocab_size,
                          bool complete, std::span<const int32_t> end_ids) {
  constexpr float kMasked = -std::numeric_limits<float>::infinity();
  std::vector<std::pair<size_t, float>> ends;
  for (int32_t id : end_ids)
    if (id >= 0 && static_cast<size_t>(id) < logits.size())
      ends.emplace_back(static_cast<size_t>(id), logits[static_cast<size_t>(id)]);
  const size_t n = std::min(logits.size(), vocab_size);
  for (size_t id = 0; id < n; ++id)
    if (!TokenSetHas(allowed, id)) logits[id] = kMasked;
  for (size_t id = n; id < logits.size(); ++id) logits[id] = kMasked;
  for (const auto& [id, logit] : ends) logits[id] = complete ? logit : kMasked;
}

// Token sets by state key; past kMaxStates the cache starts over (~19 KB a set for a 152k
// vocabulary).
template <class Key, class Hash = std::hash<Key>>
class TokenSetCache {
 public:
  static constexpr size_t kMaxStates = 32;

  // The set for `key`, computed by `compute()` (returning a TokenSet) on a miss. The reference is
  // valid until the next call.
  template <class Compute>
  const TokenSet& Get(const Key& key, Compute&& compute) {
    auto it = sets_.find(key);
    if (it != sets_.end()) return it->second;
    if (sets_.size() >= kMaxStates) sets_.clear();
    return sets_.emplace(key, compute()).first->second;
  }

 private:
  std::unordered_map<Key, TokenSet, Hash> sets_;
};

}  // namespace xinfer
