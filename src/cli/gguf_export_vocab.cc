#include "cli/gguf_export_vocab.h"

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <string_view>

#include "base/logging.h"
#include "base/mapped_file.h"

namespace xinfer {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// llama.cpp's token types (llama_token_type).
constexpr int32_t kNormal = 1, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6;

// The pre-tokenizer regex of Qwen2/Qwen2.5/Qwen3 tokenizer.json files, which llama.cpp knows as
// tokenizer.ggml.pre "qwen2".
constexpr std::string_view kQwen2Regex =
    R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";

StatusOr<json> ReadJson(const std::string& path, bool required) {
  if (!fs::exists(path)) {
    if (required)
      return NotFound(
          "{} not found: a GGUF file carries the model's tokenizer (copy tokenizer.json and "
          "tokenizer_config.json into the folder, or use make-model --tokenizer DIR)",
          path);
    return json::object();
  }
  XI_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return InvalidArgument("{} is not a JSON object", path);
  return j;
}

// j[key], or null when absent (operator[] on a const json must not be asked for a missing key).
const json& Field(const json& j, const char* key) {
  static const json kNull;
  if (!j.is_object()) return kNull;
  auto it = j.find(key);
  return it == j.end() ? kNull : *it;
}

std::string ReplaceAll(std::string_view s, std::string_view from, std::string_view to) {
  std::string out;
  size_t pos = 0;
  for (size_t hit; (hit = s.find(from, pos)) != std::string_view::npos; pos = hit + from.size()) {
    out.append(s.substr(pos, hit - pos));
    out.append(to);
  }
  out.append(s.substr(pos));
  return out;
}

// Tokens the converter marks as control even when tokenizer.json does not call them special.
bool LooksSpecial(const std::string& t) {
  auto wrapped = [&t](std::string_view open, std::string_view close) {
    return t.size() >= open.size() + close.size() && t.starts_with(open) && t.ends_with(close);
  };
  return t == "<pad>" || t == "<mask>" || t == "<2mass>" || t == "[@BOS@]" || wrapped("<|", "|>") ||
         wrapped("<\xEF\xBD\x9C", "\xEF\xBD\x9C>") ||  // fullwidth bars (deepseek-coder)
         wrapped("<unused", ">");
}

bool IsByteToken(const std::string& t) {
  static const std::regex kByte("<0x[0-9A-Fa-f]{2}>");
  return std::regex_match(t, kByte);
}

// Whether a pre-tokenizer (or one step of a Sequence) has the given type.
bool HasStep(const json& node, const std::string& type, const json** found = nullptr) {
  if (!node.is_object()) return false;
  if (node.value("type", "") == type) {
    if (found) *found = &node;
    return true;
  }
  for (const char* list : {"pretokenizers", "normalizers", "decoders"})
    if (Field(node, list).is_array())
      for (const json& step : Field(node, list))
        if (HasStep(step, type, found)) return true;
  return false;
}

// tokenizer.ggml.pre for a byte-level BPE tokenizer.json.
StatusOr<std::string> Gpt2PreType(const json& tok) {
  const json& pre = Field(tok, "pre_tokenizer");
  const json* split = nullptr;
  if (HasStep(pre, "Split", &split)) {
    const json& pattern = Field(*split, "pattern");
    if (Field(pattern, "Regex") == kQwen2Regex) return std::string("qwen2");
    return Unimplemented(
        "tokenizer.json: pre-tokenizer regex {} is not one GGUF export knows (Qwen2's); "
        "llama.cpp picks its pre-tokenizer by name",
        pattern.dump());
  }
  const json* byte_level = nullptr;
  if (HasStep(pre, "ByteLevel", &byte_level) && byte_level->value("use_regex", true))
    return std::string("gpt-2");
  return Unimplemented("tokenizer.json: unrecognised byte-level pre-tokenizer {}", pre.dump());
}

struct Vocab {
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  std::vector<float> scores;  // llama only
  std::vector<std::string> merges;
};

// Merges as "left right". The newer [left, right] form may hold spaces inside a part; they are
// written as U+0120 (the byte-level space), as the converter does.
StatusOr<std::vector<std::pair<std::string, std::string>>> ReadMerges(const json& model) {
  std::vector<std::pair<std::string, std::string>> out;
  const json& merges = Field(model, "merges");
  if (merges.is_null()) return out;
  if (!merges.is_array()) return InvalidArgument("tokenizer.json: merges is not a list");
  for (const json& m : merges) {
    if (m.is_string()) {
      const std::string s = m.get<std::string>();
      const size_t sp = s.size() > 1 ? s.find(' ', 1) : std::string::npos;
      if (sp == std::string::npos)
        return InvalidArgument("tokenizer.json: merge '{}' is not 'left right'", s);
      out.emplace_back(s.substr(0, sp), s.substr(sp + 1));
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      out.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
    } else {
      return InvalidArgument("tokenizer.json: merge {} is neither 'a b' nor [a, b]", m.dump());
    }
  }
  return out;
}

std::string EncodeSpaces(const std::string& part) {
  std::string s;
  for (char ch : part) s += ch == ' ' ? std::string("\xC4\xA0") : std::string(1, ch);
  return s;
}

StatusOr<Vocab> BuildVocab(const json& tok, bool spm, int vocab_size) {
  const json& model = Field(tok, "model");
  if (!Field(model, "vocab").is_object())
    return InvalidArgument("tokenizer.json: model.vocab is missing");
  Vocab v;
  v.tokens.assign(vocab_size, "");
  v.types.assign(vocab_size, kUnused);
  std::vector<bool> seen(vocab_size, false);
  auto place = [&](const std::string& text, const json& id_json) -> StatusOr<int> {
    if (!id_json.is_number_integer())
      return InvalidArgument("tokenizer.json: token '{}' has no integer id", text);
    const int64_t id = id_json.get<int64_t>();
    if (id < 0 || id >= vocab_size)
      return InvalidArgument(
          "tokenizer.json: token '{}' has id {}, outside the model's {} embedding rows", text, id,
          vocab_size);
    v.tokens[id] = text;
    seen[id] = true;
    return static_cast<int>(id);
  };
  for (const auto& [text, id] : Field(model, "vocab").items()) {
    XI_ASSIGN_OR_RETURN(int i, place(text, id));
    v.types[i] = spm && IsByteToken(text) ? kByte : kNormal;
  }
  if (Field(tok, "added_tokens").is_array()) {
    for (const json& a : Field(tok, "added_tokens")) {
      if (!Field(a, "content").is_string())
        return InvalidArgument("tokenizer.json: malformed added token {}", a.dump());
      std::string text = Field(a, "content").get<std::string>();
      const bool special = a.value("special", false) || (!spm && LooksSpecial(text));
      // llama.cpp matches user-defined tokens in raw text, before spaces become "▁".
      if (!special && !spm) text = ReplaceAll(text, "\xE2\x96\x81", " ");
      XI_ASSIGN_OR_RETURN(int i, place(text, Field(a, "id")));
      v.types[i] = special ? kControl : kUserDefined;
    }
  }
  for (int i = 0; i < vocab_size; ++i)
    if (!seen[i]) v.tokens[i] = fmt::format("[PAD{}]", i);

  XI_ASSIGN_OR_RETURN(auto merges, ReadMerges(model));
  if (!spm) {
    if (merges.empty()) return InvalidArgument("tokenizer.json: a BPE tokenizer without merges");
    v.merges.reserve(merges.size());
    for (const auto& [l, r] : merges) v.merges.push_back(EncodeSpaces(l) + " " + EncodeSpaces(r));
    return v;
  }
  // Sentencepiece merges the adjacent pair whose joined piece scores highest; scoring each piece
  // by its merge's rank replays the checkpoint's merge order.
  std::map<std::string, int> id_of;
  for (int i = 0; i < vocab_size; ++i)
    if (seen[i]) id_of.emplace(v.tokens[i], i);
  v.scores.assign(vocab_size, 0.f);
  std::vector<bool> scored(vocab_size, false);
  for (size_t r = 0; r < merges.size(); ++r) {
    auto it = id_of.find(merges[r].first + merges[r].second);
    if (it == id_of.end() || scored[it->second]) continue;
    v.scores[it->second] = -static_cast<float>(r);
    scored[it->second] = true;
  }
  // Multi-character pieces no merge forms come last.
  const float last = -static_cast<float>(merges.size());
  for (int i = 0; i < vocab_size; ++i)
    if (!scored[i] && v.types[i] == kNormal && v.tokens[i].size() > 1) v.scores[i] = last;
  return v;
}

std::optional<std::string> TokenContent(const json& entry) {
  if (entry.is_string()) return entry.get<std::string>();
  if (Field(entry, "content").is_string()) return Field(entry, "content").get<std::string>();
  return std::nullopt;
}

// Special token ids and add_bos/add_eos, in the converter's order of precedence.
void AddSpecialTokens(const json& tok, const json& tcfg, const json& config, int vocab_size,
                      GgufWriter* w) {
  struct Kind {
    const char* hf;
    const char* key;
  };
  constexpr Kind kKinds[] = {{"bos", "bos"},       {"eos", "eos"},     {"unk", "unknown"},
                             {"sep", "seperator"}, {"pad", "padding"}, {"cls", "cls"},
                             {"mask", "mask"}};
  std::vector<std::pair<std::string, int64_t>> ids;  // in the order found
  auto set = [&](const char* key, int64_t id) {
    if (id < 0 || id >= vocab_size) return;
    for (const auto& [k, existing] : ids)
      if (k == key) return;
    ids.emplace_back(key, id);
  };
  const json& added = Field(tok, "added_tokens");
  for (const Kind& k : kKinds) {
    const std::string field = std::string(k.hf) + "_token";
    const std::optional<std::string> content = TokenContent(Field(tcfg, field.c_str()));
    if (!content || !added.is_array()) continue;
    // The first added token with that text, as the converter looks it up.
    for (const json& a : added)
      if (Field(a, "content") == *content && Field(a, "id").is_number_integer()) {
        set(k.key, Field(a, "id").get<int64_t>());
        break;
      }
  }
  for (const Kind& k : kKinds) {
    const json& id = Field(config, (std::string(k.hf) + "_token_id").c_str());
    if (id.is_number_integer()) set(k.key, id.get<int64_t>());
  }
  for (const auto& [key, id] : ids)
    w->SetU32(fmt::format("tokenizer.ggml.{}_token_id", key), static_cast<uint32_t>(id));

  std::optional<bool> add_bos, add_eos;
  // A TemplateProcessing post-processor that starts with the BOS token adds it.
  const json& post = Field(tok, "post_processor");
  const std::optional<std::string> bos = TokenContent(Field(tcfg, "bos_token"));
  const json& single = Field(post, "single");
  if (Field(post, "type") == "TemplateProcessing" && single.is_array() && single.size() > 1 &&
      bos && Field(Field(single[0], "SpecialToken"), "id") == *bos)
    add_bos = true;
  if (Field(tcfg, "add_bos_token").is_boolean()) add_bos = tcfg["add_bos_token"].get<bool>();
  if (Field(tcfg, "add_eos_token").is_boolean()) add_eos = tcfg["add_eos_token"].get<bool>();
  if (add_bos) w->SetBool("tokenizer.ggml.add_bos_token", *add_bos);
  if (add_eos) w->SetBool("tokenizer.ggml.add_eos_token", *add_eos);
}

StatusOr<std::string> ChatTemplateSource(const std::string& src_dir, const json& tcfg) {
  if (tcfg.contains("chat_template")) {
    const json& t = Field(tcfg, "chat_template");
    if (t.is_string()) return t.get<std::string>();
    // A list of named templates: the default one is what llama.cpp applies.
    if (t.is_array())
      for (const json& e : t)
        if (Field(e, "name") == "default" && Field(e, "template").is_string())
          return Field(e, "template").get<std::string>();
    XI_LOG_WARN(
        "tokenizer_config.json: chat_template is neither a string nor has a default entry;"
        " the GGUF file gets none");
    return std::string();
  }
  const std::string jinja = src_dir + "/chat_template.jinja";
  if (fs::exists(jinja)) return ReadFileToString(jinja);
  return std::string();
}

}  // namespace

Status AddGgufVocab(const std::string& src_dir, int vocab_size, GgufWriter* w) {
  XI_ASSIGN_OR_RETURN(json tok, ReadJson(src_dir + "/tokenizer.json", true));
  XI_ASSIGN_OR_RETURN(json tcfg, ReadJson(src_dir + "/tokenizer_config.json", false));
  XI_ASSIGN_OR_RETURN(json config, ReadJson(src_dir + "/config.json", true));
  const json& model = Field(tok, "model");
  if (!model.is_object()) return InvalidArgument("{}/tokenizer.json has no model", src_dir);
  const std::string type = model.value("type", "BPE");
  const bool byte_fallback = model.value("byte_fallback", false);
  if (type != "BPE")
    return Unimplemented(
        "tokenizer.json: model type '{}' cannot be exported to GGUF (supported: byte-level BPE "
        "and sentencepiece-style BPE with byte fallback)",
        type);
  const json& decoder = Field(tok, "decoder");
  const bool byte_level =
      HasStep(Field(tok, "pre_tokenizer"), "ByteLevel") || HasStep(decoder, "ByteLevel");
  // Sentencepiece-style: "▁" for spaces, byte fallback, a Sequence decoder (Replace, ByteFallback,
  // Fuse, Strip), as llama.cpp's converter requires.
  const bool spm = byte_fallback && !byte_level && Field(decoder, "type") == "Sequence";
  if (!spm && !byte_level)
    return Unimplemented(
        "tokenizer.json: a BPE tokenizer that is neither byte-level nor sentencepiece-style "
        "with byte fallback cannot be exported to GGUF");
  std::string pre = "default";
  if (!spm) {
    XI_ASSIGN_OR_RETURN(pre, Gpt2PreType(tok));
  }
  XI_ASSIGN_OR_RETURN(Vocab v, BuildVocab(tok, spm, vocab_size));

  w->SetString("tokenizer.ggml.model", spm ? "llama" : "gpt2");
  w->SetString("tokenizer.ggml.pre", pre);
  if (spm && Field(tcfg, "add_prefix_space").is_boolean())
    w->SetBool("tokenizer.ggml.add_space_prefix", tcfg["add_prefix_space"].get<bool>());
  w->SetStringArray("tokenizer.ggml.tokens", v.tokens);
  if (spm) w->SetF32Array("tokenizer.ggml.scores", v.scores);
  w->SetI32Array("tokenizer.ggml.token_type", v.types);
  if (!spm) w->SetStringArray("tokenizer.ggml.merges", v.merges);
  AddSpecialTokens(tok, tcfg, config, vocab_size, w);
  XI_ASSIGN_OR_RETURN(std::string tmpl, ChatTemplateSource(src_dir, tcfg));
  if (!tmpl.empty()) w->SetString("tokenizer.chat_template", tmpl);
  return Status::Ok();
}

}  // namespace xinfer
