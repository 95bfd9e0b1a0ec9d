#include "sched/scheduler.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "base/check.h"
#include "sched/ngram_proposer.h"

namespace xinfer {
namespace {

KvCacheConfig KvConfigFor(const SchedulerConfig& config) {
  KvCacheConfig kv;
  kv.num_blocks = config.num_blocks;
  kv.block_size = config.block_size;
  kv.enable_prefix_caching = config.enable_prefix_caching;
  return kv;
}

}  // namespace

bool Scheduler::Order::operator()(const Request* a, const Request* b) const {
  if (by_priority && a->priority != b->priority) return a->priority < b->priority;
  return a->arrival < b->arrival;
}

StatusOr<std::unique_ptr<Scheduler>> Scheduler::Create(const SchedulerConfig& config) {
  XI_RETURN_IF_ERROR(config.Validate().WithContext("invalid scheduler config"));
  return std::unique_ptr<Scheduler>(new Scheduler(config));
}

Scheduler::Scheduler(const SchedulerConfig& config)
    : config_(config),
      kv_(KvConfigFor(config)),
      waiting_(Order{config.policy == SchedulingPolicy::kPriority}) {}

Status Scheduler::AddRequest(NewRequest request) {
  if (request.id.empty()) return InvalidArgument("request id must not be empty");
  if (requests_.contains(request.id)) {
    return InvalidArgument("request id '{}' is already in use", request.id);
  }
  const int prompt_len = static_cast<int>(request.prompt_token_ids.size());
  if (prompt_len == 0) return InvalidArgument("request '{}': the prompt is empty", request.id);
  if (request.max_tokens < 1) {
    return InvalidArgument("request '{}': max_tokens must be >= 1, got {}", request.id,
                           request.max_tokens);
  }
  // int64 so that a huge max_tokens cannot overflow.
  const int64_t total = static_cast<int64_t>(prompt_len) + request.max_tokens;
  if (total > config_.max_model_len) {
    return OutOfRange(
        "request '{}': prompt ({} tokens) + max_tokens ({}) = {} exceeds the maximum context "
        "length of {} tokens",
        request.id, prompt_len, request.max_tokens, total, config_.max_model_len);
  }
  // The last sampled token is never fed back, so at most total - 1 tokens need KV.
  const int blocks_needed = CeilDiv(static_cast<int>(total) - 1, config_.block_size);
  if (blocks_needed > config_.num_blocks) {
    return OutOfRange(
        "request '{}': prompt ({} tokens) + max_tokens ({}) needs up to {} KV cache blocks of {} "
        "tokens but the whole cache has only {} blocks ({} tokens); shorten the prompt or "
        "max_tokens",
        request.id, prompt_len, request.max_tokens, blocks_needed, config_.block_size,
        config_.num_blocks, config_.num_blocks * config_.block_size);
  }
  auto r = std::make_unique<Request>();
  r->id = std::move(request.id);
  r->token_ids = std::move(request.prompt_token_ids);
  r->token_ids.reserve(static_cast<size_t>(total));
  r->num_prompt_tokens = prompt_len;
  r->max_tokens = request.max_tokens;
  r->priority = request.priority;
  r->extra_key = request.extra_key;
  r->lora_id = request.lora_id;
  if (r->lora_id != 0) had_lora_requests_ = true;
  r->prompt_logits = request.prompt_logits;
  r->arrival = next_arrival_++;
  r->status = RequestStatus::kWaiting;
  waiting_.insert(r.get());
  const RequestId id = r->id;
  requests_.emplace(id, std::move(r));
  return Status::Ok();
}

Status Scheduler::Abort(const RequestId& id) {
  auto it = requests_.find(id);
  if (it == requests_.end()) return NotFound("no unfinished request with id '{}'", id);
  FinishAndErase(it->second.get(), RequestStatus::kFinishedAborted);
  return Status::Ok();
}

SchedulerOutput Scheduler::Schedule() {
  XI_CHECK_MSG(pending_step_id_ == 0, "Schedule() called before Update() of the previous step");
  SchedulerOutput out;
  out.step_id = next_step_id_++;
  out.finished_request_ids = std::move(finished_since_last_step_);
  finished_since_last_step_.clear();
  int budget = config_.max_num_batched_tokens;
  prompt_logits_left_ = config_.max_prompt_logits_per_step;

  // 1. Running requests: decodes first, then continuing prefill chunks, each in running order.
  std::vector<Request*> order;
  order.reserve(running_.size());
  for (Request* r : running_) {
    if (r->num_tokens() - r->num_computed_tokens == 1) order.push_back(r);
  }
  for (Request* r : running_) {
    if (r->num_tokens() - r->num_computed_tokens > 1) order.push_back(r);
  }
  for (Request* r : order) {
    if (budget == 0) break;
    if (r->status != RequestStatus::kRunning) continue;  // preempted earlier in this step
    ScheduleRunning(r, out, budget);
  }

  // 2. New or preempted requests, unless this step had to preempt (avoids thrashing).
  if (out.preempted_request_ids.empty()) AdmitWaiting(out, budget);

  // 3. Draft tokens for the decodes, in the budget that is left.
  if (config_.num_speculative_tokens > 0) AddDrafts(out, budget);

  out.total_num_tokens = config_.max_num_batched_tokens - budget;
  if (!out.empty()) pending_step_id_ = out.step_id;
  return out;
}

bool Scheduler::ScheduleRunning(Request* r, SchedulerOutput& out, int& budget) {
  XI_CHECK(r->num_tokens() - r->num_computed_tokens >= 1);
  int n = std::min(r->num_tokens() - r->num_computed_tokens, PromptLogitsCap(*r));
  if (n == 0) return true;  // its prompt logits wait for the next step
  if (n > budget) {
    // Only a chunked prefill (or a prompt-logits request's, chunked whatever the config) can be
    // longer than one token for a running request.
    XI_CHECK(config_.enable_chunked_prefill || r->prompt_logits);
    n = budget;
  }
  while (true) {
    std::optional<std::vector<BlockId>> blocks =
        kv_.AllocateSlots(r->id, r->num_computed_tokens, n);
    if (blocks) {
      AppendScheduled(r, n, std::move(*blocks), /*newly_admitted=*/false, out);
      budget -= n;
      return true;
    }
    Request* victim = running_.back();
    Preempt(victim, out, budget);
    if (victim == r) return false;
  }
}

void Scheduler::Preempt(Request* victim, SchedulerOutput& out, int& budget) {
  // A victim already scheduled in this step (a decode, when a prefill chunk needs its blocks)
  // is taken out of the step again.
  auto it = std::find_if(out.scheduled.begin(), out.scheduled.end(),
                         [&](const ScheduledSequence& s) { return s.request_id == victim->id; });
  if (it != out.scheduled.end()) {
    budget += it->num_new_tokens;
    prompt_logits_left_ += it->num_prompt_logits;
    out.scheduled.erase(it);
  }
  kv_.Free(victim->id);
  RemoveRunning(victim);
  victim->status = RequestStatus::kPreempted;
  victim->num_computed_tokens = 0;
  ++victim->num_preemptions;
  ++num_preemptions_;
  waiting_.insert(victim);
  out.preempted_request_ids.push_back(victim->id);
}

void Scheduler::AdmitWaiting(SchedulerOutput& out, int& budget) {
  // The adapters of the running requests, for max_loras.
  std::set<int32_t> loras;
  if (config_.max_loras > 0)
    for (const Request* r : running_)
      if (r->lora_id != 0) loras.insert(r->lora_id);
  for (auto it = waiting_.begin(); it != waiting_.end() && budget > 0 &&
                                   static_cast<int>(running_.size()) < config_.max_num_seqs;) {
    Request* r = *it;
    if (config_.max_loras > 0 && r->lora_id != 0 && !loras.count(r->lora_id) &&
        static_cast<int>(loras.size()) >= config_.max_loras) {
      ++it;  // passed over, as vLLM's scheduler skips it, until an adapter's requests finish
      continue;
    }
    // Cached positions are not computed, so they would have no logits.
    PrefixHit hit =
        r->prompt_logits ? PrefixHit{} : kv_.GetComputedBlocks(r->token_ids, r->extra_key);
    int n = std::min(r->num_tokens() - hit.num_tokens, PromptLogitsCap(*r));
    if (n == 0) break;
    if (n > budget) {
      if (!config_.enable_chunked_prefill) break;
      n = budget;
    }
    std::optional<std::vector<BlockId>> blocks = kv_.AllocateSlots(r->id, hit.num_tokens, n, &hit);
    if (!blocks) break;
    it = waiting_.erase(it);
    if (r->lora_id != 0) loras.insert(r->lora_id);
    r->status = RequestStatus::kRunning;
    r->num_computed_tokens = hit.num_tokens;
    if (r->num_cached_tokens < 0) r->num_cached_tokens = hit.num_tokens;
    InsertRunning(r);
    AppendScheduled(r, n, std::move(*blocks), /*newly_admitted=*/true, out);
    budget -= n;
  }
}

int Scheduler::PromptLogitsCap(const Request& r) const {
  if (!r.prompt_logits || r.num_computed_tokens >= r.num_prompt_tokens - 1)
    return std::numeric_limits<int>::max();
  return prompt_logits_left_;
}

void Scheduler::AddDrafts(SchedulerOutput& out, int& budget) {
  if (config_.speculative_disable_by_batch_size > 0 &&
      num_running() > config_.speculative_disable_by_batch_size)
    return;
  std::vector<TokenId> drafts;
  for (ScheduledSequence& s : out.scheduled) {
    if (budget == 0) break;
    if (s.is_prefill) continue;  // a plain decode: one generated token, all before it computed
    Request* r = requests_.at(s.request_id).get();
    // Each kept draft, and the token sampled after them, is an output token.
    const int room = std::min({config_.num_speculative_tokens, budget,
                               r->max_tokens - r->num_output_tokens() - 1,
                               config_.max_model_len - r->num_tokens() - 1});
    if (room <= 0) continue;
    ProposeNgramDrafts(r->token_ids, config_.prompt_lookup_min, config_.prompt_lookup_max, room,
                       drafts);
    if (drafts.empty()) continue;
    const int k = static_cast<int>(drafts.size());
    std::optional<std::vector<BlockId>> blocks =
        kv_.AllocateSlots(r->id, r->num_computed_tokens, s.num_new_tokens + k);
    if (!blocks) continue;  // drafts are not worth a preemption
    s.new_block_ids.insert(s.new_block_ids.end(), blocks->begin(), blocks->end());
    s.block_table = kv_.block_table(r->id);
    s.num_new_tokens += k;
    s.token_ids.insert(s.token_ids.end(), drafts.begin(), drafts.end());
    s.spec_token_ids = drafts;
    budget -= k;
  }
}

void Scheduler::AppendScheduled(Request* r, int num_new_tokens, std::vector<BlockId> new_blocks,
                                bool newly_admitted, SchedulerOutput& out) {
  ScheduledSequence s;
  s.request_id = r->id;
  s.start_position = r->num_computed_tokens;
  s.num_new_tokens = num_new_tokens;
  const auto first = r->token_ids.begin() + s.start_position;
  s.token_ids.assign(first, first + num_new_tokens);
  const int end = s.start_position + num_new_tokens;
  s.needs_sampling = end == r->num_tokens();
  if (r->prompt_logits) {
    s.num_prompt_logits = std::max(0, std::min(end, r->num_prompt_tokens - 1) - s.start_position);
    prompt_logits_left_ -= s.num_prompt_logits;
  }
  s.is_prefill =
      !(num_new_tokens == 1 && s.needs_sampling && s.start_position >= r->num_prompt_tokens);
  s.newly_admitted = newly_admitted;
  s.lora_id = r->lora_id;
  s.block_table = kv_.block_table(r->id);
  s.new_block_ids = std::move(new_blocks);
  out.scheduled.push_back(std::move(s));
}

std::vector<FinishedRequest> Scheduler::Update(const SchedulerOutput& output,
                                               std::span<const SequenceResult> results) {
  if (output.scheduled.empty()) return {};
  XI_CHECK_MSG(output.step_id == pending_step_id_,
               "Update() must get the output of the latest Schedule()");
  XI_CHECK_MSG(results.size() == output.scheduled.size(),
               "Update() needs one SequenceResult per scheduled sequence");
  pending_step_id_ = 0;
  std::vector<FinishedRequest> finished;
  for (size_t i = 0; i < output.scheduled.size(); ++i) {
    const ScheduledSequence& s = output.scheduled[i];
    const SequenceResult& res = results[i];
    auto it = requests_.find(s.request_id);
    // Aborted while the step ran (possibly even re-added under the same id): ignore.
    if (it == requests_.end() || it->second->status != RequestStatus::kRunning) continue;
    XI_CHECK_MSG(res.sampled_token.has_value() == s.needs_sampling,
                 "a sampled token must be given exactly for sequences that need sampling");
    XI_CHECK_MSG(!res.stop || s.needs_sampling, "stop set for a sequence that did not sample");
    Request* r = it->second.get();
    XI_CHECK(r->num_computed_tokens == s.start_position);
    const int k = static_cast<int>(s.spec_token_ids.size());
    XI_CHECK_MSG(res.num_accepted_drafts >= 0 && res.num_accepted_drafts <= k,
                 "num_accepted_drafts must be within the sequence's draft tokens");
    // The rejected drafts' positions were computed but hold K/V of tokens that are not the
    // request's: they are computed again (their slots overwritten) next step.
    const int accepted = res.num_accepted_drafts;
    r->num_computed_tokens += s.num_new_tokens - (k - accepted);
    r->token_ids.insert(r->token_ids.end(), s.spec_token_ids.begin(),
                        s.spec_token_ids.begin() + accepted);
    kv_.CacheFullBlocks(r->id, r->token_ids, r->num_computed_tokens);
    if (!s.needs_sampling) continue;
    r->token_ids.push_back(*res.sampled_token);
    RequestStatus status = RequestStatus::kRunning;
    if (res.stop) {
      status = RequestStatus::kFinishedStopped;
    } else if (r->num_output_tokens() >= r->max_tokens ||
               r->num_tokens() >= config_.max_model_len) {
      status = RequestStatus::kFinishedLength;
    }
    if (status == RequestStatus::kRunning) continue;
    finished.push_back(FinishedRequest{r->id, status, r->num_prompt_tokens, r->num_output_tokens(),
                                       std::max(0, r->num_cached_tokens), r->num_preemptions});
    FinishAndErase(r, status);
  }
  return finished;
}

void Scheduler::DiscardStep(const SchedulerOutput& output) {
  if (output.scheduled.empty()) return;
  XI_CHECK_MSG(output.step_id == pending_step_id_,
               "DiscardStep() must get the output of the latest Schedule()");
  pending_step_id_ = 0;
}

void Scheduler::InsertRunning(Request* r) {
  auto pos = std::upper_bound(running_.begin(), running_.end(), r, waiting_.key_comp());
  running_.insert(pos, r);
}

void Scheduler::RemoveRunning(Request* r) {
  auto it = std::find(running_.begin(), running_.end(), r);
  XI_CHECK(it != running_.end());
  running_.erase(it);
}

void Scheduler::FinishAndErase(Request* r, RequestStatus status) {
  XI_CHECK(IsFinished(status));
  if (r->status == RequestStatus::kRunning) {
    kv_.Free(r->id);
    RemoveRunning(r);
  } else {
    XI_CHECK(waiting_.erase(r) == 1);
  }
  r->status = status;
  finished_since_last_step_.push_back(r->id);
  requests_.erase(r->id);  // destroys *r
}

SchedulerStats Scheduler::stats() const {
  SchedulerStats s;
  s.num_running = num_running();
  s.num_waiting = num_waiting();
  s.num_preemptions = num_preemptions_;
  s.prefix_cache_queries = kv_.prefix_cache_queries();
  s.prefix_cache_hits = kv_.prefix_cache_hits();
  s.kv_cache_usage = kv_.usage();
  s.num_free_blocks = kv_.num_free_blocks();
  s.num_blocks = kv_.num_blocks();
  if (!had_lora_requests_) return s;  // the engine reads stats every step: skip the scans
  std::set<int32_t> running, waiting;
  for (const Request* r : running_)
    if (r->lora_id != 0) running.insert(r->lora_id);
  for (const Request* r : waiting_)
    if (r->lora_id != 0) waiting.insert(r->lora_id);
  s.running_loras.assign(running.begin(), running.end());
  s.waiting_loras.assign(waiting.begin(), waiting.end());
  return s;
}

const Request* Scheduler::GetRequest(const RequestId& id) const {
  auto it = requests_.find(id);
  return it == requests_.end() ? nullptr : it->second.get();
}

Status Scheduler::CheckInvariants() const {
  XI_RETURN_IF_ERROR(kv_.CheckInvariants());
  if (static_cast<int>(running_.size()) > config_.max_num_seqs) {
    return Internal("{} running > max_num_seqs {}", running_.size(), config_.max_num_seqs);
  }
  if (requests_.size() != running_.size() + waiting_.size()) {
    return Internal("{} requests but {} running + {} waiting", requests_.size(), running_.size(),
                    waiting_.size());
  }
  if (kv_.num_requests() != static_cast<int>(running_.size())) {
    return Internal("{} requests hold blocks but {} are running", kv_.num_requests(),
                    running_.size());
  }
  if (!std::is_sorted(running_.begin(), running_.end(), waiting_.key_comp())) {
    return Internal("running list is out of order");
  }
  for (const Request* r : running_) {
    if (r->status != RequestStatus::kRunning) {
      return Internal("request {} in running list is {}", r->id, RequestStatusName(r->status));
    }
    const int blocks = static_cast<int>(kv_.block_table(r->id).size());
    if (blocks < CeilDiv(r->num_computed_tokens, config_.block_size)) {
      return Internal("request {} computed {} tokens but holds {} blocks", r->id,
                      r->num_computed_tokens, blocks);
    }
    if (r->num_computed_tokens >= r->num_tokens()) {
      return Internal("request {} has nothing left to compute", r->id);
    }
  }
  for (const Request* r : waiting_) {
    if (r->status != RequestStatus::kWaiting && r->status != RequestStatus::kPreempted) {
      return Internal("request {} in waiting queue is {}", r->id, RequestStatusName(r->status));
    }
    if (kv_.HasBlocks(r->id) || r->num_computed_tokens != 0) {
      return Internal("waiting request {} holds blocks or computed tokens", r->id);
    }
  }
  for (const auto& [id, r] : requests_) {
    if (r->num_tokens() > config_.max_model_len || r->num_output_tokens() > r->max_tokens ||
        r->num_output_tokens() < 0) {
      return Internal("request {} has {} tokens ({} output)", id, r->num_tokens(),
                      r->num_output_tokens());
    }
  }
  return Status::Ok();
}

}  // namespace xinfer
