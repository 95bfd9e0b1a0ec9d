// Hugging Face tokenizer.json compatible tokenizers (byte-level BPE as in Qwen2/Qwen3 and
// sentencepiece-style BPE with byte fallback as in Llama), plus streaming detokenization.
//
// Ownership and threading: a Tokenizer is immutable once built. Encode, Decode and all lookups
// are const and safe to call concurrently from any number of threads (the internal BPE word
// cache is synchronized). An IncrementalDecoder borrows a Tokenizer, which must outlive it; each
// IncrementalDecoder belongs to one sequence and is not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace xinfer {

namespace tok {
struct DecodeState;
}  // namespace tok

class Tokenizer {
 public:
  // Loads <dir>/tokenizer.json and, if present, <dir>/tokenizer_config.json (and
  // <dir>/chat_template.jinja when the config carries no template).
  static StatusOr<std::unique_ptr<Tokenizer>> FromDir(const std::string& model_dir);
  // Same from texts; tokenizer_config_json may be empty.
  static StatusOr<std::unique_ptr<Tokenizer>> FromJsonText(std::string_view tokenizer_json,
                                                           std::string_view tokenizer_config_json);

  // Added/special tokens in the text are always matched first. add_special_tokens adds what the
  // tokenizer prescribes (post_processor template, tokenizer_config add_bos_token/add_eos_token).
  // Fails with InvalidArgument when `text` is not valid UTF-8.
  StatusOr<std::vector<int32_t>> Encode(std::string_view text,
                                        bool add_special_tokens = true) const;
  // Ids outside the vocabulary are skipped. Byte sequences that are not valid UTF-8 come out as
  // U+FFFD (like Hugging Face with errors="replace").
  std::string Decode(std::span<const int32_t> ids, bool skip_special_tokens = false) const;

  int32_t vocab_size() const;  // max id + 1, added tokens included
  std::optional<int32_t> TokenToId(std::string_view token) const;
  std::string IdToToken(int32_t id) const;  // raw vocabulary string, "" if out of range
  bool IsSpecial(int32_t id) const;
  // The bytes token `id` adds to the text in the middle of a stream, for grammar-constrained
  // sampling: byte-level tokens mapped back to their bytes (a piece of a UTF-8 character stays a
  // piece), sentencepiece tokens with `▁` as a space and <0xNN> as that byte, added tokens as
  // their content; "" for special tokens and ids outside the vocabulary.
  std::string TokenBytes(int32_t id) const;
  std::optional<int32_t> bos_id() const;
  std::optional<int32_t> eos_id() const;  // from tokenizer_config eos_token
  const std::string& bos_token() const;   // "" when none
  const std::string& eos_token() const;
  // tokenizer_config "chat_template" ("" if none; for a list of {name, template}, "default").
  const std::string& chat_template() const;

  // Internal representation (tokenizer_impl.h); lets other loaders (e.g. GGUF) build one.
  struct Impl;
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  ~Tokenizer();
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

 private:
  friend class IncrementalDecoder;
  std::unique_ptr<Impl> impl_;
};

// Turns a stream of token ids into text pieces, never emitting a broken UTF-8 sequence; the
// concatenation of all pieces (plus Flush) equals Decode(all ids). Text is held back only while
// it may still change (an incomplete UTF-8 sequence, a run of <0xNN> byte tokens, a character
// that a Strip/Replace decoder step may still remove). One per sequence; not thread-safe.
class IncrementalDecoder {
 public:
  IncrementalDecoder(const Tokenizer& tokenizer, bool skip_special_tokens = false);
  ~IncrementalDecoder();
  IncrementalDecoder(IncrementalDecoder&&) noexcept;
  IncrementalDecoder& operator=(IncrementalDecoder&&) noexcept;

  std::string Append(int32_t id);  // text that became final with this token (may be "")
  // Whatever is left (incomplete UTF-8 replaced by U+FFFD). The decoder then starts over as if
  // newly constructed.
  std::string Flush();

 private:
  const Tokenizer* tokenizer_;
  bool skip_special_tokens_;
  std::unique_ptr<tok::DecodeState> state_;
};

}  // namespace xinfer
