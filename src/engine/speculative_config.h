// vLLM's --speculative-config for the engine: prompt-lookup ("ngram") speculative decoding. A
// decode runs up to num_speculative_tokens draft tokens copied from an earlier occurrence of the
// sequence's last n tokens (sched/ngram_proposer.h), and keeps those its sampler draws again:
// every token is the one plain decoding would give, at the cost of one forward pass for several.
#pragma once

#include <string>

#include "base/status.h"

namespace xinfer {

struct SpeculativeConfig {
  int num_speculative_tokens = 0;  // 0: off
  int prompt_lookup_min = 5;       // n-gram lengths tried (vLLM's defaults: 5 and 5)
  int prompt_lookup_max = 5;
  int disable_by_batch_size = 0;  // no drafts while more requests than this run; 0: no limit
  bool enabled() const { return num_speculative_tokens > 0; }
};

// Parses the JSON object as vLLM reads it: "method" "ngram" (or "[ngram]", "ngram_gpu"; or
// "model": "ngram" without a method), "num_speculative_tokens" (required, >= 1),
// "prompt_lookup_min" / "prompt_lookup_max" (each defaults to the other, both to 5),
// "disable_by_batch_size"; settings that change nothing here ("disable_log_stats",
// "disable_logprobs", "disable_padded_drafter_batch") are accepted. A draft model, EAGLE, MTP
// or any other method, and unknown keys, are refused by name. "" gives the default (off).
StatusOr<SpeculativeConfig> ParseSpeculativeConfig(const std::string& text);

}  // namespace xinfer
