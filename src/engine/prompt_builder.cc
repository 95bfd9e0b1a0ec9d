#include "engine/prompt_builder.h"

#include "base/json_int32.h"
#include "engine/gguf_tokenizer_loader.h"

namespace xinfer {

using json = nlohmann::ordered_json;

namespace {

StatusOr<std::optional<bool>> OptionalBool(const json& body, const char* key) {
  if (!body.contains(key) || body[key].is_null()) return std::optional<bool>();
  if (!body[key].is_boolean()) return InvalidArgument("{} must be a boolean", key);
  return std::optional<bool>(body[key].get<bool>());
}

// The text continue_final_message continues: the final message's content, or its last text part.
StatusOr<std::string> FinalMessageText(const json& message) {
  const json content = message.value("content", json());
  std::string text;
  if (content.is_string()) {
    text = content.get<std::string>();
  } else if (content.is_array()) {
    for (auto part = content.rbegin(); part != content.rend(); ++part) {
      if (part->is_object() && part->contains("text") && (*part)["text"].is_string()) {
        text = (*part)["text"].get<std::string>();
        break;
      }
    }
  }
  if (text.find_first_not_of(" \t\r\n") == std::string::npos)
    return InvalidArgument(
        "continue_final_message needs text to continue in the final message (it has none)");
  return text;
}

// transformers' apply_chat_template(continue_final_message=True), which vLLM uses: the chat
// rendered closed, cut right after the final message's text (the template's end-of-turn
// dropped), whitespace the template kept after it kept as the message had it.
StatusOr<std::string> CutAfterFinalMessage(std::string rendered, const std::string& final_text) {
  const size_t first = final_text.find_first_not_of(" \t\r\n");
  const size_t last = final_text.find_last_not_of(" \t\r\n");
  const std::string stripped = final_text.substr(first, last - first + 1);
  const std::string lstripped = final_text.substr(first);
  const size_t at = rendered.rfind(stripped);
  if (at == std::string::npos)
    return InvalidArgument(
        "continue_final_message: the final message does not appear in the prompt the chat "
        "template rendered (the template changes it), so it cannot be continued");
  const bool kept = rendered.compare(at, lstripped.size(), lstripped) == 0;
  rendered.resize(at + (kept ? lstripped.size() : stripped.size()));
  return rendered;
}

}  // namespace

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
  // Checked, not body.value(): that throws on another type, and /tokenize passes them through.
  XI_ASSIGN_OR_RETURN(const std::optional<bool> add_generation_prompt,
                      OptionalBool(body, "add_generation_prompt"));
  XI_ASSIGN_OR_RETURN(const std::optional<bool> continue_final,
                      OptionalBool(body, "continue_final_message"));
  if (continue_final.value_or(false)) {
    if (add_generation_prompt.value_or(false))
      return InvalidArgument(
          "continue_final_message and add_generation_prompt cannot both be true: the first "
          "continues the final message, the second opens a new assistant message");
    XI_ASSIGN_OR_RETURN(std::string final_text, FinalMessageText(messages.back()));
    json context = MakeChatContext(messages, tools, /*add_generation_prompt=*/false, bos_token_,
                                   eos_token_, kwargs);
    XI_ASSIGN_OR_RETURN(std::string rendered, template_->Render(context));
    return CutAfterFinalMessage(std::move(rendered), final_text);
  }
  json context = MakeChatContext(messages, tools, add_generation_prompt.value_or(true), bos_token_,
                                 eos_token_, kwargs);
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
