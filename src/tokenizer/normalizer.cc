#include "tokenizer/normalizer.h"

#include <utf8proc.h>

#include <cstdlib>

#include "base/utf8.h"
#include "tokenizer/char_class.h"

namespace xinfer::tok {

std::string ReplaceAll(std::string_view text, std::string_view from, std::string_view to) {
  if (from.empty()) return std::string(text);
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (true) {
    size_t hit = text.find(from, pos);
    if (hit == std::string_view::npos) break;
    out.append(text.substr(pos, hit - pos));
    out.append(to);
    pos = hit + from.size();
  }
  out.append(text.substr(pos));
  return out;
}

StatusOr<std::string> UnicodeNormalizer::Normalize(std::string_view text) const {
  // ASCII is invariant under all four forms; skip the allocation-heavy utf8proc call.
  if (IsAllAscii(text)) return std::string(text);
  int options = UTF8PROC_STABLE;
  switch (form_) {
    case UnicodeForm::kNfc:
      options |= UTF8PROC_COMPOSE;
      break;
    case UnicodeForm::kNfd:
      options |= UTF8PROC_DECOMPOSE;
      break;
    case UnicodeForm::kNfkc:
      options |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT;
      break;
    case UnicodeForm::kNfkd:
      options |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT;
      break;
  }
  utf8proc_uint8_t* dst = nullptr;
  // An explicit length (no NULLTERM) keeps embedded NUL characters.
  utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                                    static_cast<utf8proc_ssize_t>(text.size()), &dst,
                                    static_cast<utf8proc_option_t>(options));
  if (n < 0) {
    return InvalidArgument("unicode normalization failed: {}", utf8proc_errmsg(n));
  }
  std::string out(reinterpret_cast<const char*>(dst), static_cast<size_t>(n));
  std::free(dst);
  return out;
}

StatusOr<std::string> LowercaseNormalizer::Normalize(std::string_view text) const {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    char32_t cp = NextCodepoint(text, &pos);
    AppendUtf8(static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(cp))), &out);
  }
  return out;
}

StatusOr<std::string> StripAccentsNormalizer::Normalize(std::string_view text) const {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    size_t start = pos;
    char32_t cp = NextCodepoint(text, &pos);
    if (utf8proc_category(static_cast<utf8proc_int32_t>(cp)) == UTF8PROC_CATEGORY_MN) continue;
    out.append(text.substr(start, pos - start));
  }
  return out;
}

StatusOr<std::string> PrependNormalizer::Normalize(std::string_view text) const {
  if (text.empty()) return std::string();
  std::string out = prefix_;
  out.append(text);
  return out;
}

StatusOr<std::string> ReplaceNormalizer::Normalize(std::string_view text) const {
  if (regex_ == nullptr) {
    if (pattern_.empty()) return std::string(text);
    return ReplaceAll(text, pattern_, content_);
  }
  std::vector<std::pair<size_t, size_t>> matches;
  XI_RETURN_IF_ERROR(regex_->FindAll(text, &matches));
  std::string out;
  size_t pos = 0;
  for (auto [b, e] : matches) {
    out.append(text.substr(pos, b - pos));
    out.append(content_);
    pos = e;
  }
  out.append(text.substr(pos));
  return out;
}

StatusOr<std::string> StripNormalizer::Normalize(std::string_view text) const {
  size_t begin = 0, end = text.size();
  if (left_) {
    while (begin < end) {
      size_t next = begin;
      if (!IsWhitespace(NextCodepoint(text, &next))) break;
      begin = next;
    }
  }
  if (right_) {
    while (end > begin) {
      size_t start = end - 1;
      while (start > begin && IsUtf8Continuation(text[start])) --start;
      size_t probe = start;
      if (!IsWhitespace(NextCodepoint(text, &probe))) break;
      end = start;
    }
  }
  return std::string(text.substr(begin, end - begin));
}

StatusOr<std::string> SequenceNormalizer::Normalize(std::string_view text) const {
  std::string cur(text);
  for (const auto& step : steps_) {
    XI_ASSIGN_OR_RETURN(cur, step->Normalize(cur));
  }
  return cur;
}

}  // namespace xinfer::tok
