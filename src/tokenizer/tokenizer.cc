#include "tokenizer/tokenizer.h"

#include <algorithm>

#include "base/check.h"
#include "base/mapped_file.h"
#include "base/utf8.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/tokenizer_impl.h"

namespace xinfer {

std::optional<std::string_view> Tokenizer::Impl::TokenFor(int32_t id) const {
  if (auto it = added.find(id); it != added.end()) return std::string_view(it->second.content);
  if (id < 0 || id >= model->vocab_size()) return std::nullopt;
  std::string_view t = model->IdToToken(id);
  if (t.empty()) return std::nullopt;  // a hole in a sparse vocabulary
  return t;
}

Status Tokenizer::Impl::Finalize() {
  XI_CHECK(model != nullptr && decoder != nullptr);
  std::vector<tok::AddedTokenMatcher::Pattern> raw, normed;
  vocab_size = model->vocab_size();
  added_by_content.clear();
  for (const auto& [id, t] : added) {
    vocab_size = std::max(vocab_size, id + 1);
    added_by_content.emplace(t.content, id);
    if (!t.normalized) {
      raw.push_back({t.content, &t});
      continue;
    }
    // Normalized tokens are searched for in normalized text, so in their normalized form.
    std::string form = t.content;
    if (normalizer != nullptr) {
      XI_ASSIGN_OR_RETURN(form, normalizer->Normalize(t.content));
    }
    normed.push_back({std::move(form), &t});
  }
  // Deterministic tie-breaking between equal patterns: lower id first.
  auto by_id = [](const auto& a, const auto& b) { return a.token->id < b.token->id; };
  std::sort(raw.begin(), raw.end(), by_id);
  std::sort(normed.begin(), normed.end(), by_id);
  raw_matcher = tok::AddedTokenMatcher(std::move(raw));
  normalized_matcher = tok::AddedTokenMatcher(std::move(normed));
  return Status::Ok();
}

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::~Tokenizer() = default;

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::FromDir(const std::string& model_dir) {
  const std::string json_path = model_dir + "/tokenizer.json";
  auto json_file = MappedFile::Open(json_path);
  if (!json_file.ok()) return json_file.status();
  const MappedFile& jf = **json_file;
  std::string_view json_text(reinterpret_cast<const char*>(jf.data()), jf.size());

  std::string config_text;
  const std::string config_path = model_dir + "/tokenizer_config.json";
  auto config = ReadFileToString(config_path);
  if (config.ok()) {
    config_text = std::move(*config);
  } else if (config.status().code() != StatusCode::kNotFound) {
    return config.status();
  }

  auto tokenizer = FromJsonText(json_text, config_text);
  if (!tokenizer.ok()) return tokenizer.status().WithContext(model_dir);
  // Newer checkpoints keep the template in its own file.
  if ((*tokenizer)->impl_->chat_template.empty()) {
    auto tmpl = ReadFileToString(model_dir + "/chat_template.jinja");
    if (tmpl.ok()) (*tokenizer)->impl_->chat_template = std::move(*tmpl);
  }
  return tokenizer;
}

StatusOr<std::vector<int32_t>> Tokenizer::Encode(std::string_view text,
                                                 bool add_special_tokens) const {
  if (!IsValidUtf8(text)) return InvalidArgument("Encode: text is not valid UTF-8");
  const Impl& m = *impl_;
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 8);
  if (add_special_tokens) ids = m.prefix_ids;

  std::vector<tok::TextSpan> raw_spans, norm_spans;
  if (m.raw_matcher.empty()) {
    raw_spans.push_back({text, -1});
  } else {
    m.raw_matcher.Split(text, &raw_spans);
  }
  std::vector<std::string> words;
  bool at_text_start = true;
  for (const tok::TextSpan& span : raw_spans) {
    if (span.id >= 0) {
      ids.push_back(span.id);
      at_text_start = false;
      continue;
    }
    std::string normalized;
    if (m.normalizer != nullptr) {
      XI_ASSIGN_OR_RETURN(normalized, m.normalizer->Normalize(span.text));
    } else {
      normalized.assign(span.text);
    }
    norm_spans.clear();
    if (m.normalized_matcher.empty()) {
      norm_spans.push_back({normalized, -1});
    } else {
      m.normalized_matcher.Split(normalized, &norm_spans);
    }
    for (const tok::TextSpan& ns : norm_spans) {
      if (ns.id >= 0) {
        ids.push_back(ns.id);
      } else {
        words.assign(1, std::string(ns.text));
        if (m.pre_tokenizer != nullptr) {
          XI_RETURN_IF_ERROR(m.pre_tokenizer->PreTokenize(&words, at_text_start));
        }
        for (const std::string& w : words) m.model->Tokenize(w, &ids);
      }
      at_text_start = false;
    }
  }
  if (add_special_tokens) ids.insert(ids.end(), m.suffix_ids.begin(), m.suffix_ids.end());
  return ids;
}

std::string Tokenizer::Decode(std::span<const int32_t> ids, bool skip_special_tokens) const {
  const Impl& m = *impl_;
  tok::DecodeState state = m.decoder->NewState();
  std::string out;
  for (int32_t id : ids) {
    std::optional<std::string_view> t = m.TokenFor(id);
    if (!t.has_value() || (skip_special_tokens && IsSpecial(id))) continue;
    m.decoder->Push(state, *t, &out);
  }
  m.decoder->Finish(state, &out);
  return out;
}

int32_t Tokenizer::vocab_size() const { return impl_->vocab_size; }

std::optional<int32_t> Tokenizer::TokenToId(std::string_view token) const {
  if (auto it = impl_->added_by_content.find(token); it != impl_->added_by_content.end()) {
    return it->second;
  }
  return impl_->model->TokenToId(token);
}

std::string Tokenizer::IdToToken(int32_t id) const {
  return std::string(impl_->TokenFor(id).value_or(std::string_view()));
}

std::string Tokenizer::TokenBytes(int32_t id) const {
  if (auto it = impl_->added.find(id); it != impl_->added.end())
    return it->second.special ? "" : it->second.content;
  const std::optional<std::string_view> token = impl_->TokenFor(id);
  if (!token) return "";
  std::string out;
  if (impl_->decoder->byte_level() && tok::ByteLevelDecode(*token, &out)) return out;
  out.clear();
  const std::string_view t = *token;
  if (uint8_t byte; tok::ParseByteToken(t, &byte)) return std::string(1, static_cast<char>(byte));
  static constexpr std::string_view kMetaspace = "\xe2\x96\x81";  // U+2581 ▁
  for (size_t i = 0; i < t.size();) {
    if (t.substr(i, kMetaspace.size()) == kMetaspace) {
      out += ' ';
      i += kMetaspace.size();
    } else {
      out += t[i++];
    }
  }
  return out;
}

bool Tokenizer::IsSpecial(int32_t id) const {
  auto it = impl_->added.find(id);
  return it != impl_->added.end() && it->second.special;
}

std::optional<int32_t> Tokenizer::bos_id() const { return impl_->bos_id; }
std::optional<int32_t> Tokenizer::eos_id() const { return impl_->eos_id; }
const std::string& Tokenizer::bos_token() const { return impl_->bos_token; }
const std::string& Tokenizer::eos_token() const { return impl_->eos_token; }
const std::string& Tokenizer::chat_template() const { return impl_->chat_template; }

}  // namespace xinfer
