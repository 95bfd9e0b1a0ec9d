// POST /v1/responses: OpenAI's Responses API, as vLLM serves it for text. A request is read as
// the chat request it amounts to (instructions as the system message, input as the messages,
// max_output_tokens, text.format as response_format) and answered as a `response` object, or
// streamed as its events (response.created ... response.output_text.delta ... response.completed).
// Output items: with --reasoning-parser, a reasoning item; the message (one output_text part),
// left out when the model only called functions; and a function_call item per call. Function
// tools and tool_choice take the chat path's tool handling (ChoiceToolCalls: hermes parsing for
// "auto", vLLM's guided list for "required", the named function's guided arguments); the
// function_call / function_call_output items a client passes back are read as the chat
// messages they stand for. Not stored: previous_response_id, conversations, background runs and
// built-in tools (web search, files, MCP, ...) are refused (400 naming them).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "server/choice_tool_calls.h"
#include "server/protocol.h"
#include "server/responses.h"

namespace xinfer::server {

StatusOr<GenerationRequest> ParseResponsesRequest(const nlohmann::ordered_json& body,
                                                  const ProtocolContext& ctx);

// One per exchange; not thread-safe.
class ResponsesApiBuilder : public OutputBuilder {
 public:
  explicit ResponsesApiBuilder(const GenerationRequest& request);

  // Streaming: "event: <type>\ndata: {...}\n\n" events. Not streaming, the items open and
  // close the same way (so they are numbered alike) and no event is built.
  std::string Add(int prompt_index, const RequestOutput& out) override;
  // response.created, response.in_progress (once; Add sends them first when they are not out).
  std::string StreamStart() override;
  // The open items' done events, then response.completed (or response.incomplete).
  std::string StreamEnd() override;
  nlohmann::ordered_json Response() override;

 private:
  struct Item {
    std::string id;
    int output_index = -1;  // -1: not opened yet
    bool done = false;
    std::string text;  // a function call's: its arguments
  };
  struct FunctionCall {
    Item item;
    std::string call_id;
    std::string name;
  };
  std::string Emit(nlohmann::ordered_json event);
  nlohmann::ordered_json ResponseObject(const char* status) const;
  nlohmann::ordered_json ReasoningItem(const char* status) const;
  nlohmann::ordered_json MessageItem(const char* status) const;
  static nlohmann::ordered_json FunctionCallItem(const FunctionCall& call, const char* status);
  // A chat tool_calls delta element (ChoiceToolCalls): a call opened, or its arguments added.
  std::string AddToolCallDelta(const nlohmann::ordered_json& delta);
  // Opens the message for `content` (closing the reasoning first) and adds it.
  std::string AddContent(const std::string& content);
  // The items not closed yet, closed: the reasoning, the message (opened first when nothing else
  // was said, so that a response always has an output), the calls. Once.
  std::string CloseAll();
  // An event about an item's one content part (item_id, output_index, content_index 0).
  static nlohmann::ordered_json PartEvent(const char* type, const Item& item,
                                          nlohmann::ordered_json fields);
  // output_item.added (`full` without its content) and content_part.added; once.
  std::string OpenItem(Item& item, nlohmann::ordered_json full);
  // `text_done` (the part's text in full), content_part.done, output_item.done; once, if open.
  std::string CloseItem(Item& item, const nlohmann::ordered_json& full, const char* text_done,
                        nlohmann::ordered_json text_done_fields);
  std::string CloseReasoning();

  const GenerationRequest& req_;
  std::optional<ReasoningStream> reasoning_stream_;
  ChoiceToolCalls tool_calls_;
  Item reasoning_;
  Item message_;
  std::vector<FunctionCall> calls_;
  bool closed_ = false;   // CloseAll ran
  bool started_ = false;  // response.created sent
  int next_output_index_ = 0;
  int sequence_number_ = 0;
  int prompt_tokens_ = 0;
  int completion_tokens_ = 0;
  int cached_tokens_ = 0;
  std::string finish_reason_;
};

}  // namespace xinfer::server
