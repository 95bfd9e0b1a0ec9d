#include "server/required_tool_calls.h"

namespace xinfer::server {
namespace {

using json = nlohmann::ordered_json;

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool IsNumberByte(char c) {
  return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
}

}  // namespace

std::vector<json> RequiredToolCallStream::Append(std::string_view text) {
  std::vector<json> deltas;
  for (char c : text) Step(c, deltas);
  FlushArguments(deltas);
  return deltas;
}

bool RequiredToolCallStream::complete() const {
  return phase_ == Phase::kDone && !calls_.empty() && every_item_whole_;
}

void RequiredToolCallStream::FlushArguments(std::vector<json>& deltas) {
  if (!item_named_ || pending_arguments_.empty()) return;
  const int index = static_cast<int>(calls_.size()) - 1;
  calls_.back().arguments += pending_arguments_;
  deltas.push_back(ToolCall::ArgumentsDelta(index, pending_arguments_));
  pending_arguments_.clear();
}

void RequiredToolCallStream::EndName(std::vector<json>& deltas) {
  phase_ = Phase::kAfterValue;
  if (item_named_) return;  // a second "name": the first one holds
  const json name = json::parse("\"" + name_ + "\"", nullptr, /*allow_exceptions=*/false);
  if (!name.is_string()) {
    phase_ = Phase::kBroken;
    return;
  }
  calls_.push_back({NewToolCallId(), name.get<std::string>(), ""});
  item_named_ = true;
  deltas.push_back(calls_.back().HeaderDelta(static_cast<int>(calls_.size()) - 1));
  FlushArguments(deltas);  // parameters written before the name (not by the guide)
}

void RequiredToolCallStream::EndItem(std::vector<json>& deltas) {
  FlushArguments(deltas);
  if (!item_named_ || !item_has_parameters_) every_item_whole_ = false;
  item_named_ = item_has_parameters_ = false;
  pending_arguments_.clear();
  phase_ = Phase::kAfterItem;
}

void RequiredToolCallStream::Step(char c, std::vector<json>& deltas) {
  switch (phase_) {
    case Phase::kBeforeList:
      if (c == '[')
        phase_ = Phase::kBeforeItem;
      else if (!IsSpace(c))
        phase_ = Phase::kBroken;
      return;
    case Phase::kBeforeItem:
      if (c == '{')
        phase_ = Phase::kBeforeKey;
      else if (c == ']')
        phase_ = Phase::kDone;
      else if (!IsSpace(c))
        phase_ = Phase::kBroken;
      return;
    case Phase::kBeforeKey:
      if (c == '"') {
        key_ = "\"";
        escaped_ = false;
        phase_ = Phase::kInKey;
      } else if (c == '}') {
        EndItem(deltas);
      } else if (!IsSpace(c)) {
        phase_ = Phase::kBroken;
      }
      return;
    case Phase::kInKey:
      key_ += c;
      if (c == '"' && !escaped_) phase_ = Phase::kColon;
      escaped_ = !escaped_ && c == '\\';
      return;
    case Phase::kColon:
      if (c == ':')
        phase_ = Phase::kBeforeValue;
      else if (!IsSpace(c))
        phase_ = Phase::kBroken;
      return;
    case Phase::kBeforeValue:
      if (IsSpace(c)) return;
      if (key_ == "\"name\"" && c == '"') {
        name_.clear();
        escaped_ = false;
        phase_ = Phase::kInName;
        return;
      }
      in_parameters_ = key_ == "\"parameters\"";
      if (in_parameters_) item_has_parameters_ = true;
      value_ = JsonMatcher::ForValue();
      phase_ = Phase::kInValue;
      [[fallthrough]];
    case Phase::kInValue:
      if (value_.in_top_number() && !IsNumberByte(c)) {  // a number ends at the byte after it
        if (!value_.number_can_end()) {
          phase_ = Phase::kBroken;
          return;
        }
        phase_ = Phase::kAfterValue;
        return Step(c, deltas);
      }
      if (!value_.Advance(static_cast<uint8_t>(c))) {
        phase_ = Phase::kBroken;
        return;
      }
      if (in_parameters_) pending_arguments_ += c;
      if (value_.value_complete()) phase_ = Phase::kAfterValue;
      return;
    case Phase::kInName:
      if (c == '"' && !escaped_) {
        EndName(deltas);
        return;
      }
      name_ += c;
      escaped_ = !escaped_ && c == '\\';
      return;
    case Phase::kAfterValue:
      if (c == ',')
        phase_ = Phase::kBeforeKey;
      else if (c == '}')
        EndItem(deltas);
      else if (!IsSpace(c))
        phase_ = Phase::kBroken;
      return;
    case Phase::kAfterItem:
      if (c == ',')
        phase_ = Phase::kBeforeItem;
      else if (c == ']')
        phase_ = Phase::kDone;
      else if (!IsSpace(c))
        phase_ = Phase::kBroken;
      return;
    case Phase::kDone:
      if (!IsSpace(c)) phase_ = Phase::kBroken;
      return;
    case Phase::kBroken:
      return;
  }
}

}  // namespace xinfer::server
