#include "sched/scheduler.h"

#include <fmt/core.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "sched/scheduler_test_util.h"

namespace xinfer {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::MakeScheduler;
using testing::Range;
using testing::Req;
using testing::SmallConfig;
using testing::Step;
using testing::StepResult;

TEST(SchedulerConfigTest, ValidateMessages) {
  EXPECT_TRUE(SmallConfig().Validate().ok());
  SchedulerConfig c = SmallConfig();
  c.num_blocks = 0;
  EXPECT_EQ(c.Validate().message(), "num_blocks must be >= 1, got 0");
  c = SmallConfig();
  c.max_num_seqs = 100;
  EXPECT_THAT(c.Validate().message(), HasSubstr("max_num_batched_tokens (64) must be >= "
                                                "max_num_seqs (100)"));
  c = SmallConfig();
  c.enable_chunked_prefill = false;
  EXPECT_THAT(c.Validate().message(),
              HasSubstr("without chunked prefill max_num_batched_tokens (64) must be >= "
                        "max_model_len (256)"));
  auto s = Scheduler::Create(c);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr("invalid scheduler config: without chunked"));
  EXPECT_EQ(*ParseSchedulingPolicy("priority"), SchedulingPolicy::kPriority);
  EXPECT_EQ(*ParseSchedulingPolicy("fcfs"), SchedulingPolicy::kFcfs);
  EXPECT_FALSE(ParseSchedulingPolicy("lifo").ok());
}

TEST(SchedulerTest, RejectsRequestsThatCanNeverRun) {
  SchedulerConfig c = SmallConfig();
  c.num_blocks = 10;  // 40 tokens
  auto s = MakeScheduler(c);
  Status st = s->AddRequest(Req("a", {}, 4));
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message(), "request 'a': the prompt is empty");
  st = s->AddRequest(Req("a", {1}, 0));
  EXPECT_EQ(st.message(), "request 'a': max_tokens must be >= 1, got 0");
  st = s->AddRequest(Req("a", Range(200), 57));
  EXPECT_EQ(st.code(), StatusCode::kOutOfRange);
  EXPECT_EQ(st.message(),
            "request 'a': prompt (200 tokens) + max_tokens (57) = 257 exceeds the maximum "
            "context length of 256 tokens");
  st = s->AddRequest(Req("a", Range(30), 11));  // 41 tokens, 40 need KV: exactly fits
  EXPECT_TRUE(st.ok()) << st.ToString();
  st = s->AddRequest(Req("b", Range(30), 12));
  EXPECT_EQ(st.code(), StatusCode::kOutOfRange);
  EXPECT_EQ(st.message(),
            "request 'b': prompt (30 tokens) + max_tokens (12) needs up to 11 KV cache blocks "
            "of 4 tokens but the whole cache has only 10 blocks (40 tokens); shorten the prompt "
            "or max_tokens");
  st = s->AddRequest(Req("a", {1}, 1));
  EXPECT_EQ(st.message(), "request id 'a' is already in use");
  EXPECT_EQ(s->AddRequest(Req("", {1}, 1)).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s->num_waiting(), 1);
  // The request that exactly fits runs to completion alone.
  int steps = 0;
  while (s->HasUnfinishedRequests() && steps < 100) Step(*s), ++steps;
  EXPECT_FALSE(s->HasUnfinishedRequests());
  EXPECT_EQ(s->stats().num_preemptions, 0);
}

// max_loras (vLLM's --max-loras): a waiting request whose adapter would be one too many is passed
// over — base requests and requests of a running adapter behind it are admitted — until the
// running adapter's requests finish; its sequences carry their lora_id to the runner.
TEST(SchedulerTest, MaxLorasPassesOverARequestOfOneAdapterTooMany) {
  SchedulerConfig c = SmallConfig();
  c.max_loras = 1;
  auto s = MakeScheduler(c);
  auto with_lora = [](RequestId id, int32_t lora, int max_tokens) {
    NewRequest r = Req(std::move(id), Range(4), max_tokens);
    r.lora_id = lora;
    r.extra_key = static_cast<uint64_t>(lora);
    return r;
  };
  ASSERT_TRUE(s->AddRequest(with_lora("a1", 1, 3)).ok());
  ASSERT_TRUE(s->AddRequest(with_lora("b1", 2, 2)).ok());
  ASSERT_TRUE(s->AddRequest(Req("base", Range(4), 2)).ok());
  ASSERT_TRUE(s->AddRequest(with_lora("a2", 1, 2)).ok());
  StepResult r = Step(*s);
  ASSERT_NE(r.Find("a1"), nullptr);
  EXPECT_EQ(r.Find("a1")->lora_id, 1);
  EXPECT_EQ(r.Find("b1"), nullptr);
  ASSERT_NE(r.Find("base"), nullptr);
  EXPECT_EQ(r.Find("base")->lora_id, 0);
  ASSERT_NE(r.Find("a2"), nullptr);
  EXPECT_EQ(s->num_waiting(), 1);
  // b1 waits while adapter 1 has requests running, then runs.
  int steps = 1;
  bool b1_ran = false;
  while (s->HasUnfinishedRequests() && steps < 20) {
    r = Step(*s);
    ++steps;
    if (const ScheduledSequence* b1 = r.Find("b1")) {
      b1_ran = true;
      EXPECT_EQ(b1->lora_id, 2);
      EXPECT_EQ(r.Find("a1"), nullptr);
      EXPECT_EQ(r.Find("a2"), nullptr);
    }
  }
  EXPECT_TRUE(b1_ran);
  EXPECT_FALSE(s->HasUnfinishedRequests());
  // Without the limit all four run at once.
  c.max_loras = 0;
  s = MakeScheduler(c);
  for (NewRequest n : {with_lora("a1", 1, 3), with_lora("b1", 2, 2), Req("base", Range(4), 2)})
    ASSERT_TRUE(s->AddRequest(std::move(n)).ok());
  EXPECT_EQ(Step(*s).out.scheduled.size(), 3u);
  c.max_loras = -1;
  EXPECT_EQ(c.Validate().message(), "max_loras must be >= 0, got -1");
}

TEST(SchedulerTest, SingleRequestLifecycle) {
  auto s = MakeScheduler(SmallConfig());
  ASSERT_TRUE(s->AddRequest(Req("a", Range(10, 1), 3)).ok());
  EXPECT_EQ(s->GetRequest("a")->status, RequestStatus::kWaiting);
  StepResult r = Step(*s);
  ASSERT_EQ(r.out.scheduled.size(), 1u);
  const ScheduledSequence& p = r.out.scheduled[0];
  EXPECT_EQ(p.request_id, "a");
  EXPECT_EQ(p.start_position, 0);
  EXPECT_EQ(p.num_new_tokens, 10);
  EXPECT_EQ(p.token_ids, Range(10, 1));
  EXPECT_TRUE(p.is_prefill);
  EXPECT_TRUE(p.needs_sampling);
  EXPECT_TRUE(p.newly_admitted);
  EXPECT_EQ(p.block_table.size(), 3u);
  EXPECT_EQ(p.new_block_ids, p.block_table);
  EXPECT_EQ(r.out.total_num_tokens, 10);
  const Request* req = s->GetRequest("a");
  EXPECT_EQ(req->status, RequestStatus::kRunning);
  EXPECT_EQ(req->num_computed_tokens, 10);
  EXPECT_THAT(req->output_token_ids(), ElementsAre(1010));

  r = Step(*s);  // decode of the token at position 10
  ASSERT_EQ(r.out.scheduled.size(), 1u);
  EXPECT_EQ(r.out.scheduled[0].start_position, 10);
  EXPECT_EQ(r.out.scheduled[0].token_ids, std::vector<TokenId>{1010});
  EXPECT_FALSE(r.out.scheduled[0].is_prefill);
  EXPECT_FALSE(r.out.scheduled[0].newly_admitted);
  EXPECT_TRUE(r.out.scheduled[0].new_block_ids.empty());
  EXPECT_TRUE(r.finished.empty());

  r = Step(*s);  // third output token: max_tokens reached
  ASSERT_EQ(r.finished.size(), 1u);
  EXPECT_EQ(r.finished[0].request_id, "a");
  EXPECT_EQ(r.finished[0].status, RequestStatus::kFinishedLength);
  EXPECT_EQ(r.finished[0].num_prompt_tokens, 10);
  EXPECT_EQ(r.finished[0].num_output_tokens, 3);
  EXPECT_EQ(s->GetRequest("a"), nullptr);
  EXPECT_FALSE(s->HasUnfinishedRequests());
  EXPECT_EQ(s->stats().kv_cache_usage, 0.0);
  EXPECT_EQ(s->kv_cache().num_free_blocks(), 64);

  r = Step(*s);  // the runner hears about the finished request once
  EXPECT_TRUE(r.out.empty());
  EXPECT_THAT(r.out.finished_request_ids, ElementsAre("a"));
  EXPECT_TRUE(Step(*s).out.finished_request_ids.empty());
}

TEST(SchedulerTest, EngineStopFinishesStopped) {
  auto s = MakeScheduler(SmallConfig());
  ASSERT_TRUE(s->AddRequest(Req("a", Range(5), 100)).ok());
  Step(*s);
  StepResult r = Step(*s, {"a"});
  ASSERT_EQ(r.finished.size(), 1u);
  EXPECT_EQ(r.finished[0].status, RequestStatus::kFinishedStopped);
  EXPECT_EQ(r.finished[0].num_output_tokens, 2);
}

TEST(SchedulerTest, ChunkedPrefillSplitsALongPromptAndMixesWithDecodes) {
  auto s = MakeScheduler(SmallConfig());  // budget 64
  ASSERT_TRUE(s->AddRequest(Req("short", Range(3), 50)).ok());
  Step(*s);
  ASSERT_TRUE(s->AddRequest(Req("long", Range(150, 500), 5)).ok());
  std::vector<int> chunks;
  for (int i = 0; i < 3; ++i) {
    StepResult r = Step(*s);
    ASSERT_EQ(r.out.scheduled.size(), 2u);
    EXPECT_EQ(r.out.scheduled[0].request_id, "short");  // decode first
    EXPECT_FALSE(r.out.scheduled[0].is_prefill);
    const ScheduledSequence& l = r.out.scheduled[1];
    EXPECT_EQ(l.request_id, "long");
    EXPECT_TRUE(l.is_prefill);
    EXPECT_EQ(l.newly_admitted, i == 0);
    EXPECT_EQ(l.needs_sampling, i == 2);
    EXPECT_EQ(l.start_position, i * 63);
    EXPECT_EQ(l.token_ids, Range(l.num_new_tokens, 500 + l.start_position));
    EXPECT_GE(l.block_table.size() * 4, static_cast<size_t>(l.start_position + l.num_new_tokens));
    EXPECT_LE(r.out.total_num_tokens, 64);
    chunks.push_back(l.num_new_tokens);
  }
  EXPECT_THAT(chunks, ElementsAre(63, 63, 24));
  EXPECT_THAT(s->GetRequest("long")->output_token_ids(), ElementsAre(1150));
}

TEST(SchedulerTest, DecodesComeBeforeNewPrefillsAndCanUseTheWholeBudget) {
  SchedulerConfig c = SmallConfig();
  c.max_num_batched_tokens = 8;
  c.max_num_seqs = 8;
  auto s = MakeScheduler(c);
  for (int i = 0; i < 6; ++i) {
    ASSERT_TRUE(s->AddRequest(Req(fmt::format("d{}", i), Range(1, i), 20)).ok());
  }
  Step(*s);  // six 1-token prompts in one step
  ASSERT_EQ(s->num_running(), 6);
  ASSERT_TRUE(s->AddRequest(Req("p", Range(20), 2)).ok());
  StepResult r = Step(*s);
  ASSERT_EQ(r.out.scheduled.size(), 7u);
  for (int i = 0; i < 6; ++i) EXPECT_FALSE(r.out.scheduled[i].is_prefill);
  EXPECT_EQ(r.out.scheduled[6].request_id, "p");
  EXPECT_EQ(r.out.scheduled[6].num_new_tokens, 2);  // what the decodes left
  EXPECT_EQ(r.out.total_num_tokens, 8);
}

TEST(SchedulerTest, WithoutChunkedPrefillAPromptWaitsForRoomInOneStep) {
  SchedulerConfig c = SmallConfig();
  c.enable_chunked_prefill = false;
  c.max_model_len = 32;
  c.max_num_batched_tokens = 32;
  auto s = MakeScheduler(c);
  ASSERT_TRUE(s->AddRequest(Req("a", {1}, 3)).ok());
  ASSERT_TRUE(s->AddRequest(Req("b", {2}, 5)).ok());
  Step(*s);
  ASSERT_TRUE(s->AddRequest(Req("big", Range(31), 1)).ok());
  ASSERT_TRUE(s->AddRequest(Req("small", {3}, 1)).ok());
  // Two decodes leave 30 tokens: "big" (31) waits and "small" may not overtake it.
  StepResult r = Step(*s);
  EXPECT_EQ(r.out.scheduled.size(), 2u);
  EXPECT_EQ(r.Find("big"), nullptr);
  EXPECT_EQ(r.Find("small"), nullptr);
  Step(*s);  // "a" finishes (3 tokens)
  r = Step(*s);
  ASSERT_NE(r.Find("big"), nullptr);
  EXPECT_EQ(r.Find("big")->num_new_tokens, 31);
  EXPECT_EQ(r.Find("small"), nullptr);  // no budget left
  ASSERT_EQ(r.finished.size(), 1u);     // "big" had max_tokens 1
  r = Step(*s);
  ASSERT_NE(r.Find("small"), nullptr);
}

TEST(SchedulerTest, MaxNumSeqsIsRespected) {
  SchedulerConfig c = SmallConfig();
  c.max_num_seqs = 3;
  auto s = MakeScheduler(c);
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(s->AddRequest(Req(fmt::format("r{}", i), Range(2, 10 * i), 4)).ok());
  }
  StepResult r = Step(*s);
  EXPECT_EQ(r.out.scheduled.size(), 3u);
  EXPECT_EQ(s->num_running(), 3);
  EXPECT_EQ(s->num_waiting(), 2);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(r.out.scheduled[i].request_id, fmt::format("r{}", i));
  while (s->num_running() == 3) EXPECT_LE(Step(*s).out.scheduled.size(), 3u);
  EXPECT_FALSE(s->HasUnfinishedRequests() && s->num_running() > 3);
}

TEST(SchedulerTest, PriorityPolicyAdmitsLowerValuesFirst) {
  SchedulerConfig c = SmallConfig();
  c.policy = SchedulingPolicy::kPriority;
  c.max_num_seqs = 2;
  auto s = MakeScheduler(c);
  ASSERT_TRUE(s->AddRequest(Req("late_low", {1}, 2, /*priority=*/5)).ok());
  ASSERT_TRUE(s->AddRequest(Req("b", {2}, 2, 1)).ok());
  ASSERT_TRUE(s->AddRequest(Req("a", {3}, 2, 1)).ok());
  StepResult r = Step(*s);
  ASSERT_EQ(r.out.scheduled.size(), 2u);
  EXPECT_EQ(r.out.scheduled[0].request_id, "b");  // same priority: arrival order
  EXPECT_EQ(r.out.scheduled[1].request_id, "a");
}

}  // namespace
}  // namespace xinfer
