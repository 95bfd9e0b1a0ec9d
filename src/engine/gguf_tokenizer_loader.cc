#include "engine/gguf_tokenizer_loader.h"

#include <filesystem>

namespace xinfer {
namespace {

// An optional key: absent → nullopt, present with the wrong type → error.
template <typename T, typename Getter>
StatusOr<std::optional<T>> Optional(const GgufFile& file, const std::string& key, Getter get) {
  if (!file.Has(key)) return std::optional<T>();
  auto v = (file.*get)(key);
  if (!v.ok()) return v.status();
  return std::optional<T>(static_cast<T>(*v));
}

StatusOr<std::optional<int32_t>> OptionalId(const GgufFile& file, const std::string& key) {
  XI_ASSIGN_OR_RETURN(auto v, Optional<int64_t>(file, key, &GgufFile::GetInt));
  if (!v.has_value()) return std::optional<int32_t>();
  // llama.cpp writes -1 (or UINT32_MAX) for "no such token".
  if (*v < 0 || *v > INT32_MAX) return std::optional<int32_t>();
  return std::optional<int32_t>(static_cast<int32_t>(*v));
}

}  // namespace

bool IsGgufModelPath(const std::string& model) {
  return model.size() > 5 && model.ends_with(".gguf") && !std::filesystem::is_directory(model);
}

StatusOr<GgufVocab> ReadGgufVocab(const GgufFile& file) {
  GgufVocab v;
  if (!file.Has("tokenizer.ggml.model"))
    return NotFound("no tokenizer in the file (tokenizer.ggml.model is missing)");
  XI_ASSIGN_OR_RETURN(v.model, file.GetString("tokenizer.ggml.model"));
  XI_ASSIGN_OR_RETURN(auto pre,
                      Optional<std::string>(file, "tokenizer.ggml.pre", &GgufFile::GetString));
  v.pre = pre.value_or("");
  XI_ASSIGN_OR_RETURN(v.tokens, file.GetStringArray("tokenizer.ggml.tokens"));
  if (file.Has("tokenizer.ggml.scores")) {
    XI_ASSIGN_OR_RETURN(v.scores, file.GetFloatArray("tokenizer.ggml.scores"));
  }
  if (file.Has("tokenizer.ggml.token_type")) {
    XI_ASSIGN_OR_RETURN(v.token_types, file.GetIntArray("tokenizer.ggml.token_type"));
  }
  if (file.Has("tokenizer.ggml.merges")) {
    XI_ASSIGN_OR_RETURN(v.merges, file.GetStringArray("tokenizer.ggml.merges"));
  }
  XI_ASSIGN_OR_RETURN(v.bos_id, OptionalId(file, "tokenizer.ggml.bos_token_id"));
  XI_ASSIGN_OR_RETURN(v.eos_id, OptionalId(file, "tokenizer.ggml.eos_token_id"));
  XI_ASSIGN_OR_RETURN(v.unk_id, OptionalId(file, "tokenizer.ggml.unknown_token_id"));
  XI_ASSIGN_OR_RETURN(v.add_bos,
                      Optional<bool>(file, "tokenizer.ggml.add_bos_token", &GgufFile::GetBool));
  XI_ASSIGN_OR_RETURN(v.add_eos,
                      Optional<bool>(file, "tokenizer.ggml.add_eos_token", &GgufFile::GetBool));
  XI_ASSIGN_OR_RETURN(v.add_space_prefix,
                      Optional<bool>(file, "tokenizer.ggml.add_space_prefix", &GgufFile::GetBool));
  XI_ASSIGN_OR_RETURN(auto tmpl,
                      Optional<std::string>(file, "tokenizer.chat_template", &GgufFile::GetString));
  v.chat_template = tmpl.value_or("");
  return v;
}

StatusOr<std::unique_ptr<Tokenizer>> LoadGgufTokenizer(const std::string& path) {
  auto file = GgufFile::Open(path);
  if (!file.ok()) return file.status();
  auto vocab = ReadGgufVocab(**file);
  if (!vocab.ok()) return vocab.status().WithContext(path);
  auto tokenizer = TokenizerFromGgufVocab(*vocab);
  if (!tokenizer.ok()) return tokenizer.status().WithContext(path);
  return tokenizer;
}

}  // namespace xinfer
