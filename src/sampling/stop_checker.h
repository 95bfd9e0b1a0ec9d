// StopChecker: decides when a sequence ends and which detokenized text may be streamed so far.
//
// Stop strings are matched in the text across token boundaries. Text that could still turn out to
// be the start of a stop string is held back until it is known not to be, so a stop string (which
// is not part of the output unless include_stop_str_in_output) is never streamed to the client.
// A trailing incomplete UTF-8 character is held back too, so emitted text never splits one.
// The stop string that completes first in the text wins (on a tie, the longer one), which makes
// the result independent of how the text was split into tokens.
//
// One StopChecker per sequence; not thread-safe. Copies what it needs from the params.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sampling/sampling_params.h"

namespace xinfer {

enum class FinishReason { kNone, kStop, kLength };

// "stop" / "length" as in the OpenAI API; "none" for kNone (which the API writes as null).
const char* ToString(FinishReason reason);

class StopChecker {
 public:
  // `params` must have passed Validate(). `eos_token_ids`: the model's end-of-sequence ids.
  StopChecker(const SamplingParams& params, std::vector<int32_t> eos_token_ids);

  struct Update {
    // Text that may be sent to the client now. When finished: all remaining text to emit.
    std::string text;
    FinishReason finish = FinishReason::kNone;
    // The matched stop string, or the stop token id in decimal for stop_token_ids; empty for EOS
    // and length.
    std::string stop_reason;
    std::optional<int32_t> matched_stop_token;  // set for stop_token_ids matches
  };

  // Feeds the next generated token. `text_delta`: its newly decoded text from an incremental
  // detokenizer (may be empty, may end inside a multi-byte character). Must not be called after
  // a finishing Update (checked).
  //
  // Order of checks: EOS (unless ignore_eos), stop_token_ids, stop strings, max_tokens. The first
  // three are ignored until more than min_tokens tokens have been generated — matching the
  // Sampler, which masks EOS/stop ids while fewer than min_tokens tokens exist. EOS and stop
  // token text is never emitted.
  Update Append(int32_t token, std::string_view text_delta);

  int32_t num_output_tokens() const { return num_tokens_; }
  bool finished() const { return finish_ != FinishReason::kNone; }
  FinishReason finish_reason() const { return finish_; }

 private:
  // Ends the sequence: emits all pending text (up to `end` bytes of buf_).
  Update Finish(FinishReason reason, size_t end);
  // Bytes at the end of the pending text that could begin a stop string.
  size_t StopPrefixHoldback() const;
  // Earliest-completing stop string match ending after byte `new_from` of buf_.
  struct Match {
    size_t begin;
    size_t end;
    const std::string* stop;
  };
  std::optional<Match> FindStop(size_t new_from) const;

  std::vector<std::string> stop_;
  std::vector<int32_t> stop_token_ids_;
  std::vector<int32_t> eos_token_ids_;
  int32_t max_tokens_;
  int32_t min_tokens_;
  bool ignore_eos_;
  bool include_stop_str_;
  size_t max_stop_len_ = 0;

  int32_t num_tokens_ = 0;
  FinishReason finish_ = FinishReason::kNone;
  // buf_[0, emitted_) was already emitted and is kept only as look-back for stop strings that
  // straddle tokens; buf_[emitted_, size) is pending (held back).
  std::string buf_;
  size_t emitted_ = 0;
};

}  // namespace xinfer
