// Speculative decoding in the scheduler (SchedulerConfig::num_speculative_tokens): decodes run
// their prompt-lookup drafts, kept drafts advance the request by several tokens in one step,
// rejected ones are computed again, and drafts never exceed max_tokens, the step's budget beyond
// the decodes, or the KV cache (no preemption for them).
#include <fmt/core.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <map>

#include "sched/scheduler_test_util.h"

namespace xinfer {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using testing::MakeScheduler;
using testing::Req;
using testing::SmallConfig;

SchedulerConfig SpecConfig(int k) {
  SchedulerConfig c = SmallConfig();
  c.num_speculative_tokens = k;
  c.prompt_lookup_min = 1;
  c.prompt_lookup_max = 3;
  return c;
}

// The token at `position` of each request's "true" sequence (what its model would generate).
using Truth = std::function<TokenId(const RequestId&, int position)>;

// A periodic sequence 1, 2, ..., period, 1, 2, ...
Truth Periodic(int period) {
  return [period](const RequestId&, int position) { return 1 + position % period; };
}

// One step with a fake engine that keeps each draft equal to the truth and samples the truth's
// next token; checks the invariants. Returns the schedule.
SchedulerOutput SpecStep(Scheduler& s, const Truth& truth,
                         std::vector<FinishedRequest>* finished = nullptr) {
  SchedulerOutput out = s.Schedule();
  std::vector<SequenceResult> results(out.scheduled.size());
  for (size_t i = 0; i < results.size(); ++i) {
    const ScheduledSequence& seq = out.scheduled[i];
    if (!seq.needs_sampling) continue;
    const int k = static_cast<int>(seq.spec_token_ids.size());
    const int next = seq.start_position + seq.num_new_tokens - k;  // the first sampled position
    int accepted = 0;
    while (accepted < k && seq.spec_token_ids[accepted] == truth(seq.request_id, next + accepted))
      ++accepted;
    results[i].num_accepted_drafts = accepted;
    results[i].sampled_token = truth(seq.request_id, next + accepted);
  }
  std::vector<FinishedRequest> f = s.Update(out, results);
  if (finished) *finished = std::move(f);
  const Status inv = s.CheckInvariants();
  EXPECT_TRUE(inv.ok()) << inv.ToString();
  return out;
}

std::vector<TokenId> TruthPrefix(const Truth& truth, const RequestId& id, int n) {
  std::vector<TokenId> t;
  for (int p = 0; p < n; ++p) t.push_back(truth(id, p));
  return t;
}

TEST(SchedulerSpecTest, KeptDraftsAdvanceSeveralTokensAStep) {
  auto s = MakeScheduler(SpecConfig(3));
  const Truth truth = Periodic(4);
  ASSERT_TRUE(s->AddRequest(Req("a", TruthPrefix(truth, "a", 12), 20)).ok());
  SchedulerOutput first = SpecStep(*s, truth);  // the prompt, one token sampled
  ASSERT_EQ(first.scheduled.size(), 1u);
  EXPECT_THAT(first.scheduled[0].spec_token_ids, IsEmpty());
  // Each decode: the last token and three drafts, all kept: four tokens a step.
  SchedulerOutput second = SpecStep(*s, truth);
  const ScheduledSequence& d = second.scheduled[0];
  EXPECT_EQ(d.start_position, 12);
  EXPECT_EQ(d.num_new_tokens, 4);
  EXPECT_THAT(d.spec_token_ids, ElementsAre(2, 3, 4));
  EXPECT_THAT(d.token_ids, ElementsAre(1, 2, 3, 4));
  EXPECT_FALSE(d.is_prefill);
  EXPECT_TRUE(d.needs_sampling);
  EXPECT_EQ(second.total_num_tokens, 4);
  const Request* r = s->GetRequest("a");
  EXPECT_EQ(r->num_output_tokens(), 5);
  EXPECT_EQ(r->num_computed_tokens, 16);
  int steps = 2;
  std::vector<FinishedRequest> finished;
  while (s->HasUnfinishedRequests()) {
    SchedulerOutput out = SpecStep(*s, truth, &finished);
    for (const ScheduledSequence& q : out.scheduled) {
      // Drafts stop where max_tokens would be passed: each kept one is an output token.
      const Request* req = s->GetRequest("a");
      if (req) {
        EXPECT_LE(req->num_output_tokens(), 20);
      }
      EXPECT_LE(static_cast<int>(q.spec_token_ids.size()), 3);
    }
    ++steps;
  }
  ASSERT_EQ(finished.size(), 1u);
  EXPECT_EQ(finished[0].status, RequestStatus::kFinishedLength);
  EXPECT_EQ(finished[0].num_output_tokens, 20);
  EXPECT_EQ(steps, 6);  // 1 + 4 + 4 + 4 + 4 + 3 output tokens
}

TEST(SchedulerSpecTest, RejectedDraftsAreComputedAgainAndNeverCached) {
  // The truth breaks the pattern: every draft is rejected, the request advances one token a
  // step, and the rejected positions run again with the true tokens.
  SchedulerConfig c = SpecConfig(2);
  auto s = MakeScheduler(c);
  const Truth truth = [](const RequestId&, int p) { return p < 8 ? 1 + p % 2 : 100 + p; };
  ASSERT_TRUE(s->AddRequest(Req("a", TruthPrefix(truth, "a", 8), 6)).ok());
  SpecStep(*s, truth);
  SchedulerOutput out = SpecStep(*s, truth);
  const ScheduledSequence& d = out.scheduled[0];
  EXPECT_EQ(d.start_position, 8);
  // "... 1 2 | 108": the last token 108 never occurred before: no drafts.
  EXPECT_THAT(d.spec_token_ids, IsEmpty());
  // A prompt that invites drafts the truth refuses.
  auto s2 = MakeScheduler(c);
  const Truth truth2 = [](const RequestId&, int p) { return p < 9 ? 1 + p % 2 : 50 + p; };
  ASSERT_TRUE(s2->AddRequest(Req("b", TruthPrefix(truth2, "b", 9), 6)).ok());
  SpecStep(*s2, truth2);  // prompt 1 2 1 2 1 2 1 2 1, samples 59
  ASSERT_TRUE(s2->AddRequest(Req("c", TruthPrefix(truth2, "c", 9), 1)).ok());
  std::vector<TokenId> history = TruthPrefix(truth2, "b", 10);
  for (int step = 0; step < 5 && s2->HasUnfinishedRequests(); ++step) {
    SchedulerOutput o = SpecStep(*s2, truth2);
    const Request* b = s2->GetRequest("b");
    if (!b) break;
    EXPECT_EQ(b->num_computed_tokens, b->num_tokens() - 1);
    history = b->token_ids;
  }
  // The request holds exactly the truth: no rejected draft entered its tokens.
  EXPECT_EQ(history, TruthPrefix(truth2, "b", static_cast<int>(history.size())));
  // And the prefix cache holds the truth only: a new request with the true tokens hits its
  // full blocks.
  std::vector<FinishedRequest> finished;
  while (s2->HasUnfinishedRequests()) SpecStep(*s2, truth2, &finished);
  const std::vector<TokenId> prompt = TruthPrefix(truth2, "b", 13);
  ASSERT_TRUE(s2->AddRequest(Req("d", prompt, 1)).ok());
  SchedulerOutput o = SpecStep(*s2, truth2);
  EXPECT_EQ(o.scheduled[0].start_position, 12);  // 3 full blocks of 4 cached
}

TEST(SchedulerSpecTest, DraftsWhenTheDraftIsRejectedPartway) {
  // Drafts 2 3 4 against a truth that agrees on the first only: one kept, then the truth's token.
  auto s = MakeScheduler(SpecConfig(3));
  std::map<int, TokenId> changed = {{14, 77}};
  const Truth truth = [&](const RequestId&, int p) {
    auto it = changed.find(p);
    return it != changed.end() ? it->second : 1 + p % 4;
  };
  ASSERT_TRUE(s->AddRequest(Req("a", TruthPrefix(truth, "a", 12), 10)).ok());
  SpecStep(*s, truth);
  SchedulerOutput out = SpecStep(*s, truth);
  EXPECT_THAT(out.scheduled[0].spec_token_ids, ElementsAre(2, 3, 4));
  const Request* r = s->GetRequest("a");
  EXPECT_THAT(r->output_token_ids(), ElementsAre(1, 2, 77));
  EXPECT_EQ(r->num_computed_tokens, 14);  // positions 12, 13 kept; 14, 15 run again
  SchedulerOutput next = SpecStep(*s, truth);
  EXPECT_EQ(next.scheduled[0].start_position, 14);
}

TEST(SchedulerSpecTest, DraftsOnlyTakeTheBudgetLeftBeyondTheDecodes) {
  SchedulerConfig c = SpecConfig(3);
  c.max_num_batched_tokens = 10;
  c.max_num_seqs = 8;
  auto s = MakeScheduler(c);
  const Truth truth = Periodic(2);
  for (int i = 0; i < 8; ++i)
    ASSERT_TRUE(s->AddRequest(Req(fmt::format("r{}", i), TruthPrefix(truth, "", 3), 40)).ok());
  // The prompts run in chunks, which drafts never delay: every step is full, and drafts only
  // take what the chunks leave. Then all eight decode, each with drafts to offer.
  SchedulerOutput out;
  for (int step = 0; step < 10; ++step) {
    out = SpecStep(*s, truth);
    EXPECT_EQ(out.total_num_tokens, 10);
    const bool prefills = std::any_of(out.scheduled.begin(), out.scheduled.end(),
                                      [](const ScheduledSequence& q) { return q.is_prefill; });
    if (!prefills) break;
    // A prompt chunk cut short by the budget means no budget was left for drafts.
    const bool cut = std::any_of(out.scheduled.begin(), out.scheduled.end(),
                                 [](const ScheduledSequence& q) { return !q.needs_sampling; });
    if (cut) {
      for (const ScheduledSequence& q : out.scheduled)
        EXPECT_THAT(q.spec_token_ids, IsEmpty()) << "step " << step;
    }
  }
  ASSERT_EQ(out.scheduled.size(), 8u);  // every decode runs
  size_t drafts = 0;
  for (const ScheduledSequence& q : out.scheduled) drafts += q.spec_token_ids.size();
  EXPECT_EQ(drafts, 2u);
  EXPECT_EQ(out.total_num_tokens, 10);
}

TEST(SchedulerSpecTest, NoDraftsAboveDisableByBatchSize) {
  SchedulerConfig c = SpecConfig(3);
  c.speculative_disable_by_batch_size = 2;
  auto s = MakeScheduler(c);
  const Truth truth = Periodic(2);
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(s->AddRequest(Req(fmt::format("r{}", i), TruthPrefix(truth, "", 6), 8)).ok());
  SpecStep(*s, truth);
  for (const ScheduledSequence& q : SpecStep(*s, truth).scheduled)
    EXPECT_THAT(q.spec_token_ids, IsEmpty());
  ASSERT_TRUE(s->Abort("r2").ok());
  size_t drafts = 0;
  for (const ScheduledSequence& q : SpecStep(*s, truth).scheduled)
    drafts += q.spec_token_ids.size();
  EXPECT_EQ(drafts, 6u);
}

TEST(SchedulerSpecTest, DraftsAreDroppedRatherThanPreemptingAnotherRequest) {
  SchedulerConfig c = SpecConfig(3);
  c.num_blocks = 3;
  auto s = MakeScheduler(c);
  const Truth truth = Periodic(2);
  // a: 7 prompt tokens (2 blocks, its next position still in the second); b: 3 (1 block).
  ASSERT_TRUE(s->AddRequest(Req("a", TruthPrefix(truth, "a", 7), 6)).ok());
  ASSERT_TRUE(s->AddRequest(Req("b", TruthPrefix(truth, "b", 3), 2)).ok());
  SpecStep(*s, truth);
  // a's drafts would need a third block, which b holds: a decodes without them.
  SchedulerOutput out = SpecStep(*s, truth);
  EXPECT_THAT(out.preempted_request_ids, IsEmpty());
  ASSERT_EQ(out.scheduled.size(), 2u);
  EXPECT_THAT(out.scheduled[0].spec_token_ids, IsEmpty());
  EXPECT_EQ(out.scheduled[1].request_id, "b");
}

TEST(SchedulerSpecTest, ConfigIsValidated) {
  SchedulerConfig c = SpecConfig(-1);
  EXPECT_EQ(c.Validate().message(), "num_speculative_tokens must be >= 0, got -1");
  c = SpecConfig(2);
  c.prompt_lookup_min = 4;
  EXPECT_EQ(c.Validate().message(),
            "prompt_lookup_min (4) must be >= 1 and <= prompt_lookup_max (3)");
  c = SpecConfig(2);
  c.speculative_disable_by_batch_size = -1;
  EXPECT_FALSE(c.Validate().ok());
}

}  // namespace
}  // namespace xinfer
