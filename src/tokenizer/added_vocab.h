// Added tokens (tokenizer.json "added_tokens"): strings matched verbatim in the input before the
// model sees it. Tokens with normalized=false are matched in the raw text, the others in the
// normalized text (against their own normalized form), as Hugging Face does. Immutable after
// construction; thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace xinfer::tok {

struct AddedToken {
  int32_t id = -1;
  std::string content;
  bool single_word = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = false;
  bool special = false;
};

// A run of input text: either plain text (id < 0) or one added token.
struct TextSpan {
  std::string_view text;
  int32_t id = -1;
};

// Leftmost-longest matcher over a fixed set of patterns.
class AddedTokenMatcher {
 public:
  struct Pattern {
    std::string text;  // what is searched for (maybe the normalized content)
    const AddedToken* token;
  };
  AddedTokenMatcher() = default;
  explicit AddedTokenMatcher(std::vector<Pattern> patterns);
  bool empty() const { return patterns_.empty(); }
  // Splits `text` into plain and token spans, honoring single_word / lstrip / rstrip. The spans
  // cover `text` exactly and point into it.
  void Split(std::string_view text, std::vector<TextSpan>* out) const;

 private:
  std::vector<Pattern> patterns_;    // sorted by first byte, then longest first
  std::array<uint32_t, 257> first_;  // patterns_ index range per first byte
};

}  // namespace xinfer::tok
