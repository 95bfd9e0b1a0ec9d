// `--tool-call-parser hermes`: Qwen/Hermes tool calls, emitted by the model as
//   <tool_call>
//   {"name": "get_weather", "arguments": {"city": "Paris"}}
//   </tool_call>
// parsed into OpenAI tool_calls, for a whole output or streamed deltas.
// Non-streaming (as vLLM's Hermes2ProToolParser): content is the text before the first
// <tool_call> (absent when empty); if any block is not valid JSON with a string "name", nothing
// is parsed and the whole text stays content. Streaming: text outside blocks streams as content
// (a partial "<tool_call>" at the end of a delta is held back; whitespace between calls is
// dropped); each block is emitted when its "</tool_call>" arrives (or at the end of the output)
// as two deltas, OpenAI's order: {index, id, type, function: {name, arguments: ""}} then
// {index, function: {arguments}}.
// One HermesToolStream per choice; not thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace xinfer::server {

struct ToolCall {
  std::string id;  // "chatcmpl-tool-<hex>"
  std::string name;
  std::string arguments;                  // JSON text
  nlohmann::ordered_json ToJson() const;  // {"id", "type": "function", "function": {...}}
  // OpenAI's streamed form, as elements of delta.tool_calls: the first names the call (its
  // arguments ""), the next ones carry the arguments' text.
  nlohmann::ordered_json HeaderDelta(int index) const;
  static nlohmann::ordered_json ArgumentsDelta(int index, std::string_view arguments);
};

struct ToolSplit {
  std::optional<std::string> content;
  std::vector<ToolCall> calls;
};

ToolSplit ParseHermesToolCalls(std::string_view text);

class HermesToolStream {
 public:
  struct Delta {
    std::string content;
    std::vector<nlohmann::ordered_json> tool_call_deltas;  // elements of delta.tool_calls
  };
  Delta Append(std::string_view text);
  Delta Finish();
  int num_calls() const { return num_calls_; }

 private:
  void EmitCall(std::string_view block, Delta& d);
  bool in_call_ = false;
  std::string pending_;
  int num_calls_ = 0;
};

std::string NewToolCallId();

}  // namespace xinfer::server
