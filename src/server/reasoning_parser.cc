#include "server/reasoning_parser.h"

#include "server/partial_tag.h"

namespace xinfer::server {
namespace {

constexpr std::string_view kStart = "<think>";
constexpr std::string_view kEnd = "</think>";

}  // namespace

std::optional<ReasoningFormat> ReasoningFormatNamed(std::string_view parser) {
  if (parser == "qwen3") return ReasoningFormat::kQwen3;
  if (parser == "deepseek_r1") return ReasoningFormat::kDeepSeekR1;
  return std::nullopt;
}

ReasoningSplit SplitReasoning(std::string_view text, ReasoningFormat format) {
  ReasoningSplit r;
  const bool starts = text.substr(0, kStart.size()) == kStart;
  const size_t end = text.find(kEnd);
  if (end == std::string_view::npos) {
    if (format == ReasoningFormat::kDeepSeekR1) {
      // Thinking was opened in the prompt and has not closed: all of it is reasoning.
      if (starts) text.remove_prefix(kStart.size());
      if (!text.empty()) r.reasoning = std::string(text);
    } else if (starts) {
      r.reasoning = std::string(text.substr(kStart.size()));
    } else if (!text.empty()) {
      r.content = std::string(text);
    }
    return r;
  }
  std::string_view before = text.substr(0, end);
  if (starts) before.remove_prefix(kStart.size());
  r.reasoning = std::string(before);
  std::string_view after = text.substr(end + kEnd.size());
  if (!after.empty()) r.content = std::string(after);
  return r;
}

ReasoningStream::Delta ReasoningStream::Append(std::string_view text) {
  Delta d;
  pending_.append(text);
  if (state_ == State::kStart) {
    if (pending_.size() < kStart.size() &&
        std::string_view(kStart).substr(0, pending_.size()) == pending_)
      return d;  // could still become "<think>"
    if (pending_.compare(0, kStart.size(), kStart) == 0) {
      pending_.erase(0, kStart.size());
      state_ = State::kReasoning;
    } else {
      // deepseek_r1: "<think>" was in the prompt, so the output starts inside the reasoning.
      state_ = format_ == ReasoningFormat::kDeepSeekR1 ? State::kReasoning : State::kContent;
    }
  }
  if (state_ == State::kReasoning) {
    const size_t end = pending_.find(kEnd);
    if (end == std::string::npos) {
      const size_t hold = PartialTagSuffix(pending_, kEnd);
      d.reasoning = pending_.substr(0, pending_.size() - hold);
      pending_.erase(0, pending_.size() - hold);
      return d;
    }
    d.reasoning = pending_.substr(0, end);
    pending_.erase(0, end + kEnd.size());
    state_ = State::kContent;
  }
  d.content += pending_;
  pending_.clear();
  return d;
}

ReasoningStream::Delta ReasoningStream::Finish() {
  Delta d;
  if (state_ == State::kReasoning ||
      (state_ == State::kStart && format_ == ReasoningFormat::kDeepSeekR1)) {
    d.reasoning = std::move(pending_);
  } else {
    d.content = std::move(pending_);
  }
  pending_.clear();
  return d;
}

}  // namespace xinfer::server
