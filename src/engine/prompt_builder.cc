#include "engine/prompt_builder.h"

#include "base/json_int32.h"
#include "engine/gguf_tokenizer_loader.h"

namespace xinfer {

using json = nlohmann::ordered_json;

StatusOr<std::unique_ptr<PromptBuilder>> PromptBuilder::Create(
    const std::string& model_dir, const Tokenizer& tokenizer,
    const std::string& chat_template_arg) {
  auto b = std::unique_ptr<PromptBuilder>(new PromptBuilder(tokenizer));
  // A model without a chat template (e.g. a base model) still serves plain prompts.
  // A GGUF file carries its template in the metadata, which its tokenizer already holds.
  auto loaded = IsGgufModelPath(model_dir)
                    ? StatusOr<ChatTemplateConfig>(ChatTemplateConfig{
                          tokenizer.chat_template(), tokenizer.bos_token(), tokenizer.eos_token()})
                    : LoadChatTemplateConfig(model_dir);
  if (!loaded.ok() && loaded.status().code() != StatusCode::kNotFound) return loaded.status();
  ChatTemplateConfig cfg = loaded.ok() ? *loaded : ChatTemplateConfig{};
  if (!chat_template_arg.empty()) {
    XI_ASSIGN_OR_RETURN(cfg.source, ResolveChatTemplateArg(chat_template_arg));
  }
  b->bos_token_ = cfg.bos_token;
  b->eos_token_ = cfg.eos_token;
  if (!cfg.source.empty()) {
    auto parsed = ChatTemplate::Parse(cfg.source);
    if (!parsed.ok()) return parsed.status().WithContext("chat template");
    b->template_.emplace(std::move(*parsed));
  }
  return b;
}

StatusOr<std::string> PromptBuilder::RenderChat(const json& body) const {
  if (!template_) return InvalidArgument("the model has no chat template; pass --chat-template");
  const json& messages = body["messages"];
  if (!messages.is_array() || messages.empty())
    return InvalidArgument("messages must be a non-empty list");
  for (const auto& m : messages)
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string())
      return InvalidArgument("each message must be an object with a string 'role'");
  json tools = body.value("tools", json());
  json kwargs = body.value("chat_template_kwargs", json::object());
  if (!kwargs.is_object()) return InvalidArgument("chat_template_kwargs must be an object");
  bool add_generation_prompt = true;
  if (body.contains("add_generation_prompt") && !body["add_generation_prompt"].is_null()) {
    // Checked, not body.value(): that throws on another type, and /tokenize passes it through.
    if (!body["add_generation_prompt"].is_boolean())
      return InvalidArgument("add_generation_prompt must be a boolean");
    add_generation_prompt = body["add_generation_prompt"].get<bool>();
  }
  json context =
      MakeChatContext(messages, tools, add_generation_prompt, bos_token_, eos_token_, kwargs);
  return template_->Render(context);
}

StatusOr<std::vector<int32_t>> PromptBuilder::Build(const json& body) const {
  if (!body.is_object()) return InvalidArgument("request must be a JSON object");
  const int given =
      body.contains("prompt") + body.contains("prompt_ids") + body.contains("messages");
  if (given != 1) return InvalidArgument("give exactly one of prompt, prompt_ids or messages");
  if (body.contains("prompt_ids")) {
    const json& ids = body["prompt_ids"];
    if (!ids.is_array()) return InvalidArgument("prompt_ids must be a list of token ids");
    std::vector<int32_t> out;
    for (const auto& x : ids) {
      const std::optional<int32_t> id = JsonInt32(x);
      if (!id || *id < 0) return InvalidArgument("prompt_ids must be a list of token ids");
      out.push_back(*id);
    }
    return out;
  }
  if (body.contains("prompt")) {
    if (!body["prompt"].is_string()) return InvalidArgument("prompt must be a string");
    return tokenizer_.Encode(body["prompt"].get<std::string>(), /*add_special_tokens=*/true);
  }
  XI_ASSIGN_OR_RETURN(std::string text, RenderChat(body));
  // The template already placed every special token (as transformers' apply_chat_template).
  return tokenizer_.Encode(text, /*add_special_tokens=*/false);
}

}  // namespace xinfer
