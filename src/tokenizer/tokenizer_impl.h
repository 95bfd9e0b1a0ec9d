// Internal layout of a Tokenizer: the pipeline components and metadata. Only the tokenizer
// layer (and loaders building tokenizers) include this.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/added_vocab.h"
#include "tokenizer/bpe_model.h"
#include "tokenizer/decoder.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/tokenizer.h"

namespace xinfer {

struct Tokenizer::Impl {
  std::unique_ptr<tok::Normalizer> normalizer;       // null: identity
  std::unique_ptr<tok::PreTokenizer> pre_tokenizer;  // null: the whole text is one word
  std::unique_ptr<tok::BpeModel> model;              // never null
  std::unique_ptr<tok::Decoder> decoder;             // never null

  // Added tokens by id (ids may also exist in the model vocabulary; added ones win).
  std::unordered_map<int32_t, tok::AddedToken> added;
  tok::TokenMap added_by_content;
  tok::AddedTokenMatcher raw_matcher;         // normalized=false tokens, on raw text
  tok::AddedTokenMatcher normalized_matcher;  // normalized=true tokens, on normalized text

  // Ids put around the encoded text when add_special_tokens is true.
  std::vector<int32_t> prefix_ids;
  std::vector<int32_t> suffix_ids;

  std::string bos_token, eos_token, chat_template;
  std::optional<int32_t> bos_id, eos_id;
  int32_t vocab_size = 0;

  // Token string for `id` (added tokens first), or nullopt.
  std::optional<std::string_view> TokenFor(int32_t id) const;
  // Fills the derived fields (matchers, vocab_size) once the components and `added` are set.
  Status Finalize();
};

}  // namespace xinfer
