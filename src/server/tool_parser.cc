#include "server/tool_parser.h"

#include <fmt/core.h>

#include <atomic>
#include <random>

#include "server/partial_tag.h"

namespace xinfer::server {
namespace {

using json = nlohmann::ordered_json;

constexpr std::string_view kOpen = "<tool_call>";
constexpr std::string_view kClose = "</tool_call>";

bool IsBlank(std::string_view s) {
  return s.find_first_not_of(" \t\r\n") == std::string_view::npos;
}

// The JSON of one block, or nullopt when it is not {"name": string, "arguments"?: ...}.
std::optional<ToolCall> ParseBlock(std::string_view block) {
  json j = json::parse(block.begin(), block.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || !j.contains("name") || !j["name"].is_string())
    return std::nullopt;
  ToolCall c;
  c.id = NewToolCallId();
  c.name = j["name"].get<std::string>();
  const json args = j.contains("arguments") ? j["arguments"] : json::object();
  c.arguments = args.is_string() ? args.get<std::string>()
                                 : args.dump(-1, ' ', false, json::error_handler_t::replace);
  return c;
}

}  // namespace

std::string NewToolCallId() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return fmt::format("chatcmpl-tool-{:016x}{:016x}", rng(), rng());
}

json ToolCall::ToJson() const {
  return {
      {"id", id}, {"type", "function"}, {"function", {{"name", name}, {"arguments", arguments}}}};
}

json ToolCall::HeaderDelta(int index) const {
  return {{"index", index},
          {"id", id},
          {"type", "function"},
          {"function", {{"name", name}, {"arguments", ""}}}};
}

json ToolCall::ArgumentsDelta(int index, std::string_view arguments) {
  return {{"index", index}, {"function", {{"arguments", arguments}}}};
}

ToolSplit ParseHermesToolCalls(std::string_view text) {
  ToolSplit r;
  const size_t first = text.find(kOpen);
  if (first == std::string_view::npos) {
    if (!text.empty()) r.content = std::string(text);
    return r;
  }
  size_t pos = first;
  while (pos != std::string_view::npos) {
    const size_t start = pos + kOpen.size();
    const size_t close = text.find(kClose, start);
    std::string_view block = text.substr(
        start, close == std::string_view::npos ? std::string_view::npos : close - start);
    auto call = ParseBlock(block);
    if (!call) return ToolSplit{std::string(text), {}};
    r.calls.push_back(std::move(*call));
    if (close == std::string_view::npos) break;
    pos = text.find(kOpen, close + kClose.size());
  }
  if (!IsBlank(text.substr(0, first))) r.content = std::string(text.substr(0, first));
  return r;
}

void HermesToolStream::EmitCall(std::string_view block, Delta& d) {
  auto call = ParseBlock(block);
  if (!call) {  // not a tool call after all: pass it through
    d.content += std::string(kOpen) + std::string(block);
    return;
  }
  const int index = num_calls_++;
  d.tool_call_deltas.push_back(call->HeaderDelta(index));
  d.tool_call_deltas.push_back(ToolCall::ArgumentsDelta(index, call->arguments));
}

HermesToolStream::Delta HermesToolStream::Append(std::string_view text) {
  Delta d;
  pending_.append(text);
  for (;;) {
    if (in_call_) {
      const size_t close = pending_.find(kClose);
      if (close == std::string::npos) return d;
      EmitCall(std::string_view(pending_).substr(0, close), d);
      pending_.erase(0, close + kClose.size());
      in_call_ = false;
      continue;
    }
    const size_t open = pending_.find(kOpen);
    if (open == std::string::npos) {
      const size_t hold = PartialTagSuffix(pending_, kOpen);
      std::string out = pending_.substr(0, pending_.size() - hold);
      // After a call, whitespace is only separator: hold it until real text shows up.
      if (num_calls_ > 0 && IsBlank(out)) return d;
      d.content += out;
      pending_.erase(0, pending_.size() - hold);
      return d;
    }
    std::string before = pending_.substr(0, open);
    if (!(num_calls_ > 0 && IsBlank(before))) d.content += before;
    pending_.erase(0, open + kOpen.size());
    in_call_ = true;
  }
}

HermesToolStream::Delta HermesToolStream::Finish() {
  Delta d;
  if (in_call_) {
    EmitCall(pending_, d);
  } else if (!(num_calls_ > 0 && IsBlank(pending_))) {
    d.content = pending_;
  }
  pending_.clear();
  in_call_ = false;
  return d;
}

}  // namespace xinfer::server
