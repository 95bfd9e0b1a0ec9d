// SchedulerConfig: limits and policies of continuous batching. Plain value; Validate() before
// use (Scheduler::Create does).
#pragma once

#include <string_view>

#include "base/status.h"

namespace xinfer {

enum class SchedulingPolicy {
  kFcfs,      // by arrival
  kPriority,  // by Request::priority (lower first), then arrival
};

// "fcfs" or "priority".
StatusOr<SchedulingPolicy> ParseSchedulingPolicy(std::string_view name);
const char* SchedulingPolicyName(SchedulingPolicy policy);

struct SchedulerConfig {
  int max_num_seqs = 256;             // running requests at most
  int max_num_batched_tokens = 8192;  // tokens per step (decodes + prefill chunks)
  int max_model_len = 4096;           // prompt + max_tokens at most
  int block_size = 16;                // tokens per KV block
  int num_blocks = 0;                 // KV blocks in the cache (from the runner's memory budget)
  // Prompt-logprobs requests: the prompt positions whose logits one step computes at most, over
  // all of them (each is a vocabulary-sized row of the runner's logits; their prefill chunks are
  // cut to fit).
  int max_prompt_logits_per_step = 128;
  // Without chunked prefill a prompt runs in one step, so Validate() requires
  // max_num_batched_tokens >= max_model_len (as vLLM does): any admissible request, including
  // one recomputed after preemption, then fits one step.
  bool enable_chunked_prefill = true;
  bool enable_prefix_caching = true;
  // vLLM's --max-loras: the distinct LoRA adapters (NewRequest::lora_id) the running requests
  // may use at once; a waiting request whose adapter would exceed it is passed over (others
  // behind it are admitted) until one finishes. 0: no limit.
  int max_loras = 0;
  // Speculative decoding (vLLM's --speculative-config, method "ngram"): a decode also runs up to
  // num_speculative_tokens draft tokens, proposed by ProposeNgramDrafts (sched/ngram_proposer.h)
  // over the request's tokens with n-grams of prompt_lookup_min..prompt_lookup_max tokens; the
  // engine keeps the drafts its sampler draws again (SequenceResult::num_accepted_drafts). Drafts
  // take the step's token budget that the decodes, prefill chunks and admissions left, and never
  // run past max_tokens or max_model_len. 0: off.
  int num_speculative_tokens = 0;
  int prompt_lookup_min = 1;
  int prompt_lookup_max = 1;
  // vLLM's disable_by_batch_size: no drafts while more requests than this run (a large batch's
  // decode is bound by compute, not by reading the weights, so drafts would cost what they
  // save). 0: no limit.
  int speculative_disable_by_batch_size = 0;
  SchedulingPolicy policy = SchedulingPolicy::kFcfs;

  Status Validate() const;
};

}  // namespace xinfer
