#include "tokenizer/added_vocab.h"

#include <algorithm>

#include "base/utf8.h"
#include "tokenizer/char_class.h"

namespace xinfer::tok {
namespace {

// Code point ending just before byte offset `end` (which must be > 0).
char32_t LastCodepoint(std::string_view s, size_t end, size_t* begin) {
  size_t b = end - 1;
  while (b > 0 && IsUtf8Continuation(s[b])) --b;
  *begin = b;
  size_t p = b;
  return NextCodepoint(s, &p);
}

}  // namespace

AddedTokenMatcher::AddedTokenMatcher(std::vector<Pattern> patterns) {
  for (Pattern& p : patterns) {
    if (!p.text.empty()) patterns_.push_back(std::move(p));
  }
  std::stable_sort(patterns_.begin(), patterns_.end(), [](const Pattern& a, const Pattern& b) {
    uint8_t fa = static_cast<uint8_t>(a.text[0]), fb = static_cast<uint8_t>(b.text[0]);
    if (fa != fb) return fa < fb;
    return a.text.size() > b.text.size();
  });
  size_t i = 0;
  for (int b = 0; b < 256; ++b) {
    first_[b] = static_cast<uint32_t>(i);
    while (i < patterns_.size() && static_cast<uint8_t>(patterns_[i].text[0]) == b) ++i;
  }
  first_[256] = static_cast<uint32_t>(patterns_.size());
}

void AddedTokenMatcher::Split(std::string_view text, std::vector<TextSpan>* out) const {
  size_t emitted = 0;  // text before this offset is already in `out`
  size_t pos = 0;
  while (pos < text.size()) {
    const uint8_t b = static_cast<uint8_t>(text[pos]);
    const Pattern* hit = nullptr;
    for (uint32_t k = first_[b]; k < first_[b + 1]; ++k) {
      const std::string& t = patterns_[k].text;
      if (text.compare(pos, t.size(), t) == 0) {  // longest first: the first hit wins
        hit = &patterns_[k];
        break;
      }
    }
    if (hit == nullptr) {
      ++pos;
      continue;
    }
    size_t start = pos, stop = pos + hit->text.size();
    const AddedToken& tok = *hit->token;
    if (tok.single_word) {
      size_t unused;
      bool word_before = start > 0 && IsWordChar(LastCodepoint(text, start, &unused));
      size_t p = stop;
      bool word_after = stop < text.size() && IsWordChar(NextCodepoint(text, &p));
      if (word_before || word_after) {
        pos = stop;  // like a non-overlapping match iterator: resume after the discarded match
        continue;
      }
    }
    if (tok.lstrip) {
      while (start > emitted) {
        size_t cb;
        if (!IsWhitespace(LastCodepoint(text, start, &cb))) break;
        start = cb;
      }
    }
    if (tok.rstrip) {
      while (stop < text.size()) {
        size_t p = stop;
        if (!IsWhitespace(NextCodepoint(text, &p))) break;
        stop = p;
      }
    }
    if (start > emitted) out->push_back({text.substr(emitted, start - emitted), -1});
    out->push_back({text.substr(start, stop - start), tok.id});
    emitted = pos = stop;
  }
  if (emitted < text.size() || text.empty()) {
    out->push_back({text.substr(emitted), -1});
  }
}

}  // namespace xinfer::tok
