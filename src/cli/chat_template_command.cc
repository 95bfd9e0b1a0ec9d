// `xinfer chat-template --model PATH --input CASE.json [--chat-template FILE_OR_TEXT]`: renders
// a conversation with the model's chat template and prints the prompt exactly (no newline is
// added). CASE.json is one object: messages, optional tools, optional add_generation_prompt
// (default true, like the golden cases), optional kwargs merged into the template context.
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "base/mapped_file.h"
#include "chat_template/chat_template.h"
#include "cli/cli_util.h"
#include "cli/commands.h"

namespace xinfer {
namespace {

struct ChatTemplateOptions {
  std::string model;
  std::string input;
  std::string chat_template;
};

int RunChatTemplate(const ChatTemplateOptions& o) {
  auto config = LoadChatTemplateConfig(o.model);
  std::string source;
  if (!o.chat_template.empty()) {
    auto resolved = ResolveChatTemplateArg(o.chat_template);
    if (!resolved.ok()) return ReportError(resolved.status());
    source = std::move(resolved).value();
    // Without a model template the special tokens are still wanted when the config exists.
    if (!config.ok() && config.status().code() != StatusCode::kNotFound) {
      return ReportError(config.status());
    }
  } else {
    if (!config.ok()) return ReportError(config.status());
    source = config->source;
  }
  const std::string bos = config.ok() ? config->bos_token : "";
  const std::string eos = config.ok() ? config->eos_token : "";

  auto text = ReadFileToString(o.input);
  if (!text.ok()) return ReportError(text.status());
  // ordered_json keeps the key order of tool schemas, which tojson makes visible.
  auto parsed = ParseInputJson(*text);
  if (!parsed.ok()) return ReportError(parsed.status().WithContext(o.input));
  const nlohmann::ordered_json& input = *parsed;
  if (!input.is_object()) {
    return ReportError(InvalidArgument("{}: expected a JSON object", o.input));
  }
  auto messages = input.find("messages");
  if (messages == input.end() || !messages->is_array()) {
    return ReportError(InvalidArgument("{}: \"messages\" must be an array", o.input));
  }
  nlohmann::ordered_json tools;
  if (auto it = input.find("tools"); it != input.end()) tools = *it;
  bool add_generation_prompt = true;
  if (auto it = input.find("add_generation_prompt"); it != input.end()) {
    if (!it->is_boolean()) {
      return ReportError(
          InvalidArgument("{}: \"add_generation_prompt\" must be a boolean", o.input));
    }
    add_generation_prompt = it->get<bool>();
  }
  nlohmann::ordered_json kwargs = nlohmann::ordered_json::object();
  if (auto it = input.find("kwargs"); it != input.end() && !it->is_null()) {
    if (!it->is_object())
      return ReportError(InvalidArgument("{}: \"kwargs\" must be an object", o.input));
    kwargs = *it;
  }

  auto tmpl = ChatTemplate::Parse(source);
  if (!tmpl.ok()) return ReportError(tmpl.status().WithContext("chat template"));
  auto prompt =
      tmpl->Render(MakeChatContext(*messages, tools, add_generation_prompt, bos, eos, kwargs));
  if (!prompt.ok()) return ReportError(prompt.status());
  std::fwrite(prompt->data(), 1, prompt->size(), stdout);
  std::fflush(stdout);
  return 0;
}

}  // namespace

void AddChatTemplateCommand(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<ChatTemplateOptions>();
  CLI::App* cmd =
      app.add_subcommand("chat-template", "Render a conversation with a model's chat template");
  cmd->add_option("--model", opts->model, "Model folder with tokenizer_config.json")->required();
  cmd->add_option("--input", opts->input,
                  "JSON file: {messages, tools?, add_generation_prompt? (default true), kwargs?}")
      ->required();
  cmd->add_option("--chat-template", opts->chat_template,
                  "Template file, or the template text itself, instead of the model's");
  cmd->callback([opts, exit_code] { *exit_code = RunChatTemplate(*opts); });
}

}  // namespace xinfer
