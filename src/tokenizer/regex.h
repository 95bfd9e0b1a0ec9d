// Thin PCRE2 wrapper for the tokenizer's Unicode regexes (pre-tokenizer Split patterns, Replace
// normalizers). Compiled once, JIT-compiled when available; matching is const and thread-safe
// (per-thread match data lives in thread_local storage).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace xinfer::tok {

class Regex {
 public:
  // `pattern` uses PCRE2 syntax with UTF and Unicode properties (\p{L}, \s matching Unicode
  // spaces), which covers the Oniguruma patterns found in tokenizer.json files.
  static StatusOr<std::unique_ptr<Regex>> Compile(std::string_view pattern);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Appends the [begin, end) byte ranges of all non-overlapping matches, left to right.
  // `text` must be valid UTF-8.
  Status FindAll(std::string_view text, std::vector<std::pair<size_t, size_t>>* matches) const;

  const std::string& pattern() const { return pattern_; }

 private:
  Regex(std::string pattern, void* code) : pattern_(std::move(pattern)), code_(code) {}
  std::string pattern_;
  void* code_;  // pcre2_code_8*; kept opaque so that pcre2.h stays out of our headers
};

}  // namespace xinfer::tok
