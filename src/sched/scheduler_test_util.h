// Test helpers for the scheduler tests: a config builder and a fake engine step.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "sched/scheduler.h"

namespace xinfer::testing {

inline SchedulerConfig SmallConfig() {
  SchedulerConfig c;
  c.max_num_seqs = 8;
  c.max_num_batched_tokens = 64;
  c.max_model_len = 256;
  c.block_size = 4;
  c.num_blocks = 64;
  c.enable_chunked_prefill = true;
  c.enable_prefix_caching = true;
  return c;
}

inline std::unique_ptr<Scheduler> MakeScheduler(const SchedulerConfig& config) {
  auto s = Scheduler::Create(config);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return std::move(s).value();
}

inline std::vector<TokenId> Range(int n, int start = 0) {
  std::vector<TokenId> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), start);
  return t;
}

inline NewRequest Req(RequestId id, std::vector<TokenId> prompt, int max_tokens, int priority = 0) {
  NewRequest r;
  r.id = std::move(id);
  r.prompt_token_ids = std::move(prompt);
  r.max_tokens = max_tokens;
  r.priority = priority;
  return r;
}

struct StepResult {
  SchedulerOutput out;
  std::vector<FinishedRequest> finished;
  const ScheduledSequence* Find(const RequestId& id) const {
    for (const ScheduledSequence& s : out.scheduled) {
      if (s.request_id == id) return &s;
    }
    return nullptr;
  }
};

// Schedules one step, "samples" token 1000 + position for every sequence that needs it (stop
// for ids in `stop`), applies the results and checks the scheduler's invariants.
inline StepResult Step(Scheduler& s, const std::set<RequestId>& stop = {}) {
  StepResult r;
  r.out = s.Schedule();
  std::vector<SequenceResult> results(r.out.scheduled.size());
  for (size_t i = 0; i < results.size(); ++i) {
    const ScheduledSequence& seq = r.out.scheduled[i];
    if (!seq.needs_sampling) continue;
    results[i].sampled_token = 1000 + seq.start_position + seq.num_new_tokens;
    results[i].stop = stop.contains(seq.request_id);
  }
  r.finished = s.Update(r.out, results);
  const Status inv = s.CheckInvariants();
  EXPECT_TRUE(inv.ok()) << inv.ToString();
  return r;
}

}  // namespace xinfer::testing
