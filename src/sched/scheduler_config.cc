#include "sched/scheduler_config.h"

namespace xinfer {

StatusOr<SchedulingPolicy> ParseSchedulingPolicy(std::string_view name) {
  if (name == "fcfs") return SchedulingPolicy::kFcfs;
  if (name == "priority") return SchedulingPolicy::kPriority;
  return InvalidArgument("unknown scheduling policy '{}' (expected 'fcfs' or 'priority')", name);
}

const char* SchedulingPolicyName(SchedulingPolicy policy) {
  return policy == SchedulingPolicy::kFcfs ? "fcfs" : "priority";
}

Status SchedulerConfig::Validate() const {
  if (max_num_seqs < 1) return InvalidArgument("max_num_seqs must be >= 1, got {}", max_num_seqs);
  if (max_num_batched_tokens < 1) {
    return InvalidArgument("max_num_batched_tokens must be >= 1, got {}", max_num_batched_tokens);
  }
  if (max_model_len < 1) {
    return InvalidArgument("max_model_len must be >= 1, got {}", max_model_len);
  }
  if (block_size < 1) return InvalidArgument("block_size must be >= 1, got {}", block_size);
  if (num_blocks < 1) return InvalidArgument("num_blocks must be >= 1, got {}", num_blocks);
  if (max_loras < 0) return InvalidArgument("max_loras must be >= 0, got {}", max_loras);
  if (max_prompt_logits_per_step < 1)
    return InvalidArgument("max_prompt_logits_per_step must be >= 1, got {}",
                           max_prompt_logits_per_step);
  if (num_speculative_tokens < 0)
    return InvalidArgument("num_speculative_tokens must be >= 0, got {}", num_speculative_tokens);
  if (num_speculative_tokens > 0 &&
      (prompt_lookup_min < 1 || prompt_lookup_max < prompt_lookup_min))
    return InvalidArgument("prompt_lookup_min ({}) must be >= 1 and <= prompt_lookup_max ({})",
                           prompt_lookup_min, prompt_lookup_max);
  if (speculative_disable_by_batch_size < 0)
    return InvalidArgument("speculative_disable_by_batch_size must be >= 0, got {}",
                           speculative_disable_by_batch_size);
  if (max_num_batched_tokens < max_num_seqs) {
    return InvalidArgument(
        "max_num_batched_tokens ({}) must be >= max_num_seqs ({}) so every running sequence can "
        "decode in one step",
        max_num_batched_tokens, max_num_seqs);
  }
  if (!enable_chunked_prefill && max_num_batched_tokens < max_model_len) {
    return InvalidArgument(
        "without chunked prefill max_num_batched_tokens ({}) must be >= max_model_len ({}) so "
        "every prompt fits one step; enable chunked prefill or raise max_num_batched_tokens",
        max_num_batched_tokens, max_model_len);
  }
  return Status::Ok();
}

}  // namespace xinfer
