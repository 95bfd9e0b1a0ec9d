// PromptBuilder: a request's prompt, given as `prompt` (text), `prompt_ids` or chat `messages`,
// turned into token ids the way vLLM does it (chat: the model's template or an override, with
// add_generation_prompt or continue_final_message, `tools` and `chat_template_kwargs`, then
// tokenized without adding special tokens again). Shared by the offline batch mode and the server.
// Thread-safety: const methods are safe to call concurrently (the template is parsed once).
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "chat_template/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace xinfer {

class PromptBuilder {
 public:
  // `chat_template_arg`: "" for the model's own template, else a file path or template text.
  static StatusOr<std::unique_ptr<PromptBuilder>> Create(const std::string& model_dir,
                                                         const Tokenizer& tokenizer,
                                                         const std::string& chat_template_arg);

  // Exactly one of body["prompt"], body["prompt_ids"], body["messages"] must be present.
  // Chat bodies are ordered_json so tool schemas keep their key order (as Jinja2/HF print them).
  StatusOr<std::vector<int32_t>> Build(const nlohmann::ordered_json& body) const;
  // Renders chat messages to the prompt text (no tokenization).
  StatusOr<std::string> RenderChat(const nlohmann::ordered_json& body) const;

 private:
  PromptBuilder(const Tokenizer& tokenizer) : tokenizer_(tokenizer) {}
  const Tokenizer& tokenizer_;
  std::optional<ChatTemplate> template_;  // absent when the model has none
  std::string bos_token_, eos_token_;
};

}  // namespace xinfer
