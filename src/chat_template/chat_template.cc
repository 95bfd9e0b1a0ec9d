#include "chat_template/chat_template.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "chat_template/ast.h"
#include "chat_template/evaluator.h"
#include "chat_template/parser.h"

namespace xinfer {

StatusOr<ChatTemplate> ChatTemplate::Parse(std::string_view source, const TemplateLimits& limits) {
  XI_ASSIGN_OR_RETURN(std::unique_ptr<jinja::TemplateAst> ast,
                      jinja::ParseTemplate(source, limits.max_parse_depth));
  return ChatTemplate(std::shared_ptr<const jinja::TemplateAst>(std::move(ast)), limits);
}

StatusOr<std::string> ChatTemplate::Render(const nlohmann::ordered_json& context) const {
  jinja::Renderer renderer(limits_);
  return renderer.Run(*ast_, context);
}

nlohmann::ordered_json MakeChatContext(const nlohmann::ordered_json& messages,
                                       const nlohmann::ordered_json& tools,
                                       bool add_generation_prompt, const std::string& bos_token,
                                       const std::string& eos_token,
                                       const nlohmann::ordered_json& kwargs) {
  // Mirrors transformers: render(messages=..., tools=tools or None, documents=None,
  // add_generation_prompt=..., **special_tokens, **kwargs). Special tokens that are unset
  // (None in the config) are not passed, so they stay undefined.
  nlohmann::ordered_json ctx = nlohmann::ordered_json::object();
  ctx["messages"] = messages;
  ctx["tools"] = tools.is_null() ? nlohmann::ordered_json() : tools;
  ctx["documents"] = nullptr;
  ctx["add_generation_prompt"] = add_generation_prompt;
  if (!bos_token.empty()) ctx["bos_token"] = bos_token;
  if (!eos_token.empty()) ctx["eos_token"] = eos_token;
  if (kwargs.is_object()) {
    for (const auto& [k, v] : kwargs.items()) ctx[k] = v;
  }
  return ctx;
}

namespace {

StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot open {}", path);
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return DataLoss("error reading {}", path);
  return ss.str();
}

StatusOr<std::string> TokenString(const nlohmann::json& cfg, const char* key) {
  auto it = cfg.find(key);
  if (it == cfg.end() || it->is_null()) return std::string();
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object()) {
    auto content = it->find("content");
    if (content != it->end() && content->is_string()) return content->get<std::string>();
  }
  return InvalidArgument(
      "tokenizer_config.json: {} must be a string, null or an object with "
      "\"content\"",
      key);
}

}  // namespace

StatusOr<ChatTemplateConfig> LoadChatTemplateConfig(const std::string& model_dir) {
  const std::string path = (std::filesystem::path(model_dir) / "tokenizer_config.json").string();
  XI_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  const nlohmann::json cfg = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (cfg.is_discarded() || !cfg.is_object())
    return InvalidArgument("{} is not a JSON object", path);
  ChatTemplateConfig out;
  XI_ASSIGN_OR_RETURN(out.bos_token, TokenString(cfg, "bos_token"));
  XI_ASSIGN_OR_RETURN(out.eos_token, TokenString(cfg, "eos_token"));
  // Newer transformers versions save the template next to the config; it takes precedence.
  const std::filesystem::path jinja_file = std::filesystem::path(model_dir) / "chat_template.jinja";
  std::error_code ec;
  if (std::filesystem::is_regular_file(jinja_file, ec)) {
    XI_ASSIGN_OR_RETURN(out.source, ReadFile(jinja_file.string()));
    return out;
  }
  auto it = cfg.find("chat_template");
  if (it == cfg.end() || it->is_null()) return NotFound("{} has no chat_template", path);
  if (it->is_string()) {
    out.source = it->get<std::string>();
    return out;
  }
  if (it->is_array()) {
    for (const auto& entry : *it) {
      if (!entry.is_object()) continue;
      auto name = entry.find("name");
      auto tmpl = entry.find("template");
      if (name != entry.end() && name->is_string() && name->get<std::string>() == "default" &&
          tmpl != entry.end() && tmpl->is_string()) {
        out.source = tmpl->get<std::string>();
        return out;
      }
    }
    return NotFound("{}: chat_template list has no entry named \"default\"", path);
  }
  return InvalidArgument("{}: chat_template must be a string or a list of {{name, template}}",
                         path);
}

StatusOr<std::string> ResolveChatTemplateArg(const std::string& arg) {
  std::error_code ec;
  if (!arg.empty() && arg.size() < 4096 && std::filesystem::is_regular_file(arg, ec)) {
    return ReadFile(arg);
  }
  const bool looks_like_template = arg.find("{{") != std::string::npos ||
                                   arg.find("{%") != std::string::npos ||
                                   arg.find("{#") != std::string::npos;
  const bool looks_like_path =
      arg.find('\n') == std::string::npos &&
      (arg.find('/') != std::string::npos || (arg.size() > 6 && arg.ends_with(".jinja")));
  if (!looks_like_template && looks_like_path) {
    return NotFound("chat template file not found: {}", arg);
  }
  return arg;
}

}  // namespace xinfer
