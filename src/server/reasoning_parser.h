// `--reasoning-parser qwen3`: splits "<think>reasoning</think>content" into reasoning_content and
// content, for a whole output or streamed deltas (as vLLM's Qwen3ReasoningParser).
// Non-streaming: text with "</think>" → (before it minus a leading "<think>", after it); text
// that starts with "<think>" and never closes it (truncated thinking) → all reasoning; anything
// else → all content. Streaming: the same decisions made as text arrives; a partial tag at the
// end of a delta is held back until it is decided.
// One Qwen3ReasoningStream per choice; not thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace xinfer::server {

struct ReasoningSplit {
  std::optional<std::string> reasoning;
  std::optional<std::string> content;
};

ReasoningSplit SplitQwen3Reasoning(std::string_view text);

class Qwen3ReasoningStream {
 public:
  struct Delta {
    std::string reasoning;
    std::string content;
  };
  Delta Append(std::string_view text);
  Delta Finish();  // releases anything held back

 private:
  enum class State { kStart, kReasoning, kContent };
  State state_ = State::kStart;
  std::string pending_;
};

}  // namespace xinfer::server
