#include "sampling/guided_json.h"

#include <algorithm>
#include <array>
#include <limits>
#include <utility>

#include "base/check.h"
#include "sampling/guided_grammar.h"
#include "sampling/guided_regex.h"
#include "sampling/json_matcher.h"
#include "sampling/schema_matcher.h"
#include "sampling/token_set.h"

namespace xinfer {

TokenVocabulary::TokenVocabulary(std::vector<std::string> bytes)
    : bytes_(std::move(bytes)),
      first_byte_(bytes_.size(), 0),
      plain_string_text_(bytes_.size(), 0) {
  for (size_t id = 0; id < bytes_.size(); ++id) {
    const std::string& b = bytes_[id];
    if (b.empty()) continue;
    first_byte_[id] = static_cast<uint8_t>(b[0]);
    // Whole characters that leave a matcher inside a string still inside it, between characters.
    JsonMatcher m;
    plain_string_text_[id] = m.Advance("{\"") && m.Advance(b) && m.in_string() &&
                             b.find_first_of("\"\\") == std::string::npos;
  }
}

const TokenTrie& TokenVocabulary::trie() const {
  std::call_once(trie_once_, [this] { trie_ = std::make_unique<const TokenTrie>(bytes_); });
  return *trie_;
}

namespace {

// The mask over any matcher with Advance(byte), Advance(bytes), complete() and in_string() (free
// string content between characters), copied to try each token.
template <class Matcher>
class MatcherGuide final : public Guide {
 public:
  MatcherGuide(std::shared_ptr<const TokenVocabulary> vocabulary, Matcher matcher)
      : vocabulary_(std::move(vocabulary)), matcher_(std::move(matcher)) {
    XI_CHECK(vocabulary_ != nullptr);
  }

  Status CatchUp(std::span<const int32_t> output_ids) override;
  void Mask(std::span<float> logits, std::span<const int32_t> end_ids) const override;
  bool complete() const override { return matcher_.complete(); }
  bool CanBegin() const override {
    const TokenVocabulary& v = *vocabulary_;
    for (size_t id = 0; id < v.size(); ++id) {
      const std::string& b = v.bytes(id);
      if (b.find_first_not_of(" \t\n\r") == std::string::npos) continue;  // empty or whitespace
      Matcher m = matcher_;
      if (m.Advance(b)) return true;
    }
    return false;
  }

 private:
  // The tokens allowed in matcher_'s state, every token tried.
  TokenSet Allowed() const;

  std::shared_ptr<const TokenVocabulary> vocabulary_;
  Matcher matcher_;
  size_t consumed_ = 0;                            // output tokens fed to matcher_
  mutable TokenSetCache<std::string> token_sets_;  // by matcher_.AppendStateKey
  mutable std::string state_key_;
};

// Holds the schema the matcher borrows.
class SchemaGuide final : public Guide {
 public:
  SchemaGuide(std::shared_ptr<const TokenVocabulary> vocabulary,
              std::shared_ptr<const JsonSchema> schema, bool whitespace)
      : schema_(std::move(schema)),
        guide_(std::move(vocabulary), MatcherOf(schema_.get(), whitespace)) {}
  Status CatchUp(std::span<const int32_t> output_ids) override {
    return guide_.CatchUp(output_ids);
  }
  void Mask(std::span<float> logits, std::span<const int32_t> end_ids) const override {
    guide_.Mask(logits, end_ids);
  }
  bool complete() const override { return guide_.complete(); }
  bool CanBegin() const override { return guide_.CanBegin(); }

 private:
  static SchemaMatcher MatcherOf(const JsonSchema* schema, bool whitespace) {
    SchemaMatcher m(schema);
    m.set_whitespace_allowed(whitespace);
    return m;
  }

  std::shared_ptr<const JsonSchema> schema_;
  MatcherGuide<SchemaMatcher> guide_;
};

template <class Matcher>
Status MatcherGuide<Matcher>::CatchUp(std::span<const int32_t> output_ids) {
  for (; consumed_ < output_ids.size(); ++consumed_) {
    const int32_t id = output_ids[consumed_];
    const std::string* bytes = vocabulary_->output_bytes(id);
    if (bytes == nullptr || !matcher_.Advance(*bytes))
      return InvalidArgument("output token {} does not continue the JSON value", id);
  }
  return Status::Ok();
}

template <class Matcher>
void MatcherGuide<Matcher>::Mask(std::span<float> logits, std::span<const int32_t> end_ids) const {
  state_key_.clear();
  matcher_.AppendStateKey(&state_key_);
  const TokenSet& allowed = token_sets_.Get(state_key_, [&] { return Allowed(); });
  ApplyTokenSet(logits, allowed, vocabulary_->size(), matcher_.complete(), end_ids);
}

template <class Matcher>
TokenSet MatcherGuide<Matcher>::Allowed() const {
  // Which first bytes can follow: most tokens fail on their first byte outside strings, so this
  // table (256 tries) skips them without copying the matcher. Empty tokens have first byte 0,
  // which no state takes.
  std::array<bool, 256> first_ok;
  for (int b = 0; b < 256; ++b) {
    Matcher m = matcher_;
    first_ok[static_cast<size_t>(b)] = b != 0 && m.Advance(static_cast<uint8_t>(b));
  }
  const TokenVocabulary& v = *vocabulary_;
  const bool in_string = matcher_.in_string();
  TokenSet allowed((v.size() + 63) / 64, 0);
  for (size_t id = 0; id < v.size(); ++id) {
    if (!first_ok[v.first_byte(id)]) continue;
    // Inside a string most tokens are plain text: accepted without a byte-by-byte try.
    const std::string& b = v.bytes(id);
    if (b.size() > 1 && !(in_string && v.plain_string_text(id))) {
      Matcher m = matcher_;
      if (!m.Advance(b)) continue;
    }
    TokenSetAdd(allowed, id);
  }
  return allowed;
}

}  // namespace

std::unique_ptr<Guide> NewGuide(const SamplingParams& params,
                                std::shared_ptr<const TokenVocabulary> vocabulary) {
  switch (params.guided) {
    case GuidedDecoding::kNone:
      return nullptr;
    case GuidedDecoding::kJsonObject:
      return NewJsonObjectGuide(std::move(vocabulary), params.guided_whitespace);
    case GuidedDecoding::kJsonSchema:
      return NewJsonSchemaGuide(std::move(vocabulary), params.json_schema,
                                params.guided_whitespace);
    case GuidedDecoding::kRegex:
      return NewRegexGuide(std::move(vocabulary), params.regex);
    case GuidedDecoding::kGrammar:
      return NewGrammarGuide(std::move(vocabulary), params.grammar);
  }
  return nullptr;
}

std::unique_ptr<Guide> NewJsonObjectGuide(std::shared_ptr<const TokenVocabulary> vocabulary,
                                          bool whitespace) {
  JsonMatcher m;
  m.set_whitespace_allowed(whitespace);
  return std::make_unique<MatcherGuide<JsonMatcher>>(std::move(vocabulary), m);
}

std::unique_ptr<Guide> NewJsonSchemaGuide(std::shared_ptr<const TokenVocabulary> vocabulary,
                                          std::shared_ptr<const JsonSchema> schema,
                                          bool whitespace) {
  return std::make_unique<SchemaGuide>(std::move(vocabulary), std::move(schema), whitespace);
}

}  // namespace xinfer
