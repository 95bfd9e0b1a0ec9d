#include "sampling/stop_checker.h"

#include <algorithm>
#include <utility>

#include "base/check.h"
#include "base/utf8.h"

namespace xinfer {
namespace {

bool Contains(const std::vector<int32_t>& ids, int32_t id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

}  // namespace

const char* ToString(FinishReason reason) {
  switch (reason) {
    case FinishReason::kNone:
      return "none";
    case FinishReason::kStop:
      return "stop";
    case FinishReason::kLength:
      return "length";
  }
  return "none";
}

StopChecker::StopChecker(const SamplingParams& params, std::vector<int32_t> eos_token_ids)
    : stop_(params.stop),
      stop_token_ids_(params.stop_token_ids),
      eos_token_ids_(std::move(eos_token_ids)),
      max_tokens_(params.max_tokens),
      min_tokens_(params.min_tokens),
      ignore_eos_(params.ignore_eos),
      include_stop_str_(params.include_stop_str_in_output) {
  // Validate() rejects empty stop strings; dropping them here keeps the matching code total.
  std::erase_if(stop_, [](const std::string& s) { return s.empty(); });
  for (const auto& s : stop_) max_stop_len_ = std::max(max_stop_len_, s.size());
}

StopChecker::Update StopChecker::Append(int32_t token, std::string_view text_delta) {
  XI_CHECK_MSG(!finished(), "StopChecker::Append after the sequence finished");
  ++num_tokens_;
  const bool can_stop = num_tokens_ > min_tokens_;
  if (can_stop && !ignore_eos_ && Contains(eos_token_ids_, token)) {
    return Finish(FinishReason::kStop, buf_.size());
  }
  if (can_stop && Contains(stop_token_ids_, token)) {
    Update update = Finish(FinishReason::kStop, buf_.size());
    update.stop_reason = std::to_string(token);
    update.matched_stop_token = token;
    return update;
  }

  const size_t old_size = buf_.size();
  buf_.append(text_delta);
  if (can_stop) {
    if (std::optional<Match> m = FindStop(old_size)) {
      Update update = Finish(FinishReason::kStop, include_stop_str_ ? m->end : m->begin);
      update.stop_reason = *m->stop;
      return update;
    }
  }
  if (num_tokens_ >= max_tokens_) return Finish(FinishReason::kLength, buf_.size());

  // With include_stop_str_in_output a stop string is emitted anyway, so only the text after it
  // (which arrives later) would need cutting: nothing has to be held for stop strings.
  size_t hold = include_stop_str_ ? 0 : StopPrefixHoldback();
  hold = std::max(hold, IncompleteUtf8SuffixLength(std::string_view(buf_).substr(emitted_)));
  const size_t emit_end = buf_.size() - hold;
  Update update;
  update.text = buf_.substr(emitted_, emit_end - emitted_);
  emitted_ = emit_end;

  // Keep only what a future match could start in: the pending text and, for look-back, the last
  // max_stop_len - 1 bytes (a match must end in new text, so it starts no earlier than that).
  const size_t lookback = max_stop_len_ > 0 ? max_stop_len_ - 1 : 0;
  const size_t keep_from = std::min(emitted_, buf_.size() > lookback ? buf_.size() - lookback : 0);
  buf_.erase(0, keep_from);
  emitted_ -= keep_from;
  return update;
}

StopChecker::Update StopChecker::Finish(FinishReason reason, size_t end) {
  finish_ = reason;
  Update update;
  update.finish = reason;
  end = std::max(end, emitted_);
  update.text = buf_.substr(emitted_, end - emitted_);
  // The stream ended inside a character (e.g. a byte-fallback token cut short by max_tokens):
  // emit U+FFFD like a replacing decoder rather than invalid UTF-8 that would break JSON output.
  if (const size_t partial = IncompleteUtf8SuffixLength(update.text); partial > 0) {
    update.text.replace(update.text.size() - partial, partial, kReplacementChar);
  }
  buf_.clear();
  emitted_ = 0;
  return update;
}

size_t StopChecker::StopPrefixHoldback() const {
  const std::string_view pending = std::string_view(buf_).substr(emitted_);
  size_t hold = 0;
  for (const auto& s : stop_) {
    // Longest proper prefix of s that is a suffix of the pending text; shorter ones cannot win.
    for (size_t len = std::min(s.size() - 1, pending.size()); len > hold; --len) {
      if (pending.substr(pending.size() - len) == std::string_view(s).substr(0, len)) {
        hold = len;
        break;
      }
    }
  }
  return hold;
}

std::optional<StopChecker::Match> StopChecker::FindStop(size_t new_from) const {
  std::optional<Match> best;
  for (const auto& s : stop_) {
    // Only matches that end in the new text: earlier ones were either reported already or
    // completed while min_tokens suppressed stopping.
    const size_t from = new_from + 1 > s.size() ? new_from + 1 - s.size() : 0;
    const size_t pos = buf_.find(s, from);
    if (pos == std::string::npos) continue;
    const Match m{pos, pos + s.size(), &s};
    if (!best || m.end < best->end || (m.end == best->end && m.begin < best->begin)) best = m;
  }
  return best;
}

}  // namespace xinfer
