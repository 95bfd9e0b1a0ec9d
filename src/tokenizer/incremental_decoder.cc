#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_impl.h"

namespace xinfer {

IncrementalDecoder::IncrementalDecoder(const Tokenizer& tokenizer, bool skip_special_tokens)
    : tokenizer_(&tokenizer),
      skip_special_tokens_(skip_special_tokens),
      state_(std::make_unique<tok::DecodeState>(tokenizer.impl_->decoder->NewState())) {}

IncrementalDecoder::~IncrementalDecoder() = default;
IncrementalDecoder::IncrementalDecoder(IncrementalDecoder&&) noexcept = default;
IncrementalDecoder& IncrementalDecoder::operator=(IncrementalDecoder&&) noexcept = default;

std::string IncrementalDecoder::Append(int32_t id) {
  const Tokenizer::Impl& m = *tokenizer_->impl_;
  std::optional<std::string_view> t = m.TokenFor(id);
  if (!t.has_value() || (skip_special_tokens_ && tokenizer_->IsSpecial(id))) return {};
  std::string out;
  m.decoder->Push(*state_, *t, &out);
  return out;
}

std::string IncrementalDecoder::Flush() {
  const Tokenizer::Impl& m = *tokenizer_->impl_;
  std::string out;
  m.decoder->Finish(*state_, &out);
  *state_ = m.decoder->NewState();
  return out;
}

}  // namespace xinfer
