#include "sched/ngram_proposer.h"

#include <algorithm>

namespace xinfer {

void ProposeNgramDrafts(std::span<const TokenId> tokens, int min_n, int max_n, int k,
                        std::vector<TokenId>& drafts) {
  drafts.clear();
  const auto total = static_cast<int64_t>(tokens.size());
  if (k <= 0 || min_n < 1 || max_n < min_n || total < min_n + 1) return;
  const int64_t last = total - 1;
  // For every earlier end position e, how far tokens ending at e match those ending at `last`
  // (at most max_n); the first e of the longest match wins.
  int best_len = 0;
  int64_t best_end = -1;
  for (int64_t e = 0; e < last; ++e) {
    if (tokens[e] != tokens[last]) continue;
    int len = 1;
    while (len < max_n && e - len >= 0 && tokens[e - len] == tokens[last - len]) ++len;
    if (len > best_len) {
      best_len = len;
      best_end = e;
      if (len == max_n) break;  // no later end can be longer, nor earlier
    }
  }
  if (best_len < min_n) return;
  const int64_t begin = best_end + 1;
  const int64_t n = std::min<int64_t>(k, total - begin);
  drafts.assign(tokens.begin() + begin, tokens.begin() + begin + n);
}

}  // namespace xinfer
