#include "server/responses.h"

#include <cmath>

#include "server/required_tool_calls.h"

namespace xinfer::server {
namespace {

using json = nlohmann::ordered_json;

// JSON has no -inf; vLLM reports such log-probabilities as -9999.
double Lp(float v) { return std::isfinite(v) ? static_cast<double>(v) : -9999.0; }

json Bytes(const std::string& s) {
  json b = json::array();
  for (unsigned char ch : s) b.push_back(static_cast<int>(ch));
  return b;
}

json StopReason(const std::string& finish, const std::string& stop) {
  if (finish != "stop" || stop.empty()) return nullptr;
  return stop;
}

}  // namespace

std::string EchoText(const Tokenizer& tokenizer, const std::vector<int32_t>& prompt) {
  return tokenizer.Decode(prompt, /*skip_special_tokens=*/true);
}

ResponseBuilder::ResponseBuilder(const GenerationRequest& request, const Tokenizer& tokenizer)
    : req_(request), tokenizer_(tokenizer) {
  const int n = std::max(request.params.n, 1);
  choices_.resize(request.prompts.size() * n);
  for (size_t i = 0; i < choices_.size(); ++i) {
    Choice& c = choices_[i];
    c.index = static_cast<int>(i);
    if (req_.endpoint == Endpoint::kChat) {
      if (req_.reasoning) c.reasoning.emplace(*req_.reasoning);
      if (req_.stream) c.tool_calls.emplace(req_);
    } else if (req_.echo) {
      c.text = EchoText(tokenizer_, req_.prompts[i / n]);
    }
  }
  for (const auto& p : request.prompts) prompt_tokens_.push_back(static_cast<int>(p.size()));
  cached_tokens_.assign(request.prompts.size(), 0);
}

std::string ResponseBuilder::Event(const json& j) {
  return "data: " + j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n";
}

std::string ResponseBuilder::TokenText(int32_t id) const {
  const int32_t ids[1] = {id};
  return tokenizer_.Decode(ids);
}

std::string ResponseBuilder::LogprobToken(int32_t id) const {
  return req_.tokens_as_ids ? "token_id:" + std::to_string(id) : TokenText(id);
}

json ResponseBuilder::ChatLogprobs(const std::vector<TokenLogprobs>& lps) const {
  json content = json::array();
  for (const TokenLogprobs& lp : lps) {
    json top = json::array();
    for (const TokenLogprob& t : lp.top) {
      std::string s = LogprobToken(t.id);
      top.push_back({{"token", s}, {"logprob", Lp(t.logprob)}, {"bytes", Bytes(s)}});
    }
    std::string s = LogprobToken(lp.token);
    content.push_back(
        {{"token", s}, {"logprob", Lp(lp.logprob)}, {"bytes", Bytes(s)}, {"top_logprobs", top}});
  }
  return {{"content", content}};
}

json ResponseBuilder::CompletionLogprobs(const std::vector<TokenLogprobs>& lps, size_t* offset,
                                         const std::vector<int32_t>* prompt,
                                         const std::vector<TokenLogprobs>* prompt_lps) const {
  json tokens = json::array(), token_lps = json::array(), tops = json::array(),
       offsets = json::array();
  auto add = [&](int32_t id, const TokenLogprobs* lp) {
    const std::string s = LogprobToken(id);
    tokens.push_back(s);
    offsets.push_back(*offset);
    *offset += s.size();
    if (lp == nullptr) {  // the prompt's first token: nothing precedes it
      token_lps.push_back(nullptr);
      tops.push_back(nullptr);
      return;
    }
    token_lps.push_back(Lp(lp->logprob));
    json top = json::object();
    for (const TokenLogprob& t : lp->top) top[LogprobToken(t.id)] = Lp(t.logprob);
    top[s] = Lp(lp->logprob);
    tops.push_back(top);
  };
  if (prompt != nullptr) {
    for (size_t i = 0; i < prompt->size(); ++i)
      add((*prompt)[i], i == 0 || i > prompt_lps->size() ? nullptr : &(*prompt_lps)[i - 1]);
  }
  for (const TokenLogprobs& lp : lps) add(lp.token, &lp);
  return {{"tokens", tokens},
          {"token_logprobs", token_lps},
          {"top_logprobs", tops},
          {"text_offset", offsets}};
}

json ResponseBuilder::PromptLogprobs(const std::vector<TokenLogprobs>& lps) const {
  json out = json::array({nullptr});
  for (const TokenLogprobs& lp : lps) {
    json entry = json::object();
    entry[std::to_string(lp.token)] = {
        {"logprob", Lp(lp.logprob)}, {"rank", lp.rank}, {"decoded_token", TokenText(lp.token)}};
    for (size_t k = 0; k < lp.top.size(); ++k) {
      const std::string id = std::to_string(lp.top[k].id);
      if (entry.contains(id)) continue;
      entry[id] = {{"logprob", Lp(lp.top[k].logprob)},
                   {"rank", static_cast<int>(k) + 1},
                   {"decoded_token", TokenText(lp.top[k].id)}};
    }
    out.push_back(std::move(entry));
  }
  return out;
}

json ResponseBuilder::Usage() const {
  int prompt = 0, completion = 0, cached = 0;
  for (int p : prompt_tokens_) prompt += p;
  for (int c : cached_tokens_) cached += c;
  for (const Choice& c : choices_) completion += c.completion_tokens;
  return {{"prompt_tokens", prompt},
          {"completion_tokens", completion},
          {"total_tokens", prompt + completion},
          {"prompt_tokens_details", {{"cached_tokens", cached}}}};
}

std::string ResponseBuilder::Add(int prompt_index, const RequestOutput& out) {
  const int n = std::max(req_.params.n, 1);
  Choice& c = choices_.at(static_cast<size_t>(prompt_index) * n + out.index);
  c.completion_tokens = out.completion_tokens;
  if (out.finished) {
    c.finished = true;
    c.finish_reason = out.finish_reason;
    c.stop_reason = out.stop_reason;
    cached_tokens_[prompt_index] = std::max(cached_tokens_[prompt_index], out.cached_tokens);
  }
  if (req_.stream) {
    return req_.endpoint == Endpoint::kChat ? StreamChat(c, out) : StreamCompletion(c, out);
  }
  c.text += out.text;
  c.logprobs.insert(c.logprobs.end(), out.logprobs.begin(), out.logprobs.end());
  if (!out.prompt_logprobs.empty()) c.prompt_logprobs = out.prompt_logprobs;
  return "";
}

std::string ResponseBuilder::ChatChunk(const Choice& c, json delta, const json& logprobs,
                                       const char* finish_reason,
                                       const std::string& stop_reason) const {
  json choice = {{"index", c.index},
                 {"delta", std::move(delta)},
                 {"logprobs", logprobs},
                 {"finish_reason", finish_reason ? json(finish_reason) : json()}};
  if (finish_reason) choice["stop_reason"] = StopReason(finish_reason, stop_reason);
  json chunk = {{"id", req_.id},
                {"object", "chat.completion.chunk"},
                {"created", req_.created},
                {"model", req_.model},
                {"choices", json::array({std::move(choice)})}};
  if (req_.include_usage && req_.continuous_usage_stats) chunk["usage"] = Usage();
  return Event(chunk);
}

std::string ResponseBuilder::StreamStart() {
  if (req_.endpoint != Endpoint::kChat) return "";
  std::string s;
  for (const Choice& c : choices_)
    s += ChatChunk(c, {{"role", req_.role}, {"content", ""}}, nullptr, nullptr, "");
  return s;
}

std::string ResponseBuilder::StreamChat(Choice& c, const RequestOutput& out) {
  std::string reasoning, content = out.text;
  if (c.reasoning) {
    ReasoningStream::Delta rd = c.reasoning->Append(content);
    if (out.finished) {
      ReasoningStream::Delta rest = c.reasoning->Finish();
      rd.reasoning += rest.reasoning;
      rd.content += rest.content;
    }
    reasoning = std::move(rd.reasoning);
    content = std::move(rd.content);
  }
  ChoiceToolCalls::Delta td = c.tool_calls->Append(std::move(content), out.finished);
  content = std::move(td.content);
  std::vector<json>& tool_deltas = td.tool_call_deltas;

  json lps = nullptr;
  if (req_.params.logprobs >= 0 && !out.logprobs.empty()) lps = ChatLogprobs(out.logprobs);
  std::string s;
  if (!reasoning.empty()) {
    s += ChatChunk(c, {{"reasoning_content", reasoning}}, lps, nullptr, "");
    lps = nullptr;
  }
  if (!content.empty() || !lps.is_null()) {
    s += ChatChunk(c, {{"content", content}}, lps, nullptr, "");
    lps = nullptr;
  }
  for (json& t : tool_deltas)
    s += ChatChunk(c, {{"tool_calls", json::array({t})}}, nullptr, nullptr, "");
  if (out.finished) {
    std::string reason = out.finish_reason;
    if (c.tool_calls->parsed_calls() && reason == "stop") reason = "tool_calls";
    c.finish_reason = reason;
    s += ChatChunk(c, json::object(), nullptr, c.finish_reason.c_str(), out.stop_reason);
  }
  return s;
}

std::string ResponseBuilder::StreamCompletion(Choice& c, const RequestOutput& out) {
  std::string text = out.text;
  // The echoed prompt goes out with the first piece, with its tokens' logprobs when asked.
  const bool echo_now = req_.echo && !c.echo_sent;
  if (echo_now) {
    text = c.text + text;
    c.text.clear();
    c.echo_sent = true;
  }
  if (text.empty() && !out.finished && out.logprobs.empty()) return "";
  json lps = nullptr;
  if (req_.params.logprobs >= 0 && (!out.logprobs.empty() || echo_now)) {
    const int n = std::max(req_.params.n, 1);
    lps = echo_now ? CompletionLogprobs(out.logprobs, &c.text_offset,
                                        &req_.prompts[static_cast<size_t>(c.index / n)],
                                        &out.prompt_logprobs)
                   : CompletionLogprobs(out.logprobs, &c.text_offset);
  }
  json choice = {{"index", c.index},
                 {"text", text},
                 {"logprobs", lps},
                 {"finish_reason", out.finished ? json(out.finish_reason) : json()}};
  if (out.finished) choice["stop_reason"] = StopReason(out.finish_reason, out.stop_reason);
  json chunk = {{"id", req_.id},
                {"object", "text_completion"},
                {"created", req_.created},
                {"model", req_.model},
                {"choices", json::array({std::move(choice)})}};
  if (req_.include_usage && req_.continuous_usage_stats) chunk["usage"] = Usage();
  return Event(chunk);
}

std::string ResponseBuilder::StreamEnd() {
  std::string s;
  if (req_.include_usage) {
    s += Event(
        {{"id", req_.id},
         {"object", req_.endpoint == Endpoint::kChat ? "chat.completion.chunk" : "text_completion"},
         {"created", req_.created},
         {"model", req_.model},
         {"choices", json::array()},
         {"usage", Usage()}});
  }
  return s + "data: [DONE]\n\n";
}

json ResponseBuilder::Response() {
  const int n = std::max(req_.params.n, 1);
  json choices = json::array();
  for (Choice& c : choices_) {
    json lps = nullptr;
    std::string reason = c.finish_reason.empty() ? "abort" : c.finish_reason;
    if (req_.endpoint == Endpoint::kCompletion) {
      const std::vector<int32_t>& prompt = req_.prompts[static_cast<size_t>(c.index / n)];
      if (req_.params.logprobs >= 0)
        lps = req_.echo
                  ? CompletionLogprobs(c.logprobs, &c.text_offset, &prompt, &c.prompt_logprobs)
                  : CompletionLogprobs(c.logprobs, &c.text_offset);
      choices.push_back({{"index", c.index},
                         {"text", c.text},
                         {"logprobs", lps},
                         {"finish_reason", reason},
                         {"stop_reason", StopReason(reason, c.stop_reason)}});
      if (req_.params.prompt_logprobs >= 0)
        choices.back()["prompt_logprobs"] = PromptLogprobs(c.prompt_logprobs);
      continue;
    }
    if (req_.params.logprobs >= 0) lps = ChatLogprobs(c.logprobs);
    json reasoning = nullptr, content = c.text;
    if (req_.reasoning) {
      ReasoningSplit r = SplitReasoning(c.text, *req_.reasoning);
      reasoning = r.reasoning ? json(*r.reasoning) : json();
      content = r.content ? json(*r.content) : json();
    }
    json tool_calls = json::array();
    if (!req_.forced_tool.empty()) {
      // A named tool_choice: the whole text is the call's arguments (vLLM: content "").
      tool_calls.push_back(ToolCall{NewToolCallId(), req_.forced_tool,
                                    content.is_string() ? content.get<std::string>() : ""}
                               .ToJson());
      content = "";
    } else if (req_.tools_required && content.is_string()) {
      RequiredToolCallStream list;
      list.Append(content.get<std::string>());
      if (list.complete()) {  // else (cut short) the text stays content
        for (const ToolCall& call : list.calls()) tool_calls.push_back(call.ToJson());
        content = "";
        if (reason == "stop") reason = "tool_calls";
      }
    } else if (req_.parse_tool_calls && content.is_string()) {
      ToolSplit t = ParseHermesToolCalls(content.get<std::string>());
      if (!req_.parallel_tool_calls && t.calls.size() > 1) t.calls.resize(1);
      for (const ToolCall& call : t.calls) tool_calls.push_back(call.ToJson());
      if (!t.calls.empty()) {
        content = t.content ? json(*t.content) : json();
        if (reason == "stop") reason = "tool_calls";
      }
    }
    json message = {{"role", req_.role},
                    {"content", content},
                    {"reasoning_content", reasoning},
                    {"tool_calls", tool_calls}};
    choices.push_back({{"index", c.index},
                       {"message", message},
                       {"logprobs", lps},
                       {"finish_reason", reason},
                       {"stop_reason", StopReason(reason, c.stop_reason)}});
  }
  json response = {
      {"id", req_.id},
      {"object", req_.endpoint == Endpoint::kChat ? "chat.completion" : "text_completion"},
      {"created", req_.created},
      {"model", req_.model},
      {"choices", choices},
      {"usage", Usage()}};
  // vLLM's chat response carries them once, beside the choices (one prompt).
  if (req_.endpoint == Endpoint::kChat && req_.params.prompt_logprobs >= 0 && !choices_.empty())
    response["prompt_logprobs"] = PromptLogprobs(choices_[0].prompt_logprobs);
  return response;
}

}  // namespace xinfer::server
