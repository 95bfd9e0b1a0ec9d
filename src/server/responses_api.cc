#include "server/responses_api.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "base/check.h"

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
          {"tools", field("tools", json::array())},
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

// A string field of an input item, required.
StatusOr<std::string> ItemString(const json& item, const char* type, const char* key) {
  if (!item.contains(key) || !item[key].is_string())
    return InvalidArgument("input: a {} item needs a string '{}'", type, key);
  return item[key].get<std::string>();
}

// The text of a reasoning item passed back (its content, else its summary).
std::string ReasoningText(const json& item) {
  std::string text;
  for (const char* key : {"content", "summary"}) {
    if (!item.contains(key) || !item[key].is_array()) continue;
    for (const json& part : item[key])
      if (part.is_object() && part.contains("text") && part["text"].is_string())
        text += part["text"].get<std::string>();
    if (!text.empty()) break;
  }
  return text;
}

// The chat messages a request amounts to: instructions, then the input. The items a client
// passes back from an earlier response become what the chat template expects: function_call
// items the tool_calls of one assistant message (with the message item before them, as a model
// writes text and then calls), function_call_output items tool messages, and a reasoning item
// the reasoning_content of the assistant turn it precedes (Qwen3's template shows it within the
// tool-calling turn).
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
  std::string reasoning;  // of the next assistant turn
  // The assistant message the next function_call joins: the last message, if it is one.
  auto assistant_turn = [&]() -> json& {
    if (messages.empty() || messages.back()["role"] != "assistant")
      messages.push_back({{"role", "assistant"}, {"content", ""}});
    json& m = messages.back();
    if (!reasoning.empty() && !m.contains("reasoning_content")) m["reasoning_content"] = reasoning;
    reasoning.clear();
    return m;
  };
  for (const json& item : input) {
    if (!item.is_object()) return InvalidArgument("input: each item must be an object");
    const std::string type = item.value("type", "message");
    if (type == "reasoning") {
      reasoning = ReasoningText(item);
      continue;
    }
    if (type == "function_call") {
      XI_ASSIGN_OR_RETURN(std::string call_id, ItemString(item, "function_call", "call_id"));
      XI_ASSIGN_OR_RETURN(std::string name, ItemString(item, "function_call", "name"));
      XI_ASSIGN_OR_RETURN(std::string arguments, ItemString(item, "function_call", "arguments"));
      json& m = assistant_turn();
      if (!m.contains("tool_calls")) m["tool_calls"] = json::array();
      m["tool_calls"].push_back({{"id", std::move(call_id)},
                                 {"type", "function"},
                                 {"function", {{"name", name}, {"arguments", arguments}}}});
      continue;
    }
    if (type == "function_call_output") {
      XI_ASSIGN_OR_RETURN(std::string call_id, ItemString(item, "function_call_output", "call_id"));
      if (!item.contains("output"))
        return InvalidArgument("input: a function_call_output item needs an 'output'");
      XI_ASSIGN_OR_RETURN(json output, ChatContent(item["output"]));
      messages.push_back(
          {{"role", "tool"}, {"tool_call_id", std::move(call_id)}, {"content", std::move(output)}});
      continue;
    }
    if (type != "message")
      return Unimplemented(
          "input items of type '{}' are not supported on /v1/responses (message, function_call, "
          "function_call_output and reasoning are)",
          type);
    if (!item.contains("role") || !item["role"].is_string())
      return InvalidArgument("input: each message needs a string role");
    std::string role = item["role"].get<std::string>();
    if (role == "developer") role = "system";  // as OpenAI reads it for models without the role
    XI_ASSIGN_OR_RETURN(json content, ChatContent(item.value("content", json())));
    if (role == "assistant") {
      // A new turn: a message after the calls of the last one is not part of it.
      if (!messages.empty() && messages.back()["role"] == "assistant")
        messages.push_back({{"role", "assistant"}, {"content", ""}});
      assistant_turn()["content"] = std::move(content);
      continue;
    }
    reasoning.clear();  // reasoning belongs to the assistant turn right after it
    messages.push_back({{"role", role}, {"content", std::move(content)}});
  }
  return messages;
}

// tools (Responses' flat form {"type": "function", "name", "description", "parameters"}) → chat
// tools ({"type": "function", "function": {...}}).
StatusOr<json> ChatTools(const json& tools) {
  if (!tools.is_array()) return InvalidArgument("tools must be a list");
  json out = json::array();
  for (const json& t : tools) {
    const std::string type = t.is_object() ? t.value("type", "") : "";
    if (type != "function")
      return Unimplemented(
          "tools of type '{}' are not supported on /v1/responses (function tools are)", type);
    if (!t.contains("name") || !t["name"].is_string())
      return InvalidArgument("tools: a function tool needs a string 'name'");
    json function = {{"name", t["name"]}};
    for (const char* key : {"description", "parameters"})
      if (t.contains(key) && !t[key].is_null()) function[key] = t[key];
    out.push_back({{"type", "function"}, {"function", std::move(function)}});
  }
  return out;
}

// tool_choice: "none" / "auto" / "required" as they are; {"type": "function", "name"} → chat's
// {"type": "function", "function": {"name"}}.
StatusOr<json> ChatToolChoice(const json& choice) {
  if (choice.is_string()) return choice;
  const std::string type = choice.is_object() ? choice.value("type", "") : "";
  if (type == "function" && choice.contains("name") && choice["name"].is_string())
    return json{{"type", "function"}, {"function", {{"name", choice["name"]}}}};
  return InvalidArgument(
      "tool_choice must be 'none', 'auto', 'required' or {{\"type\": \"function\", \"name\": "
      "...}}");
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
  if (body.contains("tools") && !body["tools"].is_null()) {
    XI_ASSIGN_OR_RETURN(chat["tools"], ChatTools(body["tools"]));
  }
  if (body.contains("tool_choice") && !body["tool_choice"].is_null()) {
    XI_ASSIGN_OR_RETURN(chat["tool_choice"], ChatToolChoice(body["tool_choice"]));
  }
  if (body.contains("parallel_tool_calls"))
    chat["parallel_tool_calls"] = body["parallel_tool_calls"];
  // OpenAI's sampling fields, and vLLM's extra ones it takes here too.
  for (const char* key :
       {"stream", "temperature", "top_p", "top_k", "min_p", "repetition_penalty",
        "presence_penalty", "frequency_penalty", "seed", "stop", "priority", "logit_bias"})
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

ResponsesApiBuilder::ResponsesApiBuilder(const GenerationRequest& request)
    : req_(request), tool_calls_(request) {
  if (req_.reasoning) reasoning_stream_.emplace(*req_.reasoning);
  reasoning_.id = NewRequestId("rs_");
  message_.id = NewRequestId("msg_");
  if (!req_.prompts.empty()) prompt_tokens_ = static_cast<int>(req_.prompts[0].size());
}

std::string ResponsesApiBuilder::Emit(json event) {
  if (!req_.stream) return "";  // the items open and close all the same; nothing is written
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

json ResponsesApiBuilder::FunctionCallItem(const FunctionCall& call, const char* status) {
  return {{"id", call.item.id},      {"type", "function_call"}, {"status", status},
          {"call_id", call.call_id}, {"name", call.name},       {"arguments", call.item.text}};
}

json ResponsesApiBuilder::ResponseObject(const char* status) const {
  const bool final = std::string_view(status) != "in_progress";
  json output = json::array();
  json usage = nullptr;
  if (final) {
    // The items in the order they were opened (CloseAll opened every one there is).
    std::vector<std::pair<int, json>> items;
    if (reasoning_.output_index >= 0)
      items.emplace_back(reasoning_.output_index, ReasoningItem("completed"));
    if (message_.output_index >= 0)
      items.emplace_back(message_.output_index, MessageItem("completed"));
    for (const FunctionCall& call : calls_)
      items.emplace_back(call.item.output_index, FunctionCallItem(call, "completed"));
    std::sort(items.begin(), items.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    for (auto& [index, item] : items) output.push_back(std::move(item));
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

std::string ResponsesApiBuilder::AddContent(const std::string& content) {
  std::string s = CloseReasoning();
  s += OpenItem(message_, MessageItem("in_progress"));
  if (req_.stream)
    s += Emit(PartEvent("response.output_text.delta", message_,
                        {{"delta", content}, {"logprobs", json::array()}}));
  message_.text += content;
  return s;
}

std::string ResponsesApiBuilder::AddToolCallDelta(const json& delta) {
  const size_t index = delta["index"].get<size_t>();
  const json& function = delta["function"];
  if (delta.contains("id")) {  // the call's header: a new function_call item
    std::string s = CloseReasoning();
    FunctionCall call;
    call.item.id = NewRequestId("fc_");
    call.item.output_index = next_output_index_++;
    call.call_id = delta["id"].get<std::string>();
    call.name = function["name"].get<std::string>();
    calls_.push_back(std::move(call));
    XI_CHECK(calls_.size() == index + 1);  // ChoiceToolCalls numbers calls in order
    s += Emit({{"type", "response.output_item.added"},
               {"output_index", calls_.back().item.output_index},
               {"item", FunctionCallItem(calls_.back(), "in_progress")}});
    return s;
  }
  FunctionCall& call = calls_.at(index);
  const std::string& piece = function["arguments"].get_ref<const std::string&>();
  call.item.text += piece;
  if (!req_.stream) return "";
  return Emit({{"type", "response.function_call_arguments.delta"},
               {"item_id", call.item.id},
               {"output_index", call.item.output_index},
               {"delta", piece}});
}

std::string ResponsesApiBuilder::CloseAll() {
  if (closed_) return "";
  closed_ = true;
  std::string s = CloseReasoning();
  if (calls_.empty()) s += OpenItem(message_, MessageItem("in_progress"));  // always an output
  s += CloseItem(message_, MessageItem("completed"), "response.output_text.done",
                 {{"text", message_.text}, {"logprobs", json::array()}});
  for (FunctionCall& call : calls_) {
    call.item.done = true;
    s += Emit({{"type", "response.function_call_arguments.done"},
               {"item_id", call.item.id},
               {"output_index", call.item.output_index},
               {"arguments", call.item.text}});
    s += Emit({{"type", "response.output_item.done"},
               {"output_index", call.item.output_index},
               {"item", FunctionCallItem(call, "completed")}});
  }
  return s;
}

std::string ResponsesApiBuilder::Add(int /*prompt_index*/, const RequestOutput& out) {
  completion_tokens_ = out.completion_tokens;
  if (out.finished) {
    finish_reason_ = out.finish_reason;
    cached_tokens_ = out.cached_tokens;
  }
  std::string s = StreamStart();
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
    s += OpenItem(reasoning_, ReasoningItem("in_progress"));
    if (req_.stream)
      s += Emit(PartEvent("response.reasoning_text.delta", reasoning_, {{"delta", reasoning}}));
    reasoning_.text += reasoning;
  }
  ChoiceToolCalls::Delta d = tool_calls_.Append(std::move(content), out.finished);
  if (!d.content.empty()) s += AddContent(d.content);
  for (const json& delta : d.tool_call_deltas) s += AddToolCallDelta(delta);
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
  s += CloseAll();
  const char* status = finish_reason_ == "stop" ? "completed" : "incomplete";
  s += Emit({{"type", std::string("response.") + status}, {"response", ResponseObject(status)}});
  return s;
}

json ResponsesApiBuilder::Response() {
  CloseAll();
  return ResponseObject(finish_reason_ == "stop" ? "completed" : "incomplete");
}

}  // namespace xinfer::server
