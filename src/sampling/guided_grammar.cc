#include "sampling/guided_grammar.h"

#include <string>
#include <utility>

#include "base/check.h"
#include "base/logging.h"
#include "sampling/grammar_matcher.h"
#include "sampling/token_set.h"

namespace xinfer {
namespace {

class GrammarGuide final : public Guide {
 public:
  GrammarGuide(std::shared_ptr<const TokenVocabulary> vocabulary,
               std::shared_ptr<const Grammar> grammar)
      : vocabulary_(std::move(vocabulary)), grammar_(std::move(grammar)), matcher_(grammar_.get()) {
    XI_CHECK(vocabulary_ != nullptr);
  }

  Status CatchUp(std::span<const int32_t> output_ids) override {
    for (; consumed_ < output_ids.size(); ++consumed_) {
      const int32_t id = output_ids[consumed_];
      const std::string* bytes = vocabulary_->output_bytes(id);
      if (bytes == nullptr || !matcher_.Advance(*bytes))
        return InvalidArgument("output token {} does not continue the guided output", id);
    }
    return Status::Ok();
  }

  void Mask(std::span<float> logits, std::span<const int32_t> end_ids) const override {
    state_key_.clear();
    matcher_.AppendStateKey(&state_key_);
    const TokenSet& allowed = token_sets_.Get(state_key_, [&] {
      TokenSet set((vocabulary_->size() + 63) / 64, 0);
      size_t allowed = 0;
      matcher_.WalkTokens(vocabulary_->trie(), [&](int32_t id) {
        TokenSetAdd(set, static_cast<size_t>(id));
        ++allowed;
        return false;
      });
      if (matcher_.last_walk_cut())
        XI_LOG_WARN(
            "guided_grammar: this grammar costs more than {} expansion steps to find the tokens "
            "of one state; {} tokens found by then are allowed, the rest are not tried",
            GrammarMatcher::kMaxWalkSteps, allowed);
      return set;
    });
    ApplyTokenSet(logits, allowed, vocabulary_->size(), complete(), end_ids);
  }

  bool complete() const override { return matcher_.complete(); }

  // Stops at the first token that can come.
  bool CanBegin() const override {
    return complete() || matcher_.WalkTokens(vocabulary_->trie(), [](int32_t) { return true; });
  }

 private:
  std::shared_ptr<const TokenVocabulary> vocabulary_;
  std::shared_ptr<const Grammar> grammar_;  // matcher_ borrows it
  GrammarMatcher matcher_;
  size_t consumed_ = 0;                            // output tokens fed to matcher_
  mutable TokenSetCache<std::string> token_sets_;  // by matcher_.AppendStateKey
  mutable std::string state_key_;
};

}  // namespace

std::unique_ptr<Guide> NewGrammarGuide(std::shared_ptr<const TokenVocabulary> vocabulary,
                                       std::shared_ptr<const Grammar> grammar) {
  return std::make_unique<GrammarGuide>(std::move(vocabulary), std::move(grammar));
}

}  // namespace xinfer
