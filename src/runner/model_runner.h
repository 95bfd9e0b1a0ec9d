// ModelRunner: the only place that turns the scheduler's plain SchedulerOutput into device
// inputs. It owns the paged KV cache (whose block ids the scheduler hands out) and runs the
// model; sampling stays with the engine.
//
// Ownership: holds references to the model and backend (which outlive it) and owns the cache.
// Thread-safety: one thread (the engine's).
#pragma once

#include <memory>
#include <unordered_map>
#include <vector>

#include "model/causal_lm.h"
#include "model/lora.h"
#include "sched/scheduler_output.h"

namespace xinfer {

class ModelRunner {
 public:
  // kv_dtype: the cache's element type (IsSupportedKvCacheDType; EngineConfig validates it).
  // `hidden_states`: a pooling model's runner; logits() holds the sampled rows' hidden states
  // (hidden_size wide) instead of logits.
  ModelRunner(CausalLM& model, Backend& backend, int32_t num_blocks, int32_t block_size,
              DType kv_dtype, bool hidden_states = false);

  // Runs one step. On success `logits()` holds one row per scheduled sequence whose
  // needs_sampling is set, in the order of output.scheduled, followed by one per draft token it
  // runs (spec_token_ids), and the prompt positions' rows each asks for (num_prompt_logits);
  // sampling_index()[i] is the row of output.scheduled[i]'s sampled position (its drafts' rows
  // follow it), or -1 when it needs no sampling.
  Status Execute(const SchedulerOutput& output);
  const Tensor& logits() const { return logits_; }
  const std::vector<int>& sampling_index() const { return sampling_index_; }
  // Prompt logprobs: the logits row of output.scheduled[i]'s first prompt position
  // (num_prompt_logits > 0; the next ones follow it), else -1.
  const std::vector<int>& prompt_logits_index() const { return prompt_logits_index_; }

  // LoRA adapters by the scheduler's lora_id (ScheduledSequence::lora_id, != 0): a sequence with
  // one runs with that adapter. Removing one in use by a scheduled sequence makes Execute fail.
  void AddLoraAdapter(int32_t lora_id, std::shared_ptr<const LoraAdapter> adapter) {
    loras_[lora_id] = std::move(adapter);
  }
  void RemoveLoraAdapter(int32_t lora_id) { loras_.erase(lora_id); }

  // Tokens run through the model so far (prompt chunks, recomputation and decodes).
  int64_t num_computed_tokens() const { return num_computed_tokens_; }
  const PagedKvCache& cache() const { return cache_; }

 private:
  CausalLM& model_;
  Backend& backend_;
  PagedKvCache cache_;
  ForwardBatch batch_;  // reused across steps to avoid reallocating
  bool hidden_states_ = false;
  Tensor logits_;
  std::vector<int> sampling_index_;
  std::vector<int> prompt_logits_index_;
  int64_t num_computed_tokens_ = 0;
  std::unordered_map<int32_t, std::shared_ptr<const LoraAdapter>> loras_;
};

}  // namespace xinfer
