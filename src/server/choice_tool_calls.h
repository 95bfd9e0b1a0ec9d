// One choice's output under the request's tool_choice, streamed: the text the model writes comes
// in (after any reasoning is split off) and goes out as content plus OpenAI tool_calls deltas
// (elements of delta.tool_calls, chat's streamed form). The chat and Responses builders both
// stream through it, so a tool call reads the same on either endpoint:
// - tool_choice auto with --tool-call-parser hermes: <tool_call> blocks (HermesToolStream);
// - tool_choice "required": vLLM's guided list of {"name", "parameters"} (RequiredToolCallStream);
//   a list with no call at all gives its text back as content at the end;
// - tool_choice naming a function: the whole text is that call's arguments;
// - otherwise the text is content.
// With parallel_tool_calls false, only the first call.
// One per choice, borrowing the request (which outlives it); not thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "server/protocol.h"
#include "server/required_tool_calls.h"
#include "server/tool_parser.h"

namespace xinfer::server {

class ChoiceToolCalls {
 public:
  explicit ChoiceToolCalls(const GenerationRequest& request);

  struct Delta {
    std::string content;
    std::vector<nlohmann::ordered_json> tool_call_deltas;
  };
  // The next piece of the text; `finished`: the choice's last one.
  Delta Append(std::string text, bool finished);
  // Calls read from the text (hermes or "required"): they make finish_reason "tool_calls". A
  // named tool_choice's call does not (vLLM keeps "stop" there).
  bool parsed_calls() const;

 private:
  const GenerationRequest& req_;
  std::optional<HermesToolStream> hermes_;
  std::optional<RequiredToolCallStream> required_;
  std::string required_text_;   // "required": the text so far, content if no call comes of it
  std::string forced_call_id_;  // named: set once the call's header went out
};

}  // namespace xinfer::server
