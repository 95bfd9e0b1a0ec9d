// Pre-tokenizers: split normalized text into the "words" that the model tokenizes one by one
// (tokenizer.json "pre_tokenizer"). Immutable after construction; const and thread-safe.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "tokenizer/regex.h"

namespace xinfer::tok {

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Splits (and possibly rewrites) every piece in place; empty pieces are dropped.
  // `at_text_start` tells whether (*pieces)[0] begins at offset 0 of the user's text, which
  // Metaspace's prepend_scheme "first" needs.
  virtual Status PreTokenize(std::vector<std::string>* pieces, bool at_text_start) const = 0;
};

// How the pieces matched by a Split pattern relate to the text between matches.
enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

class SplitPreTokenizer : public PreTokenizer {
 public:
  // Exactly one of `literal` (non-empty) or `regex` is used.
  SplitPreTokenizer(std::string literal, std::unique_ptr<Regex> regex, SplitBehavior behavior,
                    bool invert)
      : literal_(std::move(literal)),
        regex_(std::move(regex)),
        behavior_(behavior),
        invert_(invert) {}
  Status PreTokenize(std::vector<std::string>* pieces, bool at_text_start) const override;

 private:
  std::string literal_;
  std::unique_ptr<Regex> regex_;
  SplitBehavior behavior_;
  bool invert_;
};

// Byte-level: optional GPT-2 regex split, optional prefix space, then every byte is mapped to
// its printable stand-in (see byte_level.h).
class ByteLevelPreTokenizer : public PreTokenizer {
 public:
  static StatusOr<std::unique_ptr<ByteLevelPreTokenizer>> Create(bool add_prefix_space,
                                                                 bool use_regex);
  Status PreTokenize(std::vector<std::string>* pieces, bool at_text_start) const override;

 private:
  ByteLevelPreTokenizer(bool add_prefix_space, std::unique_ptr<SplitPreTokenizer> split)
      : add_prefix_space_(add_prefix_space), split_(std::move(split)) {}
  bool add_prefix_space_;
  std::unique_ptr<SplitPreTokenizer> split_;  // null when use_regex is false
};

enum class PrependScheme { kAlways, kFirst, kNever };

class MetaspacePreTokenizer : public PreTokenizer {
 public:
  MetaspacePreTokenizer(std::string replacement, PrependScheme scheme, bool split)
      : replacement_(std::move(replacement)), scheme_(scheme), split_(split) {}
  Status PreTokenize(std::vector<std::string>* pieces, bool at_text_start) const override;

 private:
  std::string replacement_;
  PrependScheme scheme_;
  bool split_;
};

// HF "WhitespaceSplit": split on Unicode whitespace, dropping it.
class WhitespaceSplitPreTokenizer : public PreTokenizer {
 public:
  Status PreTokenize(std::vector<std::string>* pieces, bool at_text_start) const override;
};

// HF "Digits": numeric characters isolated one by one, or grouped into runs.
class DigitsPreTokenizer : public PreTokenizer {
 public:
  explicit DigitsPreTokenizer(bool individual) : individual_(individual) {}
  Status PreTokenize(std::vector<std::string>* pieces, bool at_text_start) const override;

 private:
  bool individual_;
};

class SequencePreTokenizer : public PreTokenizer {
 public:
  explicit SequencePreTokenizer(std::vector<std::unique_ptr<PreTokenizer>> steps)
      : steps_(std::move(steps)) {}
  Status PreTokenize(std::vector<std::string>* pieces, bool at_text_start) const override;

 private:
  std::vector<std::unique_ptr<PreTokenizer>> steps_;
};

// Applies `behavior` to the segments of `text` (each [begin, end) with a "matched" flag, in
// order, covering the text) and appends the resulting non-empty pieces to `out`.
struct Segment {
  size_t begin, end;
  bool matched;
};
void SplitWithBehavior(std::string_view text, const std::vector<Segment>& segments,
                       SplitBehavior behavior, std::vector<std::string>* out);

}  // namespace xinfer::tok
