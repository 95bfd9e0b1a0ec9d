#include "server/responses_api.h"

#include <utility>

namespace xinfer::server {
namespace {

using json = nlohmann::ordered_json;

// The request fields a response object repeats, with OpenAI's defaults.
json Echo(const json& body) {
  auto field = [&](const char* key, json fallback) {
    return body.contains(key) && !body[key].is_null() ? body[key] : std::move(fallback);
  };
  return {{"instructions", field("instructions", nullptr)},
          {"max_output_tokens", field("max_output_tokens", nullptr)},
          {"metadata", field("metadata", json::object())},
          {"parallel_tool_calls", field("parallel_tool_calls", true)},
          {"temperature", nullptr},  // set from the parsed parameters
          {"text", field("text", {{"format", {{"type", "text"}}}})},
          {"tool_choice", field("tool_choice", "auto")},
          {"tools", json::array()},
          {"top_p", nullptr},
          {"truncation", "disabled"},
          {"user", field("user", nullptr)}};
}

// An input item's content as chat content: a string, or its text parts.
StatusOr<json> ChatContent(const json& content) {
  if (content.is_string()) return content;
  if (!content.is_array()) return InvalidArgument("input: content must be a string or a list");
  json parts = json::array();
  for (const json& part : content) {
    const std::string type = part.is_object() ? part.value("type", "") : "";
    if ((type != "input_text" && type != "output_text" && type != "text") ||
        !part.contains("text") || !part["text"].is_string())
      return Unimplemented(
          "input: content parts of type '{}' are not supported (input_text and output_text are)",
          type);
    parts.push_back({{"type", "text"}, {"text", part["text"]}});
  }
  return parts;
}

// The chat messages a request amounts to: instructions, then the input.
StatusOr<json> Messages(const json& body) {
  json messages = json::array();
  if (body.contains("instructions") && !body["instructions"].is_null()) {
    if (!body["instructions"].is_string()) return InvalidArgument("instructions must be a string");
    messages.push_back({{"role", "system"}, {"content", body["instructions"]}});
  }
  if (!body.contains("input") || body["input"].is_null())
    return InvalidArgument("input is required");
  const json& input = body["input"];
  if (input.is_string()) {
    messages.push_back({{"role", "user"}, {"content", input}});
    return messages;
  }
  if (!input.is_array() || input.empty())
    return InvalidArgument("input must be a string or a non-empty list of messages");
  for (const json& item : input) {
    if (!item.is_object()) return InvalidArgument("input: each item must be an object");
    const std::string type = item.value("type", "message");
    if (type != "message")
      return Unimplemented(
          "input items of type '{}' are not supported on /v1/responses (messages are); use "
          "/v1/chat/completions for tool calls",
          type);
    if (!item.contains("role") || !item["role"].is_string())
      return InvalidArgument("input: each message needs a string role");
    std::string role = item["role"].get<std::string>();
    if (role == "developer") role = "system";  // as OpenAI reads it for models without the role
    XI_ASSIGN_OR_RETURN(json content, ChatContent(item.value("content", json())));
    messages.push_back({{"role", role}, {"content", std::move(content)}});
  }
  return messages;
}

// text.format → the chat request's response_format.
StatusOr<std::optional<json>> ResponseFormat(const json& body) {
  if (!body.contains("text") || body["text"].is_null()) return std::optional<json>();
  const json& text = body["text"];
  if (!text.is_object()) return InvalidArgument("text must be an object");
  if (!text.contains("format") || text["format"].is_null()) return std::optional<json>();
  const json& format = text["format"];
  const std::string type = format.is_object() ? format.value("type", "") : "";
  if (type == "text") return std::optional<json>();
  if (type == "json_object") return std::optional<json>(json{{"type", "json_object"}});
  if (type == "json_schema") {
    json schema = {{"name", format.value("name", "response")}};
    for (const char* key : {"schema", "strict", "description"})
      if (format.contains(key)) schema[key] = format[key];
    return std::optional<json>(json{{"type", "json_schema"}, {"json_schema", schema}});
  }
  return InvalidArgument("text.format.type must be text, json_object or json_schema, got '{}'",
                         type);
}

}  // namespace

StatusOr<GenerationRequest> ParseResponsesRequest(const json& body, const ProtocolContext& ctx) {
  for (const char* key : {"previous_response_id", "conversation", "prompt"})
    if (body.contains(key) && !body[key].is_null())
      return Unimplemented("{} is not supported: this server does not store responses", key);
  if (body.contains("background") && body["background"] == true)
    return Unimplemented("background is not supported: responses run while the client waits");
  if (body.contains("tools") && body["tools"].is_array() && !body["tools"].empty())
    return Unimplemented(
        "tools are not supported on /v1/responses yet; use /v1/chat/completions for tool calls");
  if (body.contains("truncation") && !body["truncation"].is_null() &&
      body["truncation"] != "disabled")
    return Unimplemented("truncation must be \"disabled\": prompts are not cut to fit");
  if (body.contains("top_logprobs") && body["top_logprobs"].is_number() &&
      body["top_logprobs"] != 0)
    return Unimplemented("top_logprobs is not supported on /v1/responses");

  json chat = json::object();
  if (body.contains("model")) chat["model"] = body["model"];
  XI_ASSIGN_OR_RETURN(chat["messages"], Messages(body));
  if (body.contains("max_output_tokens")) chat["max_tokens"] = body["max_output_tokens"];
  XI_ASSIGN_OR_RETURN(std::optional<json> format, ResponseFormat(body));
  if (format) chat["response_format"] = std::move(*format);
  // OpenAI's sampling fields, and vLLM's extra ones it takes here too.
  for (const char* key : {"stream", "temperature", "top_p", "top_k", "min_p", "repetition_penalty",
                          "presence_penalty", "frequency_penalty", "seed", "stop", "priority"})
    if (body.contains(key)) chat[key] = body[key];

  StatusOr<GenerationRequest> r = ParseChatRequest(chat, ctx);
  if (!r.ok()) {
    // Name the field as the client sent it.
    const std::string& m = r.status().message();
    if (m.rfind("max_tokens", 0) == 0)
      return Status(r.status().code(), "max_output_tokens" + m.substr(10));
    return r.status();
  }
  r->endpoint = Endpoint::kResponses;
  r->id = NewRequestId("resp_");
  r->responses_echo = Echo(body);
  // The sampling values in force (the request's, else the generation config's defaults).
  r->responses_echo["temperature"] = r->params.temperature;
  r->responses_echo["top_p"] = r->params.top_p;
  return r;
}

ResponsesApiBuilder::ResponsesApiBuilder(const GenerationRequest& request) : req_(request) {
  if (req_.reasoning) reasoning_stream_.emplace(*req_.reasoning);
  reasoning_.id = NewRequestId("rs_");
  message_.id = NewRequestId("msg_");
  if (!req_.prompts.empty()) prompt_tokens_ = static_cast<int>(req_.prompts[0].size());
}

std::string ResponsesApiBuilder::Emit(json event) {
  json e = {{"type", event["type"]}, {"sequence_number", sequence_number_++}};
  for (auto& [key, value] : event.items())
    if (key != "type") e[key] = std::move(value);
  return "event: " + e["type"].get<std::string>() +
         "\ndata: " + e.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n";
}

json ResponsesApiBuilder::ReasoningItem(const char* status) const {
  return {{"id", reasoning_.id},
          {"type", "reasoning"},
          {"summary", json::array()},
          {"content", json::array({{{"type", "reasoning_text"}, {"text", reasoning_.text}}})},
          {"encrypted_content", nullptr},
          {"status", status}};
}

json ResponsesApiBuilder::MessageItem(const char* status) const {
  return {{"id", message_.id},
          {"type", "message"},
          {"status", status},
          {"role", "assistant"},
          {"content", json::array({{{"type", "output_text"},
                                    {"text", message_.text},
                                    {"annotations", json::array()},
                                    {"logprobs", json::array()}}})}};
}

json ResponsesApiBuilder::ResponseObject(const char* status) const {
  const bool final = std::string_view(status) != "in_progress";
  json output = json::array();
  json usage = nullptr;
  if (final) {
    if (!reasoning_.text.empty() || reasoning_.output_index >= 0)
      output.push_back(ReasoningItem("completed"));
    output.push_back(MessageItem("completed"));
    usage = {{"input_tokens", prompt_tokens_},
             {"input_tokens_details", {{"cached_tokens", cached_tokens_}}},
             {"output_tokens", completion_tokens_},
             // Not counted apart: the reasoning is told from the content by text, not by token.
             {"output_tokens_details", {{"reasoning_tokens", 0}}},
             {"total_tokens", prompt_tokens_ + completion_tokens_}};
  }
  json incomplete = nullptr;
  if (std::string_view(status) == "incomplete")
    incomplete = {{"reason", finish_reason_ == "length" ? "max_output_tokens" : "cancelled"}};
  json r = {{"id", req_.id},
            {"object", "response"},
            {"created_at", req_.created},
            {"status", status},
            {"background", false},
            {"error", nullptr},
            {"incomplete_details", incomplete},
            {"model", req_.model},
            {"output", output}};
  for (const auto& [key, value] : req_.responses_echo.items()) r[key] = value;
  r["usage"] = usage;
  return r;
}

json ResponsesApiBuilder::PartEvent(const char* type, const Item& item, json fields) {
  json e = {{"type", type},
            {"item_id", item.id},
            {"output_index", item.output_index},
            {"content_index", 0}};
  for (auto& [key, value] : fields.items()) e[key] = std::move(value);
  return e;
}

std::string ResponsesApiBuilder::OpenItem(Item& item, json full) {
  if (item.output_index >= 0) return "";
  item.output_index = next_output_index_++;
  json part = full["content"][0];
  full["content"] = json::array();
  // (One statement per event: the operands of + are evaluated in no fixed order, and the
  // events' sequence numbers must follow the text. The client's stream helper adds the part from
  // content_part.added, then the deltas to it.)
  std::string s = Emit({{"type", "response.output_item.added"},
                        {"output_index", item.output_index},
                        {"item", std::move(full)}});
  s += Emit(PartEvent("response.content_part.added", item, {{"part", std::move(part)}}));
  return s;
}

std::string ResponsesApiBuilder::CloseItem(Item& item, const json& full, const char* text_done,
                                           json text_done_fields) {
  if (item.output_index < 0 || item.done) return "";
  item.done = true;
  std::string s = Emit(PartEvent(text_done, item, std::move(text_done_fields)));
  s += Emit(PartEvent("response.content_part.done", item, {{"part", full["content"][0]}}));
  s += Emit(
      {{"type", "response.output_item.done"}, {"output_index", item.output_index}, {"item", full}});
  return s;
}

std::string ResponsesApiBuilder::CloseReasoning() {
  return CloseItem(reasoning_, ReasoningItem("completed"), "response.reasoning_text.done",
                   {{"text", reasoning_.text}});
}

std::string ResponsesApiBuilder::Add(int /*prompt_index*/, const RequestOutput& out) {
  completion_tokens_ = out.completion_tokens;
  if (out.finished) {
    finish_reason_ = out.finish_reason;
    cached_tokens_ = out.cached_tokens;
  }
  std::string s = req_.stream ? StreamStart() : "";
  std::string reasoning, content = out.text;
  if (reasoning_stream_) {
    ReasoningStream::Delta d = reasoning_stream_->Append(content);
    if (out.finished) {
      ReasoningStream::Delta rest = reasoning_stream_->Finish();
      d.reasoning += rest.reasoning;
      d.content += rest.content;
    }
    reasoning = std::move(d.reasoning);
    content = std::move(d.content);
  }
  if (!reasoning.empty()) {
    if (req_.stream) {
      s += OpenItem(reasoning_, ReasoningItem("in_progress"));
      s += Emit(PartEvent("response.reasoning_text.delta", reasoning_, {{"delta", reasoning}}));
    }
    reasoning_.text += reasoning;
  }
  if (!content.empty()) {
    if (req_.stream) {
      s += CloseReasoning();
      s += OpenItem(message_, MessageItem("in_progress"));
      s += Emit(PartEvent("response.output_text.delta", message_,
                          {{"delta", content}, {"logprobs", json::array()}}));
    }
    message_.text += content;
  }
  return s;
}

std::string ResponsesApiBuilder::StreamStart() {
  // Once, before any other event, whoever asks first (Add does: the exchange starts the stream
  // only when it has events to send, and numbers must follow the order they are sent in).
  if (started_) return "";
  started_ = true;
  std::string s = Emit({{"type", "response.created"}, {"response", ResponseObject("in_progress")}});
  s += Emit({{"type", "response.in_progress"}, {"response", ResponseObject("in_progress")}});
  return s;
}

std::string ResponsesApiBuilder::StreamEnd() {
  std::string s = StreamStart();
  s += CloseReasoning();
  s += OpenItem(message_, MessageItem("in_progress"));  // a message even when nothing was said
  s += CloseItem(message_, MessageItem("completed"), "response.output_text.done",
                 {{"text", message_.text}, {"logprobs", json::array()}});
  const char* status = finish_reason_ == "stop" ? "completed" : "incomplete";
  s += Emit({{"type", std::string("response.") + status}, {"response", ResponseObject(status)}});
  return s;
}

json ResponsesApiBuilder::Response() {
  return ResponseObject(finish_reason_ == "stop" ? "completed" : "incomplete");
}

}  // namespace xinfer::server
