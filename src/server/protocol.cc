#include "server/protocol.h"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <set>

#include "base/json_int32.h"
#include "engine/request_json.h"

namespace xinfer::server {
namespace {

using json = nlohmann::ordered_json;

int64_t NowSeconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// body[key] is the JSON true. Unlike body.value(key, false), a null or a value of another type
// is false instead of an exception (a 500).
bool IsTrue(const json& body, const char* key) {
  return body.contains(key) && body[key].is_boolean() && body[key].get<bool>();
}

// Fields shared by both endpoints: stream, stream_options, vLLM's guided_* (refused), priority,
// model.
Status ParseCommon(const json& body, const ProtocolContext& ctx, GenerationRequest& r) {
  if (!body.is_object()) return InvalidArgument("the request body must be a JSON object");
  XI_RETURN_IF_ERROR(CheckModel(body, ctx.config, &r.lora_name));
  // The name the request used (one of the served names), as vLLM echoes it.
  r.model = body.contains("model") && body["model"].is_string() ? body["model"].get<std::string>()
                                                                : ctx.config.served_model_name;
  r.created = NowSeconds();
  if (body.contains("stream") && !body["stream"].is_null()) {
    if (!body["stream"].is_boolean()) return InvalidArgument("stream must be a boolean");
    r.stream = body["stream"].get<bool>();
  }
  if (body.contains("stream_options") && !body["stream_options"].is_null()) {
    const json& so = body["stream_options"];
    if (!r.stream) return InvalidArgument("stream_options can only be given when stream is true");
    if (!so.is_object()) return InvalidArgument("stream_options must be an object");
    for (const char* key : {"include_usage", "continuous_usage_stats"}) {
      if (so.contains(key) && !so[key].is_null() && !so[key].is_boolean())
        return InvalidArgument("stream_options.{} must be a boolean", key);
    }
    r.include_usage = IsTrue(so, "include_usage");
    r.continuous_usage_stats = IsTrue(so, "continuous_usage_stats");
  }
  if (r.stream && ctx.config.enable_force_include_usage) r.include_usage = true;
  r.tokens_as_ids = ctx.config.return_tokens_as_token_ids;
  if (body.contains("priority") && !body["priority"].is_null()) {
    auto priority = JsonInt32(body["priority"]);
    if (!priority) return InvalidArgument("priority must be a 32-bit integer");
    r.priority = *priority;
  }
  return Status::Ok();
}

// Sampling parameters for the prompt `ids` (truncated first when the request asks), range-checked,
// and the context check vLLM makes (prompt + max_tokens within max_model_len).
Status ParseParams(const json& body, const ProtocolContext& ctx, std::vector<int32_t>& ids,
                   const SamplingParams& defaults, GenerationRequest& r) {
  XI_RETURN_IF_ERROR(TruncatePrompt(body, ctx, ids, KeepEnd::kLast));
  const int prompt_len = static_cast<int>(ids.size());
  XI_ASSIGN_OR_RETURN(r.params, ParseSamplingParams(body, defaults, ctx.max_model_len, prompt_len));
  XI_RETURN_IF_ERROR(r.params.Validate(ctx.vocab_size, ctx.max_logprobs));
  // As vLLM: prompt logprobs come in the whole response only (0 asks for nothing to stream).
  if (r.stream && r.params.prompt_logprobs > 0)
    return InvalidArgument("prompt_logprobs are not available when stream is true");
  if (r.stream) r.params.prompt_logprobs = -1;
  if (prompt_len >= ctx.max_model_len)
    return InvalidArgument(
        "This model's maximum context length is {} tokens. However, your prompt has {} tokens; "
        "please reduce its length.",
        ctx.max_model_len, prompt_len);
  if (static_cast<int64_t>(prompt_len) + r.params.max_tokens > ctx.max_model_len)
    return InvalidArgument(
        "max_tokens is too large: this model's maximum context length is {} tokens. However, "
        "you requested {} tokens ({} in the prompt, {} for the completion). Please reduce the "
        "length of the prompt or the completion.",
        ctx.max_model_len, prompt_len + r.params.max_tokens, prompt_len, r.params.max_tokens);
  return Status::Ok();
}

}  // namespace

StatusOr<json> NormalizeMessages(const json& messages) {
  if (!messages.is_array() || messages.empty())
    return InvalidArgument("messages must be a non-empty list");
  json out = json::array();
  for (const json& m : messages) {
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string())
      return InvalidArgument("messages: each message must be an object with a string 'role'");
    json copy = m;
    if (m.contains("content") && m["content"].is_array()) {
      std::string text;
      for (const json& part : m["content"]) {
        if (!part.is_object() || !part.contains("type") || part["type"] != "text" ||
            !part.contains("text") || !part["text"].is_string())
          return InvalidArgument("messages: only text content parts are supported");
        if (!text.empty()) text += "\n";
        text += part["text"].get<std::string>();
      }
      copy["content"] = text;
    } else if (!m.contains("content") || m["content"].is_null()) {
      // An assistant turn that only calls tools comes back from OpenAI clients with content null.
      // vLLM renders an absent or null content as "" (its string content format); Qwen3's
      // template tests `'</think>' in message.content`, which fails on none.
      copy["content"] = "";
    } else if (!m["content"].is_string()) {
      return InvalidArgument("messages: content must be a string or a list of parts");
    }
    out.push_back(std::move(copy));
  }
  return out;
}

namespace {

// A tool's arguments schema: its `parameters`, or an object without properties when absent.
json ParametersOf(const json& function) {
  if (function.contains("parameters") && !function["parameters"].is_null())
    return function["parameters"];
  return json{{"type", "object"}, {"properties", json::object()}};
}

// tool_choice {"type": "function", "function": {"name": N}}: N's parameters schema, compiled.
StatusOr<std::shared_ptr<const JsonSchema>> NamedToolSchema(const json& tc, const json& tools,
                                                            std::string* name) {
  if ((tc.contains("type") && tc["type"] != "function") || !tc.contains("function") ||
      !tc["function"].is_object() || !tc["function"].contains("name") ||
      !tc["function"]["name"].is_string())
    return InvalidArgument(
        "tool_choice must be 'none', 'auto', 'required' or {{\"type\": \"function\", "
        "\"function\": {{\"name\": ...}}}}");
  *name = tc["function"]["name"].get<std::string>();
  for (const json& t : tools) {
    if (t["function"]["name"] != *name) continue;
    return CompileJsonSchema(ParametersOf(t["function"]), "tool_choice");
  }
  return InvalidArgument("tool_choice names the function '{}', which is not in tools", *name);
}

// tool_choice "required": vLLM's schema, an array of at least one call of any of the tools, each
// {"name": its name, "parameters": arguments following its parameters schema}.
// parallel_tool_calls false: one call at most.
StatusOr<std::shared_ptr<const JsonSchema>> RequiredToolsSchema(const json& tools, bool parallel) {
  json calls = json::array();
  std::set<std::string> names;
  for (const json& t : tools) {
    const json& f = t["function"];
    const std::string name = f["name"].get<std::string>();
    if (!names.insert(name).second)
      return InvalidArgument("tools: the function name '{}' is given twice", name);
    json call = {
        {"type", "object"},
        {"properties",
         {{"name", {{"type", "string"}, {"enum", {name}}}}, {"parameters", ParametersOf(f)}}},
        {"required", {"name", "parameters"}}};
    calls.push_back(std::move(call));
  }
  const json items = calls.size() == 1 ? calls[0] : json{{"anyOf", calls}};
  json list = {{"type", "array"}, {"minItems", 1}, {"items", items}};
  if (!parallel) list["maxItems"] = 1;
  return CompileJsonSchema(list, "tool_choice");
}

Status CheckTools(const json& body, const ProtocolContext& ctx, GenerationRequest& r,
                  bool* include_tools, std::shared_ptr<const JsonSchema>* forced_tool_schema) {
  *include_tools = false;
  const bool has_tools = body.contains("tools") && !body["tools"].is_null();
  if (has_tools) {
    const json& tools = body["tools"];
    if (!tools.is_array()) return InvalidArgument("tools must be a list");
    for (const json& t : tools) {
      if (!t.is_object() || (t.contains("type") && t["type"] != "function") ||
          !t.contains("function") || !t["function"].is_object() ||
          !t["function"].contains("name") || !t["function"]["name"].is_string())
        return InvalidArgument(
            "tools: each tool must be {{\"type\": \"function\", \"function\": "
            "{{\"name\": ...}}}}");
    }
    *include_tools = !tools.empty();
  }
  if (body.contains("parallel_tool_calls") && !body["parallel_tool_calls"].is_null()) {
    if (!body["parallel_tool_calls"].is_boolean())
      return InvalidArgument("parallel_tool_calls must be a boolean");
    r.parallel_tool_calls = body["parallel_tool_calls"].get<bool>();
  }
  std::string choice = *include_tools ? "auto" : "none";
  if (body.contains("tool_choice") && !body["tool_choice"].is_null()) {
    const json& tc = body["tool_choice"];
    if (tc.is_string()) {
      choice = tc.get<std::string>();
      if (choice != "auto" && choice != "none" && choice != "required")
        return InvalidArgument("tool_choice must be 'none', 'auto', 'required' or a function");
    } else if (tc.is_object()) {
      choice = "named";
    } else {
      return InvalidArgument("tool_choice must be a string or an object");
    }
  }
  if (choice == "none") return Status::Ok();
  if (!*include_tools) return InvalidArgument("tool_choice needs a non-empty 'tools' list");
  if (choice == "named") {
    // As vLLM: the output is the function's arguments, guided by its parameters schema.
    XI_ASSIGN_OR_RETURN(*forced_tool_schema,
                        NamedToolSchema(body["tool_choice"], body["tools"], &r.forced_tool));
    return Status::Ok();
  }
  if (choice == "required") {
    // As vLLM: a list of one or more {"name": N, "parameters": N's arguments}, N among the tools.
    XI_ASSIGN_OR_RETURN(*forced_tool_schema,
                        RequiredToolsSchema(body["tools"], r.parallel_tool_calls));
    r.tools_required = true;
    return Status::Ok();
  }
  if (!ctx.config.enable_auto_tool_choice || ctx.config.tool_call_parser.empty())
    return InvalidArgument(
        "tool_choice \"auto\" requires --enable-auto-tool-choice and --tool-call-parser to be "
        "set");
  r.parse_tool_calls = true;
  return Status::Ok();
}

}  // namespace

StatusOr<std::optional<size_t>> TruncationLimit(const json& body, const ProtocolContext& ctx) {
  if (!body.contains("truncate_prompt_tokens") || body["truncate_prompt_tokens"].is_null())
    return std::optional<size_t>();
  const std::optional<int32_t> k = JsonInt32(body["truncate_prompt_tokens"]);
  if (!k || (*k < 1 && *k != -1))
    return InvalidArgument("truncate_prompt_tokens must be an integer >= 1, or -1");
  if (*k > ctx.max_model_len)
    return InvalidArgument("truncate_prompt_tokens {} is larger than max_model_len {}", *k,
                           ctx.max_model_len);
  return std::optional<size_t>(static_cast<size_t>(*k == -1 ? ctx.max_model_len : *k));
}

Status TruncatePrompt(const json& body, const ProtocolContext& ctx, std::vector<int32_t>& ids,
                      KeepEnd keep) {
  XI_ASSIGN_OR_RETURN(std::optional<size_t> limit, TruncationLimit(body, ctx));
  if (!limit || ids.size() <= *limit) return Status::Ok();
  const auto cut = static_cast<std::ptrdiff_t>(ids.size() - *limit);
  if (keep == KeepEnd::kLast) {
    ids.erase(ids.begin(), ids.begin() + cut);
  } else {
    ids.resize(*limit);
  }
  return Status::Ok();
}

Status AddPoolingInputs(const json& body, const ProtocolContext& ctx, const char* what,
                        GenerationRequest& r) {
  if (!body.contains("input") || body["input"].is_null())
    return InvalidArgument("input is required");
  XI_ASSIGN_OR_RETURN(r.prompts, BatchedPromptIds(body["input"], ctx, "input", 2048));
  for (std::vector<int32_t>& ids : r.prompts) {
    XI_RETURN_IF_ERROR(TruncatePrompt(body, ctx, ids, KeepEnd::kFirst));
    if (static_cast<int>(ids.size()) > ctx.max_model_len)
      return InvalidArgument(
          "This model's maximum context length is {} tokens. However, you requested {} tokens "
          "in the input for {}. Please reduce the length of the input.",
          ctx.max_model_len, ids.size(), what);
  }
  return Status::Ok();
}

StatusOr<GenerationRequest> NewPoolingRequest(const json& body, const ProtocolContext& ctx,
                                              Endpoint endpoint, const std::string& id_prefix) {
  GenerationRequest r;
  XI_RETURN_IF_ERROR(CheckModel(body, ctx.config, &r.lora_name));
  r.endpoint = endpoint;
  r.id = NewRequestId(id_prefix);
  r.created = NowSeconds();
  r.model = body.contains("model") && body["model"].is_string() ? body["model"].get<std::string>()
                                                                : ctx.config.served_model_name;
  r.params = ctx.defaults;
  r.params.temperature = 0;
  r.params.max_tokens = 1;
  return r;
}

std::string NewRequestId(const std::string& prefix) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return fmt::format("{}{:016x}{:016x}", prefix, rng(), rng());
}

StatusOr<std::vector<std::vector<int32_t>>> BatchedPromptIds(const json& value,
                                                             const ProtocolContext& ctx,
                                                             const char* field, size_t max_items) {
  auto ids_of = [&](const json& x) -> StatusOr<std::vector<int32_t>> {
    if (x.is_string()) return ctx.tokenizer.Encode(x.get<std::string>(), true);
    if (!x.is_array())
      return InvalidArgument("{} must be a string, a list of strings or token id lists", field);
    std::vector<int32_t> ids;
    for (const json& t : x) {
      const std::optional<int32_t> id = JsonInt32(t);
      if (!id || *id < 0 || *id >= ctx.vocab_size)
        return InvalidArgument("{} token ids must be integers in [0, {})", field, ctx.vocab_size);
      ids.push_back(*id);
    }
    return ids;
  };
  std::vector<const json*> items;
  if (value.is_array() && !value.empty() && (value[0].is_string() || value[0].is_array())) {
    for (const json& x : value) items.push_back(&x);
  } else {
    items.push_back(&value);
  }
  if (items.size() > max_items)
    return InvalidArgument("{} holds more than {} entries", field, max_items);
  std::vector<std::vector<int32_t>> out;
  for (const json* x : items) {
    XI_ASSIGN_OR_RETURN(std::vector<int32_t> ids, ids_of(*x));
    if (ids.empty()) return InvalidArgument("{} must not be empty", field);
    out.push_back(std::move(ids));
  }
  return out;
}

Status NoChatTemplate() {
  return InvalidArgument("messages: the model has no chat template; pass --chat-template");
}

Status CheckModel(const json& body, const ServerConfig& config, std::string* lora_name) {
  if (lora_name != nullptr) lora_name->clear();
  if (!body.is_object() || !body.contains("model") || body["model"].is_null()) return Status::Ok();
  if (!body["model"].is_string()) return InvalidArgument("model must be a string");
  const std::string m = body["model"].get<std::string>();
  if (m == config.served_model_name ||
      std::find(config.served_model_aliases.begin(), config.served_model_aliases.end(), m) !=
          config.served_model_aliases.end())
    return Status::Ok();
  if (config.loras->Contains(m)) {
    if (lora_name != nullptr) *lora_name = m;
    return Status::Ok();
  }
  return NotFound("The model `{}` does not exist.", m);
}

bool LoraNames::Contains(const std::string& name) const {
  std::lock_guard<std::mutex> l(mu_);
  return std::any_of(entries_.begin(), entries_.end(),
                     [&](const Entry& e) { return e.name == name; });
}

std::vector<LoraNames::Entry> LoraNames::List() const {
  std::lock_guard<std::mutex> l(mu_);
  return entries_;
}

bool LoraNames::TakenLocked(const std::string& name) const {
  return std::any_of(entries_.begin(), entries_.end(),
                     [&](const Entry& e) { return e.name == name; }) ||
         std::find(reserved_.begin(), reserved_.end(), name) != reserved_.end();
}

bool LoraNames::Add(Entry entry) {
  std::lock_guard<std::mutex> l(mu_);
  if (TakenLocked(entry.name)) return false;
  entries_.push_back(std::move(entry));
  return true;
}

bool LoraNames::Reserve(const std::string& name) {
  std::lock_guard<std::mutex> l(mu_);
  if (TakenLocked(name)) return false;
  reserved_.push_back(name);
  return true;
}

void LoraNames::Commit(Entry entry) {
  std::lock_guard<std::mutex> l(mu_);
  std::erase(reserved_, entry.name);
  entries_.push_back(std::move(entry));
}

void LoraNames::Release(const std::string& name) {
  std::lock_guard<std::mutex> l(mu_);
  std::erase(reserved_, name);
}

bool LoraNames::Remove(const std::string& name) {
  std::lock_guard<std::mutex> l(mu_);
  return std::erase_if(entries_, [&](const Entry& e) { return e.name == name; }) > 0;
}

StatusOr<GenerationRequest> ParseChatRequest(const json& body, const ProtocolContext& ctx) {
  GenerationRequest r;
  r.endpoint = Endpoint::kChat;
  XI_RETURN_IF_ERROR(ParseCommon(body, ctx, r));
  r.id = NewRequestId("chatcmpl-");
  if (!body.contains("messages")) return InvalidArgument("messages is required");
  XI_ASSIGN_OR_RETURN(json messages, NormalizeMessages(body["messages"]));
  bool include_tools = false;
  std::shared_ptr<const JsonSchema> forced_tool_schema;
  XI_RETURN_IF_ERROR(CheckTools(body, ctx, r, &include_tools, &forced_tool_schema));
  r.reasoning = ReasoningFormatNamed(ctx.config.reasoning_parser);
  // OpenAI chat: `logprobs` is a boolean and top_logprobs needs it.
  if (body.contains("logprobs") && !body["logprobs"].is_null() && !body["logprobs"].is_boolean())
    return InvalidArgument("logprobs must be a boolean");
  if (body.contains("top_logprobs") && !body["top_logprobs"].is_null() && !IsTrue(body, "logprobs"))
    return InvalidArgument("top_logprobs requires logprobs to be true");

  json chat = {{"messages", std::move(messages)}};
  if (include_tools) chat["tools"] = body["tools"];
  if (body.contains("chat_template_kwargs") && !body["chat_template_kwargs"].is_null()) {
    if (!body["chat_template_kwargs"].is_object())
      return InvalidArgument("chat_template_kwargs must be an object");
    chat["chat_template_kwargs"] = body["chat_template_kwargs"];
  }
  // vLLM's continue_final_message: the final (assistant) message rendered open, its text
  // continued (PromptBuilder checks and applies it).
  if (body.contains("continue_final_message"))
    chat["continue_final_message"] = body["continue_final_message"];
  if (body.contains("add_generation_prompt")) {
    if (!body["add_generation_prompt"].is_boolean())
      return InvalidArgument("add_generation_prompt must be a boolean");
    chat["add_generation_prompt"] = body["add_generation_prompt"];
  }
  // As vLLM's get_chat_request_role.
  r.role = chat.value("add_generation_prompt", true) || chat["messages"].empty()
               ? ctx.config.response_role
               : chat["messages"].back().value("role", ctx.config.response_role);
  if (ctx.prompts == nullptr) return NoChatTemplate();
  auto ids = ctx.prompts->Build(chat);
  if (!ids.ok()) {
    // The builder's errors about a request field name it first (the field the client set);
    // the rest are about the messages.
    const std::string& m = ids.status().message();
    for (const char* field : {"continue_final_message", "add_generation_prompt"})
      if (m.starts_with(field)) return ids.status();
    return ids.status().WithContext("messages");
  }
  if (ids->empty()) return InvalidArgument("messages rendered to an empty prompt");
  XI_RETURN_IF_ERROR(ParseParams(body, ctx, *ids, ctx.defaults, r));
  if (forced_tool_schema != nullptr) {
    if (r.params.guided != GuidedDecoding::kNone)
      return InvalidArgument(
          "tool_choice naming a function, or 'required', cannot be combined with another guide "
          "(response_format json_object / json_schema, guided_json, guided_regex, guided_choice, "
          "guided_grammar, structured_outputs)");
    r.params.guided = GuidedDecoding::kJsonSchema;
    r.params.json_schema = std::move(forced_tool_schema);
    XI_RETURN_IF_ERROR(r.params.Validate(ctx.vocab_size, ctx.max_logprobs));
  }
  r.prompts.push_back(std::move(*ids));
  return r;
}

StatusOr<GenerationRequest> ParseCompletionRequest(const json& body, const ProtocolContext& ctx) {
  GenerationRequest r;
  r.endpoint = Endpoint::kCompletion;
  XI_RETURN_IF_ERROR(ParseCommon(body, ctx, r));
  r.id = NewRequestId("cmpl-");
  if (!body.contains("prompt") || body["prompt"].is_null())
    return InvalidArgument("prompt is required");
  if (body.contains("suffix") && !body["suffix"].is_null())
    return Unimplemented("suffix is not supported");
  if (body.contains("echo") && !body["echo"].is_null()) {
    if (!body["echo"].is_boolean()) return InvalidArgument("echo must be a boolean");
    r.echo = body["echo"].get<bool>();
  }
  if (body.contains("logprobs") && !body["logprobs"].is_null() &&
      !body["logprobs"].is_number_integer())
    return InvalidArgument("logprobs must be an integer");
  XI_ASSIGN_OR_RETURN(std::vector<std::vector<int32_t>> prompts,
                      BatchedPromptIds(body["prompt"], ctx, "prompt", 1024));
  // OpenAI's completions default is 16 tokens (unlike chat, which fills the context).
  SamplingParams defaults = ctx.defaults;
  defaults.max_tokens = 16;
  json b = body;
  if (!b.contains("max_tokens") || b["max_tokens"].is_null()) b["max_tokens"] = 16;
  for (std::vector<int32_t>& ids : prompts) {
    XI_RETURN_IF_ERROR(ParseParams(b, ctx, ids, defaults, r));
    r.prompts.push_back(std::move(ids));
  }
  // echo with logprobs: the echoed prompt's tokens carry theirs too (vLLM computes them as
  // prompt_logprobs; lm-evaluation-harness scores continuations this way).
  if (r.echo && r.params.logprobs >= 0 && r.params.prompt_logprobs < 0)
    r.params.prompt_logprobs = r.params.logprobs;
  return r;
}

}  // namespace xinfer::server
