// Engine outputs → OpenAI response bodies and SSE chunks (chat.completion(.chunk),
// text_completion), with logprobs, usage, and the reasoning/tool-call parsers applied.
// A ResponseBuilder belongs to one HTTP exchange; not thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "engine/llm_engine.h"
#include "server/choice_tool_calls.h"
#include "server/protocol.h"
#include "server/reasoning_parser.h"
#include "server/tool_parser.h"

namespace xinfer::server {

// What HandleGeneration writes a request's engine outputs with: one per HTTP exchange.
class OutputBuilder {
 public:
  virtual ~OutputBuilder() = default;
  // Records one engine output of prompt `prompt_index`; when streaming, returns the SSE events
  // it produces.
  virtual std::string Add(int prompt_index, const RequestOutput& out) = 0;
  // SSE: the first events of a stream.
  virtual std::string StreamStart() = 0;
  // SSE: the last events of a stream.
  virtual std::string StreamEnd() = 0;
  // The complete non-streaming response.
  virtual nlohmann::ordered_json Response() = 0;
};

// Chat completions and completions.
class ResponseBuilder : public OutputBuilder {
 public:
  ResponseBuilder(const GenerationRequest& request, const Tokenizer& tokenizer);

  // Streaming: "data: {...}\n\n" chunks.
  std::string Add(int prompt_index, const RequestOutput& out) override;
  // Chat: each choice's role delta.
  std::string StreamStart() override;
  // The usage chunk (when asked for) and "data: [DONE]".
  std::string StreamEnd() override;
  nlohmann::ordered_json Response() override;

 private:
  struct Choice {
    int index = 0;
    std::string text;
    std::vector<TokenLogprobs> logprobs;
    std::string finish_reason;
    std::string stop_reason;
    bool finished = false;
    int completion_tokens = 0;
    size_t text_offset = 0;  // completions logprobs
    // params.prompt_logprobs >= 0: the engine's, from the choice's first output.
    std::vector<TokenLogprobs> prompt_logprobs;
    bool echo_sent = false;  // streamed completions: the echoed prompt went out
    std::optional<ReasoningStream> reasoning;
    std::optional<ChoiceToolCalls> tool_calls;  // chat, streaming
  };

  nlohmann::ordered_json Usage() const;
  nlohmann::ordered_json ChatLogprobs(const std::vector<TokenLogprobs>& lps) const;
  // `prompt`'s tokens first when given (echo: the first without a logprob), then `lps`.
  nlohmann::ordered_json CompletionLogprobs(
      const std::vector<TokenLogprobs>& lps, size_t* offset,
      const std::vector<int32_t>* prompt = nullptr,
      const std::vector<TokenLogprobs>* prompt_lps = nullptr) const;
  // vLLM's prompt_logprobs: null for the first prompt token, then {"<id>": {logprob, rank,
  // decoded_token}} with the prompt token and its top alternatives.
  nlohmann::ordered_json PromptLogprobs(const std::vector<TokenLogprobs>& lps) const;
  std::string TokenText(int32_t id) const;
  // A logprobs entry's token: its text, or "token_id:<id>" (GenerationRequest::tokens_as_ids).
  std::string LogprobToken(int32_t id) const;
  std::string ChatChunk(const Choice& c, nlohmann::ordered_json delta,
                        const nlohmann::ordered_json& logprobs, const char* finish_reason,
                        const std::string& stop_reason) const;
  std::string StreamChat(Choice& c, const RequestOutput& out);
  std::string StreamCompletion(Choice& c, const RequestOutput& out);
  static std::string Event(const nlohmann::ordered_json& j);

  const GenerationRequest& req_;
  const Tokenizer& tokenizer_;
  std::vector<Choice> choices_;     // prompt i, choice j at i * n + j
  std::vector<int> prompt_tokens_;  // per prompt
  std::vector<int> cached_tokens_;  // per prompt
};

// The prompt text a completions request echoes.
std::string EchoText(const Tokenizer& tokenizer, const std::vector<int32_t>& prompt);

}  // namespace xinfer::server
