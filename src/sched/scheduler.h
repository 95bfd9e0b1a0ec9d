// Scheduler: continuous batching over a paged KV cache (vLLM v1 style), pure bookkeeping.
//
// The engine loop, all on ONE engine thread (the scheduler is not thread-safe; AddRequest and
// Abort must be called from that thread too, e.g. by draining a queue between steps):
//
//   while (scheduler.HasUnfinishedRequests()) {
//     SchedulerOutput out = scheduler.Schedule();
//     std::vector<SequenceResult> results = runner.Execute(out);  // one per out.scheduled[i]
//     for (const FinishedRequest& f : scheduler.Update(out, results)) ...;  // emit, detokenize
//   }
//
// Each Schedule() with a non-empty output must be followed by Update() (or DiscardStep() if the
// step failed) with that output before the next Schedule(). Per step (token budget =
// max_num_batched_tokens):
//   1. Running requests, decodes first (1 token each), then running requests in chunked prefill
//      (their next chunk). Running requests are kept ordered by (priority if the priority policy,
//      arrival). If one cannot get a block, the last one in that order (lowest priority / latest
//      arrival) is preempted — its blocks freed, it re-enters the waiting queue to be recomputed —
//      and the allocation is retried; if the victim is the request itself it is not scheduled.
//   2. If nothing was preempted this step, waiting requests in (priority, arrival) order are
//      admitted while the budget, max_num_seqs and free blocks allow, each starting at its
//      prefix-cache hit. With chunked prefill the first chunk is cut to the remaining budget;
//      without it the whole prompt must fit. Admission stops at the first request that does not
//      fit (no overtaking: under FCFS a request that fits the cache is never starved by later
//      arrivals; under the priority policy only by a steady stream of higher priorities).
//   3. Speculative decoding (SchedulerConfig::num_speculative_tokens): the budget left over goes
//      to draft tokens of the decodes (ScheduledSequence::spec_token_ids), in order; they never
//      preempt anyone. Update() keeps the drafts the engine accepted and drops the rest.
// Blocks are prefix-cached in Update(), after their KV has been written.
//
// Who decides "finished": the engine's stop checker (SequenceResult::stop) for EOS/stop
// tokens/strings; the scheduler for max_tokens (FINISHED_LENGTH; stop wins if both happen on
// the same token); Abort() for cancellation. n > 1 is done by the engine as n requests with the
// same prompt: they share its cached blocks once the first one's prefill has run.
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <span>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "kv/kv_cache_manager.h"
#include "sched/request.h"
#include "sched/scheduler_config.h"
#include "sched/scheduler_output.h"

namespace xinfer {

struct NewRequest {
  RequestId id;
  std::vector<TokenId> prompt_token_ids;
  int max_tokens = 16;     // output tokens at most (>= 1)
  int priority = 0;        // used by the priority policy; lower first
  uint64_t extra_key = 0;  // prefix-cache namespace, e.g. LoRA id; 0 when unused
  // Prompt logprobs: the logits of every prompt position are wanted (ScheduledSequence::
  // num_prompt_logits), so the request does not read the prefix cache (cached positions are not
  // computed) and its prefill chunks share SchedulerConfig::max_prompt_logits_per_step.
  bool prompt_logits = false;
  // The LoRA adapter the request runs with (ScheduledSequence::lora_id); 0: none. Counts toward
  // SchedulerConfig::max_loras.
  int32_t lora_id = 0;
};

class Scheduler {
 public:
  // Fails with the config's validation error.
  static StatusOr<std::unique_ptr<Scheduler>> Create(const SchedulerConfig& config);

  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Queues a request. Errors: InvalidArgument for an empty prompt, max_tokens < 1 or an id
  // already in use; OutOfRange when prompt + max_tokens exceeds max_model_len or the request
  // could never fit the whole KV cache even alone.
  Status AddRequest(NewRequest request);

  // Cancels an unfinished request in any state; its blocks are freed immediately. If it was
  // scheduled in the step now executing, its result in Update() is ignored (the blocks are only
  // reused by the next Schedule()). NotFound for an unknown or already finished id.
  Status Abort(const RequestId& id);

  SchedulerOutput Schedule();

  // Applies a successful step's results (results[i] belongs to output.scheduled[i]): advances
  // num_computed_tokens, appends sampled tokens, caches newly full blocks, and finishes requests
  // on stop or max_tokens (freeing their blocks). Returns the requests that finished.
  // sampled_token must be present exactly when needs_sampling (checked), except for requests
  // aborted since Schedule(), whose results are ignored.
  std::vector<FinishedRequest> Update(const SchedulerOutput& output,
                                      std::span<const SequenceResult> results);

  // Instead of Update() when the step failed (the runner returned an error): nothing the step
  // computed is trusted — no request advances and no block is cached — so the step's requests
  // stay RUNNING and are scheduled again, unless the engine aborts them (before or after).
  void DiscardStep(const SchedulerOutput& output);

  bool HasUnfinishedRequests() const { return !requests_.empty(); }
  int num_running() const { return static_cast<int>(running_.size()); }
  int num_waiting() const { return static_cast<int>(waiting_.size()); }
  SchedulerStats stats() const;
  // Unfinished requests only; null otherwise. Valid until the next mutating call.
  const Request* GetRequest(const RequestId& id) const;
  const SchedulerConfig& config() const { return config_; }
  const KvCacheManager& kv_cache() const { return kv_; }
  // Drops unreferenced prefix-cache entries (e.g. after a weight reload); returns how many.
  int ResetPrefixCache() { return kv_.ResetPrefixCache(); }

  // Cross-checks requests, queues and the KV cache (O(requests + blocks)); for tests/debug.
  Status CheckInvariants() const;

 private:
  explicit Scheduler(const SchedulerConfig& config);

  // Orders requests by (priority under the priority policy, arrival).
  struct Order {
    bool by_priority;
    bool operator()(const Request* a, const Request* b) const;
  };

  // Prompt logprobs: the most tokens r's next chunk may have (the prompt-logits rows this step
  // has left while r has prompt positions to compute; no limit otherwise).
  int PromptLogitsCap(const Request& r) const;
  bool ScheduleRunning(Request* r, SchedulerOutput& out, int& budget);
  // Speculative decoding: the step's decodes get their draft tokens, in order, from the budget
  // left once everything else is scheduled, cut to what each request may still generate; a
  // decode whose drafts would need a block that is not free runs without them.
  void AddDrafts(SchedulerOutput& out, int& budget);
  void Preempt(Request* victim, SchedulerOutput& out, int& budget);
  void AdmitWaiting(SchedulerOutput& out, int& budget);
  void AppendScheduled(Request* r, int num_new_tokens, std::vector<BlockId> new_blocks,
                       bool newly_admitted, SchedulerOutput& out);
  void InsertRunning(Request* r);
  void RemoveRunning(Request* r);
  void FinishAndErase(Request* r, RequestStatus status);

  SchedulerConfig config_;
  KvCacheManager kv_;
  std::unordered_map<RequestId, std::unique_ptr<Request>> requests_;  // unfinished only
  std::set<Request*, Order> waiting_;                                 // WAITING and PREEMPTED
  std::vector<Request*> running_;                                     // RUNNING, sorted by Order
  std::vector<RequestId> finished_since_last_step_;
  uint64_t next_arrival_ = 0;
  bool had_lora_requests_ = false;  // some request ever named a LoRA adapter (stats() scans)
  uint64_t next_step_id_ = 1;
  uint64_t pending_step_id_ = 0;  // non-empty step awaiting Update(); 0 when none
  int64_t num_preemptions_ = 0;
  int prompt_logits_left_ = 0;  // this step's, of max_prompt_logits_per_step
};

}  // namespace xinfer
