// Normalizers: text → text rewrites applied before pre-tokenization (tokenizer.json
// "normalizer"). Immutable after construction; Normalize is const and thread-safe.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "tokenizer/regex.h"

namespace xinfer::tok {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  // `text` is valid UTF-8 and so is the result.
  virtual StatusOr<std::string> Normalize(std::string_view text) const = 0;
};

enum class UnicodeForm { kNfc, kNfd, kNfkc, kNfkd };

class UnicodeNormalizer : public Normalizer {
 public:
  explicit UnicodeNormalizer(UnicodeForm form) : form_(form) {}
  StatusOr<std::string> Normalize(std::string_view text) const override;

 private:
  UnicodeForm form_;
};

class LowercaseNormalizer : public Normalizer {
 public:
  StatusOr<std::string> Normalize(std::string_view text) const override;
};

// Removes combining marks (category Mn), as HF's StripAccents (used after NFD).
class StripAccentsNormalizer : public Normalizer {
 public:
  StatusOr<std::string> Normalize(std::string_view text) const override;
};

// Prepends `prefix` to non-empty text.
class PrependNormalizer : public Normalizer {
 public:
  explicit PrependNormalizer(std::string prefix) : prefix_(std::move(prefix)) {}
  StatusOr<std::string> Normalize(std::string_view text) const override;

 private:
  std::string prefix_;
};

// Replaces every occurrence of a literal string, or of a regex when `regex` is set.
class ReplaceNormalizer : public Normalizer {
 public:
  ReplaceNormalizer(std::string pattern, std::unique_ptr<Regex> regex, std::string content)
      : pattern_(std::move(pattern)), regex_(std::move(regex)), content_(std::move(content)) {}
  StatusOr<std::string> Normalize(std::string_view text) const override;

 private:
  std::string pattern_;
  std::unique_ptr<Regex> regex_;
  std::string content_;
};

// Strips Unicode whitespace on the left and/or right.
class StripNormalizer : public Normalizer {
 public:
  StripNormalizer(bool left, bool right) : left_(left), right_(right) {}
  StatusOr<std::string> Normalize(std::string_view text) const override;

 private:
  bool left_, right_;
};

class SequenceNormalizer : public Normalizer {
 public:
  explicit SequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> steps)
      : steps_(std::move(steps)) {}
  StatusOr<std::string> Normalize(std::string_view text) const override;

 private:
  std::vector<std::unique_ptr<Normalizer>> steps_;
};

// Replaces all non-overlapping occurrences of `from` (non-empty) by `to`.
std::string ReplaceAll(std::string_view text, std::string_view from, std::string_view to);

}  // namespace xinfer::tok
