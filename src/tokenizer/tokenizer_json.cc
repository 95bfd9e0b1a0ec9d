// Tokenizer::FromJsonText: tokenizer.json + tokenizer_config.json → Tokenizer. All nlohmann
// exceptions stop here and become Status values.
#include <nlohmann/json.hpp>

#include "base/json_depth.h"
#include "tokenizer/component_json.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_impl.h"

namespace xinfer {
namespace {

using nlohmann::json;
using tok::JsonBool;
using tok::JsonString;
using tok::JsonType;

struct SpecialIds {
  std::vector<int32_t> prefix, suffix;
};

// Resolves a special token name through the template's own table, then the vocabulary.
StatusOr<std::vector<int32_t>> TemplateTokenIds(const json& special_tokens, const std::string& name,
                                                const Tokenizer::Impl& impl) {
  if (special_tokens.is_object() && special_tokens.contains(name)) {
    return special_tokens.at(name).at("ids").get<std::vector<int32_t>>();
  }
  if (auto it = impl.added_by_content.find(name); it != impl.added_by_content.end()) {
    return std::vector<int32_t>{it->second};
  }
  if (auto id = impl.model->TokenToId(name)) return std::vector<int32_t>{*id};
  return InvalidArgument("post_processor: unknown special token '{}'", name);
}

// Only the single-sequence template matters for Encode: what goes before and after $A.
Status ParsePostProcessor(const json& j, const Tokenizer::Impl& impl, SpecialIds* out) {
  if (j.is_null()) return Status::Ok();
  const std::string type = JsonType(j);
  if (type == "ByteLevel") return Status::Ok();  // offsets only
  if (type == "Sequence") {
    for (const json& p : j.at("processors")) {
      SpecialIds inner;
      XI_RETURN_IF_ERROR(ParsePostProcessor(p, impl, &inner));
      // A later processor wraps the output of the earlier ones.
      out->prefix.insert(out->prefix.begin(), inner.prefix.begin(), inner.prefix.end());
      out->suffix.insert(out->suffix.end(), inner.suffix.begin(), inner.suffix.end());
    }
    return Status::Ok();
  }
  if (type == "RobertaProcessing" || type == "BertProcessing") {
    out->prefix.push_back(j.at("cls").at(1).get<int32_t>());
    out->suffix.push_back(j.at("sep").at(1).get<int32_t>());
    return Status::Ok();
  }
  if (type != "TemplateProcessing") {
    return Unimplemented("tokenizer.json: unsupported post_processor type '{}'", type);
  }
  const json& special = j.contains("special_tokens") ? j.at("special_tokens") : json();
  std::vector<std::pair<bool, std::string>> items;  // (is_sequence, special token name)
  const json& single = j.at("single");
  if (single.is_string()) {
    // "<s> $A </s>" style, with optional ":type_id" suffixes.
    std::string s = single.get<std::string>();
    size_t pos = 0;
    while (pos < s.size()) {
      size_t end = s.find(' ', pos);
      if (end == std::string::npos) end = s.size();
      std::string item = s.substr(pos, end - pos);
      pos = end + 1;
      if (item.empty()) continue;
      if (size_t colon = item.rfind(':'); colon != std::string::npos && colon > 0) {
        item.resize(colon);
      }
      items.emplace_back(item[0] == '$', item);
    }
  } else {
    for (const json& piece : single) {
      if (piece.contains("Sequence")) {
        items.emplace_back(true, "");
      } else {
        items.emplace_back(false, piece.at("SpecialToken").at("id").get<std::string>());
      }
    }
  }
  bool seen_sequence = false;
  for (const auto& [is_seq, name] : items) {
    if (is_seq) {
      seen_sequence = true;
      continue;
    }
    XI_ASSIGN_OR_RETURN(std::vector<int32_t> ids, TemplateTokenIds(special, name, impl));
    auto& dst = seen_sequence ? out->suffix : out->prefix;
    dst.insert(dst.end(), ids.begin(), ids.end());
  }
  return Status::Ok();
}

// bos_token / eos_token: a string, null, or {"content": "..."}.
std::string SpecialTokenContent(const json& config, const char* key) {
  auto it = config.find(key);
  if (it == config.end() || it->is_null()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object()) return JsonString(*it, "content");
  return "";
}

std::string ChatTemplate(const json& config) {
  auto it = config.find("chat_template");
  if (it == config.end() || it->is_null()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_array()) {
    for (const json& t : *it) {
      if (t.is_object() && JsonString(t, "name") == "default") return JsonString(t, "template");
    }
  }
  return "";
}

Status ApplyConfig(const json& config, Tokenizer::Impl* impl) {
  impl->bos_token = SpecialTokenContent(config, "bos_token");
  impl->eos_token = SpecialTokenContent(config, "eos_token");
  impl->chat_template = ChatTemplate(config);
  auto lookup = [impl](const std::string& t) -> std::optional<int32_t> {
    if (t.empty()) return std::nullopt;
    if (auto it = impl->added_by_content.find(t); it != impl->added_by_content.end()) {
      return it->second;
    }
    return impl->model->TokenToId(t);
  };
  impl->bos_id = lookup(impl->bos_token);
  impl->eos_id = lookup(impl->eos_token);

  // transformers' Llama/Gemma fast tokenizers rebuild the template from add_bos_token /
  // add_eos_token; other classes only honor an explicit request to add the token.
  const std::string cls = JsonString(config, "tokenizer_class");
  const bool rebuilds =
      cls.find("Llama") != std::string::npos || cls.find("Gemma") != std::string::npos;
  auto flag = [&config](const char* key) -> std::optional<bool> {
    auto it = config.find(key);
    if (it == config.end() || !it->is_boolean()) return std::nullopt;
    return it->get<bool>();
  };
  if (auto add_bos = flag("add_bos_token"); add_bos.has_value() && impl->bos_id.has_value()) {
    auto& p = impl->prefix_ids;
    const bool has = !p.empty() && p.front() == *impl->bos_id;
    if (*add_bos && !has) p.insert(p.begin(), *impl->bos_id);
    if (!*add_bos && has && rebuilds) p.erase(p.begin());
  }
  if (auto add_eos = flag("add_eos_token"); add_eos.has_value() && impl->eos_id.has_value()) {
    auto& s = impl->suffix_ids;
    const bool has = !s.empty() && s.back() == *impl->eos_id;
    if (*add_eos && !has) s.push_back(*impl->eos_id);
    if (!*add_eos && has && rebuilds) s.pop_back();
  }
  return Status::Ok();
}

// Real tokenizer.json files nest a handful of levels; the component parsers recurse once per
// Sequence, so a file nesting Sequences 200,000 deep overflowed the stack.
constexpr int kMaxTokenizerJsonDepth = 128;

StatusOr<std::unique_ptr<Tokenizer>> Build(std::string_view tokenizer_json,
                                           std::string_view config_json) {
  bool too_deep = false;
  json root = ParseJsonNoDeeperThan<json>(tokenizer_json, kMaxTokenizerJsonDepth, &too_deep);
  if (too_deep)
    return InvalidArgument("tokenizer.json: nested more than {} levels deep",
                           kMaxTokenizerJsonDepth);
  if (root.is_discarded()) return InvalidArgument("tokenizer.json: malformed JSON");
  if (!root.is_object()) return InvalidArgument("tokenizer.json: top level must be an object");
  if (!root.contains("model")) return InvalidArgument("tokenizer.json: missing 'model'");

  auto impl = std::make_unique<Tokenizer::Impl>();
  XI_ASSIGN_OR_RETURN(impl->model, tok::ModelFromJson(root.at("model")));
  const json null_json;
  auto section = [&](const char* key) -> const json& {
    return root.contains(key) ? root.at(key) : null_json;
  };
  XI_ASSIGN_OR_RETURN(impl->normalizer, tok::NormalizerFromJson(section("normalizer")));
  XI_ASSIGN_OR_RETURN(impl->pre_tokenizer, tok::PreTokenizerFromJson(section("pre_tokenizer")));
  XI_ASSIGN_OR_RETURN(impl->decoder, tok::DecoderFromJson(section("decoder")));

  for (const json& t : section("added_tokens")) {
    tok::AddedToken a;
    a.id = t.at("id").get<int32_t>();
    a.content = t.at("content").get<std::string>();
    if (a.id < 0 || a.id > tok::kMaxTokenId)
      return InvalidArgument("tokenizer.json: added token '{}' has id {} outside [0, {}]",
                             a.content, a.id, tok::kMaxTokenId);
    a.single_word = JsonBool(t, "single_word", false);
    a.lstrip = JsonBool(t, "lstrip", false);
    a.rstrip = JsonBool(t, "rstrip", false);
    a.normalized = JsonBool(t, "normalized", true);
    a.special = JsonBool(t, "special", false);
    impl->added.insert_or_assign(a.id, std::move(a));
  }
  XI_RETURN_IF_ERROR(impl->Finalize());

  SpecialIds special;
  XI_RETURN_IF_ERROR(ParsePostProcessor(section("post_processor"), *impl, &special));
  impl->prefix_ids = std::move(special.prefix);
  impl->suffix_ids = std::move(special.suffix);

  if (!config_json.empty()) {
    json config = json::parse(config_json, nullptr, /*allow_exceptions=*/false);
    if (config.is_discarded() || !config.is_object()) {
      return InvalidArgument("tokenizer_config.json: malformed JSON");
    }
    XI_RETURN_IF_ERROR(ApplyConfig(config, impl.get()));
  }
  return std::make_unique<Tokenizer>(std::move(impl));
}

}  // namespace

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::FromJsonText(std::string_view tokenizer_json,
                                                             std::string_view config_json) {
  try {
    return Build(tokenizer_json, config_json);
  } catch (const json::exception& e) {
    // Ill-typed or missing fields deep inside a section.
    return InvalidArgument("tokenizer.json: unexpected structure: {}", e.what());
  } catch (const std::exception& e) {
    return Internal("loading tokenizer: {}", e.what());
  }
}

}  // namespace xinfer
