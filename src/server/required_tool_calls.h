// tool_choice "required": the guided output is vLLM's JSON list of calls,
// [{"name": "<function>", "parameters": <arguments>}, ...] (the guide writes "name" first). This
// reads it as it arrives and turns it into the tool_calls deltas of a streamed chat response: a
// call's header (id, name) once its name is complete, then its arguments — the parameters' JSON
// text as written — piece by piece, as vLLM streams them. The non-streamed response reads the
// whole text the same way, so both give the same calls.
//
// One per choice; not thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "sampling/json_matcher.h"
#include "server/tool_parser.h"

namespace xinfer::server {

class RequiredToolCallStream {
 public:
  // Reads the next piece of the output; the tool_calls delta elements it completes.
  std::vector<nlohmann::ordered_json> Append(std::string_view text);
  // The list was read to its ']' with at least one call, each with a name and parameters.
  bool complete() const;
  // The calls so far (arguments: the parameters' text read so far).
  const std::vector<ToolCall>& calls() const { return calls_; }

 private:
  enum class Phase {
    kBeforeList,  // before '['
    kBeforeItem,  // after '[' or ',': '{' or ']'
    kBeforeKey,   // in an item, before a key or '}'
    kInKey,       // inside a key (raw bytes in key_)
    kColon,
    kBeforeValue,
    kInName,      // inside the "name" string (raw bytes in name_)
    kInValue,     // inside another value (value_ lexes it)
    kAfterValue,  // ',' or '}'
    kAfterItem,   // ',' or ']'
    kDone,
    kBroken,  // not such a list (only a guide-less or cut text can be): nothing more is read
  };
  void Step(char c, std::vector<nlohmann::ordered_json>& deltas);
  // The "name" string closed: the call's header goes out.
  void EndName(std::vector<nlohmann::ordered_json>& deltas);
  void EndItem(std::vector<nlohmann::ordered_json>& deltas);
  // Sends the arguments read since the last delta, once the call's header went out.
  void FlushArguments(std::vector<nlohmann::ordered_json>& deltas);

  Phase phase_ = Phase::kBeforeList;
  std::string key_;
  std::string name_;      // raw JSON string content
  bool escaped_ = false;  // kInKey / kInName: the previous byte was a backslash
  JsonMatcher value_;     // kInValue
  bool in_parameters_ = false;
  // The item being read: its name (once known), whether it had parameters, arguments not sent.
  bool item_named_ = false;
  bool item_has_parameters_ = false;
  std::string pending_arguments_;
  std::vector<ToolCall> calls_;
  bool every_item_whole_ = true;
};

}  // namespace xinfer::server
