// What one scheduling step tells the model runner, and what the engine reports back.
// Plain values (copyable); no pointers into the scheduler.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "kv/kv_types.h"
#include "sched/request.h"

namespace xinfer {

// One sequence's share of a step: run `token_ids` at positions
// [start_position, start_position + num_new_tokens) of request `request_id`.
struct ScheduledSequence {
  RequestId request_id;
  int start_position = 0;          // == the request's num_computed_tokens before this step
  int num_new_tokens = 0;          // >= 1
  std::vector<TokenId> token_ids;  // the num_new_tokens input tokens
  // False only for a plain decode: the single newest token, a generated one, with everything
  // before it computed. Prefill chunks and recomputation after preemption are prefills.
  bool is_prefill = false;
  // True when the chunk ends at the request's last known token: the runner must compute logits
  // for the last position and sample one token. False for a non-final prefill chunk.
  bool needs_sampling = false;
  // Prompt logprobs (NewRequest::prompt_logits): the logits of positions [start_position,
  // start_position + num_prompt_logits) are wanted too; position p's give prompt token p + 1's
  // logprob. 0 otherwise.
  int num_prompt_logits = 0;
  // True on the first step after (re-)admission: the runner should (re)create its per-request
  // state; start_position may be > 0 on a prefix-cache hit.
  bool newly_admitted = false;
  int32_t lora_id = 0;  // the request's LoRA adapter (NewRequest::lora_id); 0: none
  // Speculative decoding (SchedulerConfig::num_speculative_tokens): draft tokens guessed to follow
  // the request's last token, run after it as the last spec_token_ids.size() of token_ids (also
  // counted in num_new_tokens). Such a sequence needs sampling at its last real position and at
  // each draft's: the runner gives it 1 + spec_token_ids.size() logits rows.
  std::vector<TokenId> spec_token_ids;
  // The whole block table after this step's allocation (covers start_position +
  // num_new_tokens tokens); slot of position p = SlotForPosition(block_table, p, block_size).
  std::vector<BlockId> block_table;
  std::vector<BlockId> new_block_ids;  // blocks appended to the table this step
};

struct SchedulerOutput {
  uint64_t step_id = 0;
  // Decodes of running requests first, then running prefill chunks, then new admissions.
  std::vector<ScheduledSequence> scheduled;
  int total_num_tokens = 0;  // sum of num_new_tokens, <= max_num_batched_tokens
  // Preempted during this step (blocks freed; they will be recomputed later).
  std::vector<RequestId> preempted_request_ids;
  // Finished or aborted since the previous step: the runner drops its per-request state.
  std::vector<RequestId> finished_request_ids;

  bool empty() const { return scheduled.empty(); }
};

// The engine's result for output.scheduled[i] (index-aligned).
struct SequenceResult {
  // The sampled token; present exactly when needs_sampling was set.
  std::optional<TokenId> sampled_token;
  // The engine's stop checker decided the request is done after this token (EOS, stop token,
  // stop string). max_tokens / max_model_len are enforced by the scheduler itself.
  bool stop = false;
  // Speculative decoding: how many of the sequence's spec_token_ids, from the first, were drawn
  // again by its sampler and are kept; sampled_token follows them (it is the token drawn at the
  // first draft that was not, or after the last). stop applies to sampled_token.
  int num_accepted_drafts = 0;
};

// A request that left the scheduler in Update() (stop or length).
struct FinishedRequest {
  RequestId request_id;
  RequestStatus status = RequestStatus::kFinishedStopped;
  int num_prompt_tokens = 0;
  int num_output_tokens = 0;
  int num_cached_tokens = 0;
  int num_preemptions = 0;
};

struct SchedulerStats {
  int num_running = 0;
  int num_waiting = 0;               // includes preempted requests waiting to be recomputed
  int64_t num_preemptions = 0;       // total since creation
  int64_t prefix_cache_queries = 0;  // tokens
  int64_t prefix_cache_hits = 0;     // tokens
  double kv_cache_usage = 0.0;       // fraction of blocks in use, [0, 1]
  int num_free_blocks = 0;
  int num_blocks = 0;
  // The distinct LoRA ids (NewRequest::lora_id != 0) of the running and the waiting requests,
  // ascending.
  std::vector<int32_t> running_loras, waiting_loras;
};

}  // namespace xinfer
