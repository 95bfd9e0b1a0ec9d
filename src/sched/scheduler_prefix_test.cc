// Automatic prefix caching as seen through the scheduler.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "sched/scheduler.h"
#include "sched/scheduler_test_util.h"

namespace xinfer {
namespace {

using testing::MakeScheduler;
using testing::Range;
using testing::Req;
using testing::Step;
using testing::StepResult;

SchedulerConfig PrefixConfig(bool caching = true) {
  SchedulerConfig c;
  c.max_num_seqs = 16;
  c.max_num_batched_tokens = 2048;
  c.max_model_len = 2048;
  c.block_size = 16;
  c.num_blocks = 300;
  c.enable_prefix_caching = caching;
  return c;
}

std::vector<TokenId> Concat(std::vector<TokenId> a, const std::vector<TokenId>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST(SchedulerPrefixTest, SecondRequestComputesOnlyTheUncachedTail) {
  auto s = MakeScheduler(PrefixConfig());
  const std::vector<TokenId> prefix = Range(1024, 3);
  ASSERT_TRUE(s->AddRequest(Req("a", Concat(prefix, Range(10, 90000)), 4)).ok());
  StepResult r = Step(*s);
  EXPECT_EQ(r.out.scheduled[0].num_new_tokens, 1034);
  ASSERT_TRUE(s->AddRequest(Req("b", Concat(prefix, Range(20, 80000)), 4)).ok());
  r = Step(*s);
  const ScheduledSequence* b = r.Find("b");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->start_position, 1024);
  EXPECT_EQ(b->num_new_tokens, 20);
  EXPECT_EQ(b->token_ids, Range(20, 80000));
  EXPECT_EQ(s->GetRequest("b")->num_cached_tokens, 1024);
  EXPECT_EQ(s->GetRequest("a")->num_cached_tokens, 0);
  const ScheduledSequence* a = r.Find("a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(std::vector<BlockId>(a->block_table.begin(), a->block_table.begin() + 64),
            std::vector<BlockId>(b->block_table.begin(), b->block_table.begin() + 64));
  EXPECT_EQ(b->new_block_ids.size(), 2u);  // only the tail (20 tokens) needed new blocks
  EXPECT_EQ(s->stats().prefix_cache_queries, 1034 + 1044);
  EXPECT_EQ(s->stats().prefix_cache_hits, 1024);
  while (s->HasUnfinishedRequests()) Step(*s);
  EXPECT_EQ(s->kv_cache().num_free_blocks(), 300);
  EXPECT_GT(s->kv_cache().pool().num_cached_blocks(), 64);
}

TEST(SchedulerPrefixTest, ParallelSamplesShareThePromptAfterTheFirstPrefill) {
  // n = 3 done by the engine as three requests with one prompt.
  auto s = MakeScheduler(PrefixConfig());
  const std::vector<TokenId> prompt = Range(40, 7);
  ASSERT_TRUE(s->AddRequest(Req("n0", prompt, 3)).ok());
  Step(*s);
  ASSERT_TRUE(s->AddRequest(Req("n1", prompt, 3)).ok());
  ASSERT_TRUE(s->AddRequest(Req("n2", prompt, 3)).ok());
  StepResult r = Step(*s);
  for (const char* id : {"n1", "n2"}) {
    ASSERT_NE(r.Find(id), nullptr);
    EXPECT_EQ(r.Find(id)->start_position, 32);  // 2 full blocks; the last token is recomputed
    EXPECT_EQ(s->GetRequest(id)->num_cached_tokens, 32);
    EXPECT_EQ(r.Find(id)->block_table[1], r.Find("n0")->block_table[1]);
  }
}

TEST(SchedulerPrefixTest, BlocksFilledByDecodeServeAFollowUpTurn) {
  auto s = MakeScheduler(PrefixConfig());
  ASSERT_TRUE(s->AddRequest(Req("turn1", Range(10, 1), 30)).ok());
  std::vector<TokenId> history;
  while (s->HasUnfinishedRequests()) {
    Step(*s);
    if (const Request* r = s->GetRequest("turn1")) {
      history.assign(r->token_ids.begin(), r->token_ids.end());
    }
  }
  ASSERT_EQ(history.size(), 39u);  // the last sampled token is not kept by GetRequest
  // 40 tokens were produced; 39 were computed: blocks 0 and 1 are full and cached.
  ASSERT_TRUE(s->AddRequest(Req("turn2", Concat(history, {5, 6, 7}), 3)).ok());
  StepResult r = Step(*s);
  EXPECT_EQ(r.Find("turn2")->start_position, 32);
}

TEST(SchedulerPrefixTest, ExtraKeyAndDisabledCachingGiveNoHits) {
  auto s = MakeScheduler(PrefixConfig());
  NewRequest a = Req("a", Range(100), 2);
  ASSERT_TRUE(s->AddRequest(a).ok());
  Step(*s);
  NewRequest b = Req("b", Range(100), 2);
  b.extra_key = 42;  // e.g. another LoRA adapter
  ASSERT_TRUE(s->AddRequest(b).ok());
  EXPECT_EQ(Step(*s).Find("b")->start_position, 0);

  auto off = MakeScheduler(PrefixConfig(false));
  ASSERT_TRUE(off->AddRequest(Req("a", Range(100), 2)).ok());
  Step(*off);
  ASSERT_TRUE(off->AddRequest(Req("b", Range(100), 2)).ok());
  EXPECT_EQ(Step(*off).Find("b")->start_position, 0);
  EXPECT_EQ(off->stats().prefix_cache_hits, 0);
}

// Prompt logprobs: every prompt position's logits, so no cached prefix is read and the chunks
// share max_prompt_logits_per_step; the rows named are exactly positions 0 .. prompt_len - 2.
TEST(SchedulerPrefixTest, PromptLogitsRequestsComputeEveryPromptPosition) {
  SchedulerConfig c = PrefixConfig();
  c.max_prompt_logits_per_step = 100;
  auto s = MakeScheduler(c);
  const std::vector<TokenId> prompt = Range(250, 5);
  ASSERT_TRUE(s->AddRequest(Req("warm", prompt, 1)).ok());
  while (s->HasUnfinishedRequests()) Step(*s);
  NewRequest a = Req("a", prompt, 2);
  a.prompt_logits = true;
  ASSERT_TRUE(s->AddRequest(std::move(a)).ok());
  NewRequest b = Req("b", Range(30, 7000), 2);
  b.prompt_logits = true;
  ASSERT_TRUE(s->AddRequest(std::move(b)).ok());
  ASSERT_TRUE(s->AddRequest(Req("plain", prompt, 2)).ok());  // reads the cache as before
  std::vector<int> a_rows;  // positions whose logits a's steps asked for
  int b_rows = 0;
  for (int step = 0; step < 10 && s->HasUnfinishedRequests(); ++step) {
    StepResult r = Step(*s);
    int rows = 0;
    for (const ScheduledSequence& q : r.out.scheduled) {
      rows += q.num_prompt_logits;
      EXPECT_LE(q.num_prompt_logits, q.num_new_tokens);
      if (q.request_id == "a") {
        if (q.newly_admitted) {
          EXPECT_EQ(q.start_position, 0);
        }
        for (int j = 0; j < q.num_prompt_logits; ++j) a_rows.push_back(q.start_position + j);
      }
      if (q.request_id == "b") b_rows += q.num_prompt_logits;
      if (q.request_id == "plain" && q.newly_admitted) {
        EXPECT_EQ(q.start_position, 240);  // 15 cached blocks
      }
      if (q.request_id == "plain") {
        EXPECT_EQ(q.num_prompt_logits, 0);
      }
    }
    EXPECT_LE(rows, 100) << "step " << step;
  }
  std::vector<int> expected(249);
  for (int p = 0; p < 249; ++p) expected[static_cast<size_t>(p)] = p;
  EXPECT_EQ(a_rows, expected);
  EXPECT_EQ(b_rows, 29);
  EXPECT_EQ(s->GetRequest("a"), nullptr);
}

}  // namespace
}  // namespace xinfer
