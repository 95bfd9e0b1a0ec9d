// Preemption (recompute) and abort behaviour of the scheduler.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "sched/scheduler.h"
#include "sched/scheduler_test_util.h"

namespace xinfer {
namespace {

using ::testing::ElementsAre;
using testing::MakeScheduler;
using testing::Range;
using testing::Req;
using testing::SmallConfig;
using testing::Step;
using testing::StepResult;

SchedulerConfig TinyPool(int num_blocks, SchedulingPolicy policy = SchedulingPolicy::kFcfs) {
  SchedulerConfig c = SmallConfig();
  c.num_blocks = num_blocks;
  c.policy = policy;
  return c;
}

TEST(SchedulerPreemptionTest, LatestArrivalIsPreemptedAndRecomputedLater) {
  auto s = MakeScheduler(TinyPool(6));
  for (int k = 0; k < 3; ++k) {
    ASSERT_TRUE(s->AddRequest(Req(std::string(1, 'a' + k), Range(4, 100 * k), 8)).ok());
  }
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(Step(*s).out.preempted_request_ids.empty());
  // Each holds 2 blocks with positions 0..7 computed; position 8 needs a third block.
  StepResult r = Step(*s);
  EXPECT_THAT(r.out.preempted_request_ids, ElementsAre("c"));
  ASSERT_EQ(r.out.scheduled.size(), 2u);
  EXPECT_EQ(r.out.scheduled[0].request_id, "a");
  EXPECT_EQ(r.out.scheduled[1].request_id, "b");
  const Request* c = s->GetRequest("c");
  EXPECT_EQ(c->status, RequestStatus::kPreempted);
  EXPECT_EQ(c->num_computed_tokens, 0);
  EXPECT_EQ(c->num_output_tokens(), 5);  // kept: recompute, not restart
  EXPECT_FALSE(s->kv_cache().HasBlocks("c"));
  EXPECT_EQ(s->stats().num_preemptions, 1);
  EXPECT_EQ(s->stats().num_waiting, 1);
  EXPECT_EQ(s->stats().num_running, 2);

  Step(*s);
  r = Step(*s);  // a and b reach max_tokens 8
  EXPECT_EQ(r.finished.size(), 2u);
  r = Step(*s);  // c is recomputed: prompt + its 5 outputs in one prefill
  const ScheduledSequence* seq = r.Find("c");
  ASSERT_NE(seq, nullptr);
  EXPECT_TRUE(seq->newly_admitted);
  EXPECT_TRUE(seq->is_prefill);
  EXPECT_TRUE(seq->needs_sampling);
  EXPECT_EQ(seq->start_position + seq->num_new_tokens, 9);
  std::vector<TokenId> expected = Range(4, 200);
  for (int pos = 4; pos <= 8; ++pos) expected.push_back(1000 + pos);
  EXPECT_EQ(seq->token_ids,
            std::vector<TokenId>(expected.begin() + seq->start_position, expected.end()));
  std::vector<FinishedRequest> finished;
  while (s->HasUnfinishedRequests()) {
    for (const FinishedRequest& f : Step(*s).finished) finished.push_back(f);
  }
  ASSERT_EQ(finished.size(), 1u);
  EXPECT_EQ(finished[0].request_id, "c");
  EXPECT_EQ(finished[0].num_output_tokens, 8);
  EXPECT_EQ(finished[0].num_preemptions, 1);
  EXPECT_EQ(s->kv_cache().num_free_blocks(), 6);
}

TEST(SchedulerPreemptionTest, PriorityPolicyPreemptsTheLowestPriority) {
  auto s = MakeScheduler(TinyPool(6, SchedulingPolicy::kPriority));
  ASSERT_TRUE(s->AddRequest(Req("a", Range(4, 0), 8, /*priority=*/0)).ok());
  ASSERT_TRUE(s->AddRequest(Req("b", Range(4, 100), 8, /*priority=*/2)).ok());
  ASSERT_TRUE(s->AddRequest(Req("c", Range(4, 200), 8, /*priority=*/1)).ok());
  for (int i = 0; i < 5; ++i) Step(*s);
  StepResult r = Step(*s);
  EXPECT_THAT(r.out.preempted_request_ids, ElementsAre("b"));  // not "c", the latest arrival
  EXPECT_EQ(r.out.scheduled[0].request_id, "a");
  EXPECT_EQ(r.out.scheduled[1].request_id, "c");
}

TEST(SchedulerPreemptionTest, LowestRequestPreemptsItself) {
  auto s = MakeScheduler(TinyPool(3));
  ASSERT_TRUE(s->AddRequest(Req("a", Range(5, 0), 3)).ok());    // 2 blocks, room up to pos 7
  ASSERT_TRUE(s->AddRequest(Req("b", Range(3, 100), 4)).ok());  // 1 block
  Step(*s);
  Step(*s);
  StepResult r = Step(*s);  // b needs a block for position 4; it is the last in order
  EXPECT_THAT(r.out.preempted_request_ids, ElementsAre("b"));
  ASSERT_EQ(r.out.scheduled.size(), 1u);
  EXPECT_EQ(r.out.scheduled[0].request_id, "a");
  ASSERT_EQ(r.finished.size(), 1u);  // a done
  while (s->HasUnfinishedRequests()) Step(*s);
  EXPECT_EQ(s->stats().num_preemptions, 1);
}

TEST(SchedulerPreemptionTest, AlreadyScheduledDecodeIsUnscheduledForAHigherPriorityChunk) {
  SchedulerConfig c = TinyPool(5, SchedulingPolicy::kPriority);
  c.max_num_batched_tokens = 8;
  c.max_num_seqs = 2;
  auto s = MakeScheduler(c);
  ASSERT_TRUE(s->AddRequest(Req("b", Range(3, 100), 6, /*priority=*/5)).ok());
  Step(*s);
  ASSERT_TRUE(s->AddRequest(Req("a", Range(16, 0), 1, /*priority=*/0)).ok());
  StepResult r = Step(*s);  // b decodes, a gets a 7-token chunk
  ASSERT_NE(r.Find("a"), nullptr);
  EXPECT_EQ(r.Find("a")->num_new_tokens, 7);
  r = Step(*s);  // b's decode was scheduled first, then a's chunk needed its blocks
  EXPECT_THAT(r.out.preempted_request_ids, ElementsAre("b"));
  ASSERT_EQ(r.out.scheduled.size(), 1u);
  EXPECT_EQ(r.out.scheduled[0].request_id, "a");
  EXPECT_EQ(r.out.total_num_tokens, 7);
  // b's first block (3 prompt tokens + 1 output, computed) survived as a cached block:
  // re-admission (once a finished) starts from the prefix hit.
  r = Step(*s);
  ASSERT_EQ(r.finished.size(), 1u);
  EXPECT_EQ(r.Find("b"), nullptr);
  r = Step(*s);
  const ScheduledSequence* b = r.Find("b");
  ASSERT_NE(b, nullptr);
  EXPECT_TRUE(b->newly_admitted);
  EXPECT_EQ(b->start_position, 4);
  EXPECT_EQ(b->num_new_tokens, 1);
  EXPECT_EQ(s->GetRequest("b")->num_cached_tokens, 0);  // the first admission's hit
  while (s->HasUnfinishedRequests()) Step(*s);
  EXPECT_EQ(s->kv_cache().num_free_blocks(), 5);
}

TEST(SchedulerAbortTest, AbortPreemptedAndDecodingRequests) {
  auto s = MakeScheduler(TinyPool(4));
  ASSERT_TRUE(s->AddRequest(Req("decoding", Range(4, 0), 8)).ok());
  ASSERT_TRUE(s->AddRequest(Req("victim", Range(4, 100), 8)).ok());
  for (int i = 0; i < 6; ++i) Step(*s);  // both need a third block at position 8
  ASSERT_EQ(s->GetRequest("victim")->status, RequestStatus::kPreempted);
  ASSERT_EQ(s->GetRequest("decoding")->status, RequestStatus::kRunning);
  EXPECT_TRUE(s->Abort("victim").ok());
  EXPECT_EQ(s->kv_cache().num_free_blocks(), 1);
  EXPECT_TRUE(s->Abort("decoding").ok());
  EXPECT_EQ(s->kv_cache().num_free_blocks(), 4);
  EXPECT_TRUE(s->CheckInvariants().ok());
  EXPECT_FALSE(s->HasUnfinishedRequests());
  EXPECT_EQ(s->Abort("decoding").code(), StatusCode::kNotFound);
  EXPECT_EQ(s->Abort("never").message(), "no unfinished request with id 'never'");
  EXPECT_THAT(Step(*s).out.finished_request_ids, ElementsAre("victim", "decoding"));
}

TEST(SchedulerAbortTest, AbortWaitingAndPrefillingRequests) {
  SchedulerConfig c = SmallConfig();
  c.max_num_batched_tokens = 8;
  c.max_num_seqs = 1;
  auto s = MakeScheduler(c);
  ASSERT_TRUE(s->AddRequest(Req("prefilling", Range(20), 4)).ok());
  ASSERT_TRUE(s->AddRequest(Req("waiting", Range(5), 4)).ok());
  StepResult r = Step(*s);
  EXPECT_EQ(r.out.scheduled[0].num_new_tokens, 8);
  EXPECT_FALSE(r.out.scheduled[0].needs_sampling);
  ASSERT_EQ(s->GetRequest("prefilling")->num_computed_tokens, 8);
  ASSERT_EQ(s->GetRequest("waiting")->status, RequestStatus::kWaiting);
  EXPECT_EQ(s->kv_cache().num_free_blocks(), 62);
  EXPECT_TRUE(s->Abort("prefilling").ok());
  EXPECT_EQ(s->kv_cache().num_free_blocks(), 64);
  EXPECT_TRUE(s->Abort("waiting").ok());
  EXPECT_FALSE(s->HasUnfinishedRequests());
  EXPECT_EQ(s->stats().num_waiting, 0);
  EXPECT_THAT(Step(*s).out.finished_request_ids, ElementsAre("prefilling", "waiting"));
}

TEST(SchedulerAbortTest, AbortDuringAStepIgnoresItsResult) {
  auto s = MakeScheduler(SmallConfig());
  ASSERT_TRUE(s->AddRequest(Req("a", Range(6), 4)).ok());
  ASSERT_TRUE(s->AddRequest(Req("b", Range(6, 50), 4)).ok());
  SchedulerOutput out = s->Schedule();
  ASSERT_EQ(out.scheduled.size(), 2u);
  EXPECT_TRUE(s->Abort("a").ok());
  // The id may even be reused before the step's results arrive.
  ASSERT_TRUE(s->AddRequest(Req("a", Range(3, 90), 4)).ok());
  std::vector<SequenceResult> results(2);
  results[0].sampled_token = 7;
  results[1].sampled_token = 8;
  EXPECT_TRUE(s->Update(out, results).empty());
  EXPECT_TRUE(s->CheckInvariants().ok());
  EXPECT_EQ(s->GetRequest("a")->status, RequestStatus::kWaiting);
  EXPECT_EQ(s->GetRequest("a")->num_tokens(), 3);
  EXPECT_THAT(s->GetRequest("b")->output_token_ids(), ElementsAre(8));
}

TEST(SchedulerAbortTest, FailedStepIsDiscardedThenRequestsAreAborted) {
  auto s = MakeScheduler(SmallConfig());
  ASSERT_TRUE(s->AddRequest(Req("a", Range(20), 4)).ok());
  ASSERT_TRUE(s->AddRequest(Req("long", Range(100, 30), 4)).ok());  // a 44-token first chunk
  SchedulerOutput out = s->Schedule();
  ASSERT_EQ(out.scheduled.size(), 2u);
  s->DiscardStep(out);  // e.g. the runner returned an error: nothing advances or gets cached
  EXPECT_EQ(s->GetRequest("a")->num_computed_tokens, 0);
  EXPECT_EQ(s->GetRequest("long")->num_computed_tokens, 0);
  EXPECT_EQ(s->kv_cache().pool().num_cached_blocks(), 0);
  EXPECT_TRUE(s->CheckInvariants().ok());
  // Still running: the same work is scheduled again.
  StepResult r = Step(*s);
  EXPECT_EQ(r.Find("a")->start_position, 0);
  EXPECT_EQ(r.Find("a")->num_new_tokens, 20);
  // The engine may also abort first and then Update with empty results: they are ignored.
  out = s->Schedule();
  ASSERT_TRUE(s->Abort("a").ok());
  ASSERT_TRUE(s->Abort("long").ok());
  EXPECT_TRUE(s->Update(out, std::vector<SequenceResult>(out.scheduled.size())).empty());
  EXPECT_EQ(s->kv_cache().num_free_blocks(), 64);
  EXPECT_TRUE(s->CheckInvariants().ok());
}

TEST(SchedulerDeathTest, ScheduleTwiceWithoutUpdateIsABug) {
  auto s = MakeScheduler(SmallConfig());
  ASSERT_TRUE(s->AddRequest(Req("a", Range(6), 4)).ok());
  (void)s->Schedule();
  EXPECT_DEATH((void)s->Schedule(), "before Update");
}

TEST(SchedulerDeathTest, MissingSampledTokenIsABug) {
  auto s = MakeScheduler(SmallConfig());
  ASSERT_TRUE(s->AddRequest(Req("a", Range(6), 4)).ok());
  SchedulerOutput out = s->Schedule();
  EXPECT_DEATH((void)s->Update(out, std::vector<SequenceResult>(1)), "sampled token");
}

}  // namespace
}  // namespace xinfer
