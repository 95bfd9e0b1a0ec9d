#include "sampling/guided_regex.h"

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
    return complete() || WalkTokens(state_, [](int32_t) { return true; });
  }

 private:
  // Calls on_token for every token whose bytes walk the automaton from `state` to a live state
  // (a walk of the vocabulary's trie: a dead prefix skips every token under it); stops early
  // once on_token returns true.
  template <class OnToken>
  bool WalkTokens(int32_t state, OnToken&& on_token) const {
    return vocabulary_->trie().Walk(
        state,
        [&](int32_t from, uint8_t byte, uint32_t, int32_t* next) {
          *next = dfa_->Next(from, byte);
          return *next != RegexDfa::kDead;
        },
        on_token);
  }

  const TokenSet& AllowedAt(int32_t state) const {
    return token_sets_.Get(state, [&] {
      TokenSet allowed((vocabulary_->size() + 63) / 64, 0);
      WalkTokens(state, [&](int32_t id) {
        TokenSetAdd(allowed, static_cast<size_t>(id));
        return false;
      });
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
