// Request: one generation request as the scheduler tracks it (integers only, no sampling
// parameters, no text).
//
// State machine:
//   WAITING --admitted--> RUNNING --Update: stop/max_tokens--> FINISHED_STOPPED / FINISHED_LENGTH
//   RUNNING --out of KV blocks--> PREEMPTED (back in the waiting queue; its blocks are freed and
//   num_computed_tokens reset to 0) --admitted again--> RUNNING, recomputing prompt + outputs
//   (num_computed_tokens starts at the prefix-cache hit).
//   Any unfinished state --Abort--> FINISHED_ABORTED.
//
// Ownership: the Scheduler owns every Request and is the only writer; others see const views
// through Scheduler::GetRequest. Thread-safety: none (engine thread only).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kv/kv_types.h"

namespace xinfer {

enum class RequestStatus {
  kWaiting,
  kRunning,
  kPreempted,  // waiting again after preemption
  kFinishedStopped,
  kFinishedLength,
  kFinishedAborted,
};

const char* RequestStatusName(RequestStatus status);
bool IsFinished(RequestStatus status);

struct Request {
  RequestId id;
  // Prompt followed by every sampled output token.
  std::vector<TokenId> token_ids;
  int num_prompt_tokens = 0;
  int max_tokens = 0;          // output tokens at most
  int priority = 0;            // lower runs first (priority policy only)
  uint64_t arrival = 0;        // order of AddRequest, unique
  uint64_t extra_key = 0;      // prefix-cache namespace (e.g. LoRA id); 0 when unused
  int32_t lora_id = 0;         // NewRequest::lora_id
  bool prompt_logits = false;  // NewRequest::prompt_logits
  RequestStatus status = RequestStatus::kWaiting;
  // Tokens whose KV is in the cache (prefix hit + steps run so far).
  int num_computed_tokens = 0;
  // Prompt tokens served by the prefix cache at the first admission
  // (usage.prompt_tokens_details.cached_tokens); -1 until first admitted.
  int num_cached_tokens = -1;
  int num_preemptions = 0;

  int num_tokens() const { return static_cast<int>(token_ids.size()); }
  int num_output_tokens() const { return num_tokens() - num_prompt_tokens; }
  std::span<const TokenId> prompt_token_ids() const {
    return std::span<const TokenId>(token_ids).first(static_cast<size_t>(num_prompt_tokens));
  }
  std::span<const TokenId> output_token_ids() const {
    return std::span<const TokenId>(token_ids).subspan(static_cast<size_t>(num_prompt_tokens));
  }
};

}  // namespace xinfer
