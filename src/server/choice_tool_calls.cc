#include "server/choice_tool_calls.h"

#include <utility>

namespace xinfer::server {

ChoiceToolCalls::ChoiceToolCalls(const GenerationRequest& request) : req_(request) {
  if (req_.tools_required)
    required_.emplace();
  else if (req_.forced_tool.empty() && req_.parse_tool_calls)
    hermes_.emplace();
}

ChoiceToolCalls::Delta ChoiceToolCalls::Append(std::string text, bool finished) {
  Delta d;
  if (required_) {
    required_text_ += text;
    d.tool_call_deltas = required_->Append(text);
    if (finished && required_->calls().empty()) d.content = required_text_;  // no call at all
  } else if (!req_.forced_tool.empty()) {
    if (!text.empty()) {
      if (forced_call_id_.empty()) {
        forced_call_id_ = NewToolCallId();
        d.tool_call_deltas.push_back(
            ToolCall{forced_call_id_, req_.forced_tool, ""}.HeaderDelta(0));
      }
      d.tool_call_deltas.push_back(ToolCall::ArgumentsDelta(0, text));
    }
  } else if (hermes_) {
    HermesToolStream::Delta hd = hermes_->Append(text);
    if (finished) {
      HermesToolStream::Delta rest = hermes_->Finish();
      hd.content += rest.content;
      for (auto& t : rest.tool_call_deltas) hd.tool_call_deltas.push_back(std::move(t));
    }
    d.content = std::move(hd.content);
    d.tool_call_deltas = std::move(hd.tool_call_deltas);
    if (!req_.parallel_tool_calls)
      std::erase_if(d.tool_call_deltas, [](const auto& t) { return t["index"] != 0; });
  } else {
    d.content = std::move(text);
  }
  return d;
}

bool ChoiceToolCalls::parsed_calls() const {
  return (hermes_ && hermes_->num_calls() > 0) || (required_ && !required_->calls().empty());
}

}  // namespace xinfer::server
