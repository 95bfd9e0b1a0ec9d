// `--reasoning-parser qwen3|deepseek_r1`: splits "<think>reasoning</think>content" into
// reasoning_content and content, for a whole output or streamed deltas, as vLLM's parsers of
// those names do.
// qwen3 (Qwen3ReasoningParser): text with "</think>" → (before it minus a leading "<think>",
// after it); text that starts with "<think>" and never closes it (truncated thinking) → all
// reasoning; anything else → all content.
// deepseek_r1 (DeepSeekR1ReasoningParser; DeepSeek-R1-Distill-Qwen and QwQ, whose chat templates
// open "<think>" in the prompt): the output is reasoning until "</think>" (a leading "<think>"
// dropped), content after it; without "</think>", all reasoning.
// Streaming: the same decisions made as text arrives; a partial tag at the end of a delta is held
// back until it is decided. One ReasoningStream per choice; not thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace xinfer::server {

struct ReasoningSplit {
  std::optional<std::string> reasoning;
  std::optional<std::string> content;
};

enum class ReasoningFormat { kQwen3, kDeepSeekR1 };

// "qwen3" / "deepseek_r1" → the format; anything else nullopt.
std::optional<ReasoningFormat> ReasoningFormatNamed(std::string_view parser);

ReasoningSplit SplitReasoning(std::string_view text, ReasoningFormat format);

class ReasoningStream {
 public:
  explicit ReasoningStream(ReasoningFormat format) : format_(format) {}
  struct Delta {
    std::string reasoning;
    std::string content;
  };
  Delta Append(std::string_view text);
  Delta Finish();  // releases anything held back

 private:
  enum class State { kStart, kReasoning, kContent };
  ReasoningFormat format_;
  State state_ = State::kStart;
  std::string pending_;
};

}  // namespace xinfer::server
