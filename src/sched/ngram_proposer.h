// Prompt-lookup drafts for speculative decoding (vLLM's "ngram" method): the tokens that
// followed an earlier occurrence of the sequence's last n tokens are proposed as its next ones.
// Pure function of the token history; the scheduler calls it for each decode
// (SchedulerConfig::num_speculative_tokens) and the engine verifies the drafts.
#pragma once

#include <span>
#include <vector>

#include "kv/kv_types.h"

namespace xinfer {

// The longest n in [min_n, max_n] such that the last n tokens of `tokens` also occur ending
// earlier; of the occurrences of that length, the earliest. Writes the up to `k` tokens that
// followed it into `drafts` (cleared first; they may run into the matched suffix itself, as in a
// repeating run). No draft when no such n exists or the history is shorter than min_n.
// O(tokens.size() x max_n) in the worst case (a run of one token), about tokens.size() typically.
void ProposeNgramDrafts(std::span<const TokenId> tokens, int min_n, int max_n, int k,
                        std::vector<TokenId>& drafts);

}  // namespace xinfer
