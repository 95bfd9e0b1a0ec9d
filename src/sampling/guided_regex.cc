#include "sampling/guided_regex.h"

#include <array>
#include <limits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/check.h"

namespace xinfer {
namespace {

class RegexGuide final : public Guide {
 public:
  RegexGuide(std::shared_ptr<const TokenVocabulary> vocabulary, std::shared_ptr<const RegexDfa> dfa)
      : vocabulary_(std::move(vocabulary)), dfa_(std::move(dfa)), state_(dfa_->start()) {
    XI_CHECK(vocabulary_ != nullptr && dfa_ != nullptr);
  }

  Status CatchUp(std::span<const int32_t> output_ids) override {
    const TokenVocabulary& v = *vocabulary_;
    for (; consumed_ < output_ids.size(); ++consumed_) {
      const int32_t id = output_ids[consumed_];
      const bool known = id >= 0 && static_cast<size_t>(id) < v.size() &&
                         !v.bytes(static_cast<size_t>(id)).empty();
      const int32_t next =
          known ? dfa_->Walk(state_, v.bytes(static_cast<size_t>(id))) : RegexDfa::kDead;
      if (next == RegexDfa::kDead)
        return InvalidArgument("output token {} does not continue the guided output", id);
      state_ = next;
    }
    return Status::Ok();
  }

  void Mask(std::span<float> logits, std::span<const int32_t> end_ids) const override {
    constexpr float kMasked = -std::numeric_limits<float>::infinity();
    const bool complete = dfa_->accepting(state_);
    std::vector<std::pair<int32_t, float>> ends;
    if (complete)
      for (int32_t id : end_ids)
        if (id >= 0 && static_cast<size_t>(id) < logits.size())
          ends.emplace_back(id, logits[static_cast<size_t>(id)]);
    const std::vector<uint64_t>& allowed = AllowedAt(state_);
    const size_t n = std::min(logits.size(), vocabulary_->size());
    for (size_t id = 0; id < n; ++id)
      if (!((allowed[id / 64] >> (id % 64)) & 1)) logits[id] = kMasked;
    for (size_t id = n; id < logits.size(); ++id) logits[id] = kMasked;
    // The end tokens: allowed once the output is a whole match, masked before (a stop token id
    // that is also text must not end it early).
    for (int32_t id : end_ids)
      if (id >= 0 && static_cast<size_t>(id) < logits.size())
        logits[static_cast<size_t>(id)] = kMasked;
    for (const auto& [id, logit] : ends) logits[static_cast<size_t>(id)] = logit;
  }

  bool complete() const override { return dfa_->accepting(state_); }

  bool CanBegin() const override {
    if (complete()) return true;
    for (uint64_t word : AllowedAt(state_))
      if (word != 0) return true;
    return false;
  }

 private:
  // At most this many states' token sets are kept per sequence (~19 KB each for a 152k
  // vocabulary); past it the cache starts over.
  static constexpr size_t kMaxCachedStates = 32;

  // Bit id set when token id can come in `state`.
  const std::vector<uint64_t>& AllowedAt(int32_t state) const {
    auto it = allowed_.find(state);
    if (it != allowed_.end()) return it->second;
    if (allowed_.size() >= kMaxCachedStates) allowed_.clear();
    const TokenVocabulary& v = *vocabulary_;
    std::array<int32_t, 256> after_first;
    for (int b = 0; b < 256; ++b)
      after_first[static_cast<size_t>(b)] = dfa_->Next(state, static_cast<uint8_t>(b));
    std::vector<uint64_t> bits((v.size() + 63) / 64, 0);
    for (size_t id = 0; id < v.size(); ++id) {
      const std::string& bytes = v.bytes(id);
      if (bytes.empty()) continue;
      const int32_t s = after_first[static_cast<uint8_t>(bytes[0])];
      if (s == RegexDfa::kDead) continue;
      if (dfa_->Walk(s, std::string_view(bytes).substr(1)) != RegexDfa::kDead)
        bits[id / 64] |= uint64_t{1} << (id % 64);
    }
    return allowed_.emplace(state, std::move(bits)).first->second;
  }

  std::shared_ptr<const TokenVocabulary> vocabulary_;
  std::shared_ptr<const RegexDfa> dfa_;
  int32_t state_;
  size_t consumed_ = 0;  // output tokens walked
  mutable std::unordered_map<int32_t, std::vector<uint64_t>> allowed_;
};

}  // namespace

std::unique_ptr<Guide> NewRegexGuide(std::shared_ptr<const TokenVocabulary> vocabulary,
                                     std::shared_ptr<const RegexDfa> dfa) {
  return std::make_unique<RegexGuide>(std::move(vocabulary), std::move(dfa));
}

}  // namespace xinfer
