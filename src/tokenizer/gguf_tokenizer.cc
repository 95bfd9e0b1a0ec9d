#include "tokenizer/gguf_tokenizer.h"

#include <algorithm>
#include <numeric>

#include "base/utf8.h"
#include "tokenizer/tokenizer_impl.h"

namespace xinfer {
namespace {

using tok::SplitBehavior;

// The pre-tokenizer regexes llama.cpp uses for tokenizer.ggml.pre (llama-vocab.cpp), written as
// in the models' tokenizer.json files.
constexpr std::string_view kQwen2Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
constexpr std::string_view kSpmSpace = "\xE2\x96\x81";  // U+2581 LOWER ONE EIGHTH BLOCK

int32_t TypeOf(const GgufVocab& v, size_t id) {
  return v.token_types.empty() ? kGgufTokenNormal : v.token_types[id];
}

Status CheckVocab(const GgufVocab& v) {
  const size_t n = v.tokens.size();
  if (n == 0) return InvalidArgument("GGUF tokenizer: tokenizer.ggml.tokens is empty");
  if (n > static_cast<size_t>(INT32_MAX))
    return InvalidArgument("GGUF tokenizer: {} tokens is too many", n);
  if (!v.token_types.empty() && v.token_types.size() != n)
    return InvalidArgument("GGUF tokenizer: tokenizer.ggml.token_type has {} entries for {} tokens",
                           v.token_types.size(), n);
  if (!v.scores.empty() && v.scores.size() != n)
    return InvalidArgument("GGUF tokenizer: tokenizer.ggml.scores has {} entries for {} tokens",
                           v.scores.size(), n);
  auto check_id = [n](const std::optional<int32_t>& id, const char* key) -> Status {
    if (id.has_value() && (*id < 0 || static_cast<size_t>(*id) >= n))
      return InvalidArgument("GGUF tokenizer: tokenizer.ggml.{} {} is outside the vocabulary of {}",
                             key, *id, n);
    return Status::Ok();
  };
  XI_RETURN_IF_ERROR(check_id(v.bos_id, "bos_token_id"));
  XI_RETURN_IF_ERROR(check_id(v.eos_id, "eos_token_id"));
  XI_RETURN_IF_ERROR(check_id(v.unk_id, "unknown_token_id"));
  return Status::Ok();
}

// Control and user-defined tokens are matched in the raw text, as llama.cpp does for them.
void AddSpecialTokens(const GgufVocab& v, Tokenizer::Impl* impl) {
  for (size_t id = 0; id < v.tokens.size(); ++id) {
    const int32_t type = TypeOf(v, id);
    if (type != kGgufTokenControl && type != kGgufTokenUserDefined) continue;
    if (v.tokens[id].empty()) continue;  // nothing to match
    tok::AddedToken a;
    a.id = static_cast<int32_t>(id);
    a.content = v.tokens[id];
    a.normalized = false;
    a.special = type == kGgufTokenControl;
    impl->added.insert_or_assign(a.id, std::move(a));
  }
}

std::vector<std::pair<std::string, int32_t>> VocabPairs(const GgufVocab& v) {
  std::vector<std::pair<std::string, int32_t>> out;
  out.reserve(v.tokens.size());
  for (size_t id = 0; id < v.tokens.size(); ++id)
    out.emplace_back(v.tokens[id], static_cast<int32_t>(id));
  return out;
}

Status BuildGpt2(const GgufVocab& v, Tokenizer::Impl* impl) {
  std::string_view pattern;
  if (v.pre == "qwen2") {
    pattern = kQwen2Pattern;
  } else if (v.pre == "gpt-2" || v.pre == "default" || v.pre.empty()) {
    pattern = kGpt2Pattern;
  } else {
    return Unimplemented(
        "GGUF tokenizer: unsupported tokenizer.ggml.pre '{}' (supported: qwen2, gpt-2, default)",
        v.pre);
  }
  tok::BpeOptions opts;
  opts.vocab = VocabPairs(v);
  opts.merges.reserve(v.merges.size());
  for (size_t i = 0; i < v.merges.size(); ++i) {
    const std::string& m = v.merges[i];
    // llama.cpp splits at the first space after the first byte (a token may be a lone space).
    const size_t sp = m.size() > 1 ? m.find(' ', 1) : std::string::npos;
    if (sp == std::string::npos)
      return InvalidArgument("GGUF tokenizer: merge #{} '{}' is not 'left right'", i, m);
    opts.merges.emplace_back(m.substr(0, sp), m.substr(sp + 1));
  }
  auto model = tok::BpeModel::Create(std::move(opts));
  if (!model.ok()) return model.status().WithContext("GGUF tokenizer");
  impl->model = std::move(*model);

  XI_ASSIGN_OR_RETURN(auto re, tok::Regex::Compile(pattern));
  std::vector<std::unique_ptr<tok::PreTokenizer>> steps;
  steps.push_back(
      std::make_unique<tok::SplitPreTokenizer>("", std::move(re), SplitBehavior::kIsolated, false));
  XI_ASSIGN_OR_RETURN(auto byte_level, tok::ByteLevelPreTokenizer::Create(false, false));
  steps.push_back(std::move(byte_level));
  impl->pre_tokenizer = std::make_unique<tok::SequencePreTokenizer>(std::move(steps));

  std::vector<std::unique_ptr<tok::DecodeStage>> stages;
  stages.push_back(std::make_unique<tok::ByteLevelStage>());
  impl->decoder = std::make_unique<tok::Decoder>(std::move(stages));
  return Status::Ok();
}

// Sentencepiece BPE merges the adjacent pair whose concatenation is the highest-scoring vocab
// piece. That is rank-ordered BPE once every way of splitting a piece into two pieces becomes a
// merge ranked by the piece's score (higher score = earlier rank), which is what the shared
// BpeModel runs. Control, byte and unknown tokens never come out of merging.
std::vector<std::pair<std::string, std::string>> SpmMerges(const GgufVocab& v,
                                                           const tok::TokenMap& ids) {
  auto mergeable = [&v](size_t id) {
    const int32_t t = TypeOf(v, id);
    return t == kGgufTokenNormal || t == kGgufTokenUserDefined || t == kGgufTokenUnused;
  };
  std::vector<int32_t> order;
  for (size_t id = 0; id < v.tokens.size(); ++id)
    if (mergeable(id) && v.tokens[id].size() > 1) order.push_back(static_cast<int32_t>(id));
  std::stable_sort(order.begin(), order.end(),
                   [&v](int32_t a, int32_t b) { return v.scores[a] > v.scores[b]; });
  std::vector<std::pair<std::string, std::string>> merges;
  for (int32_t id : order) {
    const std::string& piece = v.tokens[id];
    size_t pos = 0;
    NextCodepoint(piece, &pos);
    for (; pos < piece.size(); NextCodepoint(piece, &pos)) {
      std::string_view left = std::string_view(piece).substr(0, pos);
      std::string_view right = std::string_view(piece).substr(pos);
      auto l = ids.find(left);
      auto r = ids.find(right);
      if (l == ids.end() || r == ids.end() || !mergeable(l->second) || !mergeable(r->second))
        continue;
      merges.emplace_back(std::string(left), std::string(right));
    }
  }
  return merges;
}

Status BuildLlama(const GgufVocab& v, Tokenizer::Impl* impl) {
  if (v.scores.empty())
    return InvalidArgument("GGUF tokenizer: model 'llama' needs tokenizer.ggml.scores");
  tok::TokenMap ids;
  ids.reserve(v.tokens.size());
  for (size_t id = 0; id < v.tokens.size(); ++id)
    ids.emplace(v.tokens[id], static_cast<int32_t>(id));
  tok::BpeOptions opts;
  opts.vocab = VocabPairs(v);
  opts.merges = SpmMerges(v, ids);
  opts.byte_fallback = true;
  opts.fuse_unk = true;
  if (v.unk_id.has_value()) opts.unk_token = v.tokens[*v.unk_id];
  auto model = tok::BpeModel::Create(std::move(opts));
  if (!model.ok()) return model.status().WithContext("GGUF tokenizer");
  impl->model = std::move(*model);

  // " " → "▁", with one "▁" in front of every run of text (llama.cpp prepends it to each text
  // fragment that starts the input or follows a special token; Encode normalizes per fragment).
  std::vector<std::unique_ptr<tok::Normalizer>> norm;
  if (v.add_space_prefix.value_or(true))
    norm.push_back(std::make_unique<tok::PrependNormalizer>(std::string(kSpmSpace)));
  norm.push_back(std::make_unique<tok::ReplaceNormalizer>(" ", nullptr, std::string(kSpmSpace)));
  impl->normalizer = std::make_unique<tok::SequenceNormalizer>(std::move(norm));

  std::vector<std::unique_ptr<tok::DecodeStage>> stages;
  stages.push_back(std::make_unique<tok::ReplaceStage>(std::string(kSpmSpace), " "));
  stages.push_back(std::make_unique<tok::ByteFallbackStage>());
  stages.push_back(std::make_unique<tok::FuseStage>());
  if (v.add_space_prefix.value_or(true))
    stages.push_back(std::make_unique<tok::StripStage>(" ", 1, 0));
  impl->decoder = std::make_unique<tok::Decoder>(std::move(stages));
  return Status::Ok();
}

}  // namespace

StatusOr<std::unique_ptr<Tokenizer>> TokenizerFromGgufVocab(const GgufVocab& v) {
  XI_RETURN_IF_ERROR(CheckVocab(v));
  auto impl = std::make_unique<Tokenizer::Impl>();
  bool default_add_bos = false;
  if (v.model == "gpt2") {
    XI_RETURN_IF_ERROR(BuildGpt2(v, impl.get()));
  } else if (v.model == "llama") {
    XI_RETURN_IF_ERROR(BuildLlama(v, impl.get()));
    default_add_bos = true;
  } else {
    return Unimplemented(
        "GGUF tokenizer: unsupported tokenizer.ggml.model '{}' (supported: gpt2, "
        "llama)",
        v.model);
  }
  AddSpecialTokens(v, impl.get());
  XI_RETURN_IF_ERROR(impl->Finalize());

  impl->bos_id = v.bos_id;
  impl->eos_id = v.eos_id;
  if (v.bos_id) impl->bos_token = v.tokens[*v.bos_id];
  if (v.eos_id) impl->eos_token = v.tokens[*v.eos_id];
  if (v.add_bos.value_or(default_add_bos) && v.bos_id) impl->prefix_ids.push_back(*v.bos_id);
  if (v.add_eos.value_or(false) && v.eos_id) impl->suffix_ids.push_back(*v.eos_id);
  impl->chat_template = v.chat_template;
  return std::make_unique<Tokenizer>(std::move(impl));
}

}  // namespace xinfer
