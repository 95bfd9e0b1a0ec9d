#include "sampling/guided_regex.h"

#include <array>
#include <utility>
#include <vector>

#include "base/check.h"
#include "sampling/token_set.h"

namespace xinfer {
namespace {

class RegexGuide final : public Guide {
 public:
  RegexGuide(std::shared_ptr<const TokenVocabulary> vocabulary, std::shared_ptr<const RegexDfa> dfa)
      : vocabulary_(std::move(vocabulary)), dfa_(std::move(dfa)), state_(dfa_->start()) {
    XI_CHECK(vocabulary_ != nullptr && dfa_ != nullptr);
  }

  Status CatchUp(std::span<const int32_t> output_ids) override {
    for (; consumed_ < output_ids.size(); ++consumed_) {
      const int32_t id = output_ids[consumed_];
      const std::string* bytes = vocabulary_->output_bytes(id);
      const int32_t next = bytes != nullptr ? dfa_->Walk(state_, *bytes) : RegexDfa::kDead;
      if (next == RegexDfa::kDead)
        return InvalidArgument("output token {} does not continue the guided output", id);
      state_ = next;
    }
    return Status::Ok();
  }

  void Mask(std::span<float> logits, std::span<const int32_t> end_ids) const override {
    ApplyTokenSet(logits, AllowedAt(state_), vocabulary_->size(), complete(), end_ids);
  }

  bool complete() const override { return dfa_->accepting(state_); }

  // Stops at the first token that can come (the engine asks once per request, before any
  // sampler computes the whole set).
  bool CanBegin() const override {
    if (complete()) return true;
    const TokenVocabulary& v = *vocabulary_;
    for (size_t id = 0; id < v.size(); ++id)
      if (!v.bytes(id).empty() && dfa_->Walk(state_, v.bytes(id)) != RegexDfa::kDead) return true;
    return false;
  }

 private:
  // The tokens whose bytes walk the automaton from `state` to a live state.
  const TokenSet& AllowedAt(int32_t state) const {
    return token_sets_.Get(state, [&] {
      const TokenVocabulary& v = *vocabulary_;
      std::array<int32_t, 256> after_first;
      for (int b = 0; b < 256; ++b)
        after_first[static_cast<size_t>(b)] = dfa_->Next(state, static_cast<uint8_t>(b));
      TokenSet allowed((v.size() + 63) / 64, 0);
      for (size_t id = 0; id < v.size(); ++id) {
        const std::string& bytes = v.bytes(id);
        if (bytes.empty()) continue;
        const int32_t s = after_first[static_cast<uint8_t>(bytes[0])];
        if (s != RegexDfa::kDead &&
            dfa_->Walk(s, std::string_view(bytes).substr(1)) != RegexDfa::kDead)
          TokenSetAdd(allowed, id);
      }
      return allowed;
    });
  }

  std::shared_ptr<const TokenVocabulary> vocabulary_;
  std::shared_ptr<const RegexDfa> dfa_;
  int32_t state_;
  size_t consumed_ = 0;                        // output tokens walked
  mutable TokenSetCache<int32_t> token_sets_;  // by automaton state
};

}  // namespace

std::unique_ptr<Guide> NewRegexGuide(std::shared_ptr<const TokenVocabulary> vocabulary,
                                     std::shared_ptr<const RegexDfa> dfa) {
  return std::make_unique<RegexGuide>(std::move(vocabulary), std::move(dfa));
}

}  // namespace xinfer
