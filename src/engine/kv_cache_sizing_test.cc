// SizeKvCache: the KV cache LLMEngine::Create allocates and `xinfer plan` reports, from the
// configuration alone.
#include "engine/kv_cache_sizing.h"

#include <gtest/gtest.h>

namespace xinfer {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

EngineConfig Config() {
  EngineConfig c;
  c.model = "unused";
  c.block_size = 16;
  c.max_model_len = 1024;
  c.max_num_seqs = 8;
  c.gpu_memory_utilization = 0.5;
  c.cpu_memory_budget = 100 * kMiB;
  return c;
}

TEST(KvCacheSizingTest, BudgetTimesUtilizationMinusWeights) {
  const EngineConfig c = Config();
  // 50 MiB usable - 10 MiB of weights = 40 MiB; 1 KiB per token x 16 = 16 KiB blocks: 2560.
  auto kv = SizeKvCache(c, 10 * kMiB, 1024, /*physical_memory=*/1 << 30);
  ASSERT_TRUE(kv.ok()) << kv.status().ToString();
  EXPECT_EQ(kv->budget_bytes, 100 * kMiB);
  EXPECT_EQ(kv->block_bytes, 16 * 1024);
  EXPECT_EQ(kv->num_blocks, 512);  // capped: 8 sequences x 1024 / 16 blocks
  EXPECT_TRUE(kv->capped_by_max_num_seqs);
  EXPECT_STREQ(kv->source, "gpu_memory_utilization");

  EngineConfig many = c;
  many.max_num_seqs = 64;  // 4096 useful blocks: the memory bound holds
  kv = SizeKvCache(many, 10 * kMiB, 1024, 1 << 30);
  ASSERT_TRUE(kv.ok());
  EXPECT_EQ(kv->num_blocks, 2560);
  EXPECT_FALSE(kv->capped_by_max_num_seqs);
  EXPECT_EQ(kv->num_tokens(16), 2560 * 16);

  // No cpu_memory_budget: the machine's memory is the budget.
  many.cpu_memory_budget = 0;
  kv = SizeKvCache(many, 10 * kMiB, 1024, 60 * kMiB);
  ASSERT_TRUE(kv.ok());
  EXPECT_EQ(kv->budget_bytes, 60 * kMiB);
  EXPECT_EQ(kv->num_blocks, 20 * 64);
}

TEST(KvCacheSizingTest, DataParallelReplicasShareTheBudget) {
  EngineConfig c = Config();
  c.max_num_seqs = 64;
  c.data_parallel_size = 2;
  // Each replica: 50 MiB x 0.5 - its own 10 MiB of weights = 15 MiB: 960 blocks of 16 KiB.
  auto kv = SizeKvCache(c, 10 * kMiB, 1024, 1 << 30);
  ASSERT_TRUE(kv.ok()) << kv.status().ToString();
  EXPECT_EQ(kv->budget_bytes, 50 * kMiB);
  EXPECT_EQ(kv->num_blocks, 960);
  // The machine's memory likewise; 4 replicas of 25 MiB x 0.5 leave nothing after 13 MiB of
  // weights each.
  c.cpu_memory_budget = 0;
  c.data_parallel_size = 4;
  kv = SizeKvCache(c, 13 * kMiB, 1024, 100 * kMiB);
  EXPECT_EQ(kv.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(kv.status().message().find("budget 26214400 bytes per data-parallel replica"),
            std::string::npos)
      << kv.status().message();
  // A fixed cache size is per replica, as vLLM takes it per engine.
  c.kv_cache_memory = 8 * kMiB;
  kv = SizeKvCache(c, 13 * kMiB, 1024, 100 * kMiB);
  ASSERT_TRUE(kv.ok()) << kv.status().ToString();
  EXPECT_EQ(kv->num_blocks, 512);
}

TEST(KvCacheSizingTest, OverrideAndKvCacheMemoryWinInThatOrder) {
  EngineConfig c = Config();
  c.kv_cache_memory = 8 * kMiB;
  auto kv = SizeKvCache(c, 10 * kMiB, 1024, 1 << 30);
  ASSERT_TRUE(kv.ok());
  EXPECT_EQ(kv->num_blocks, 512);
  EXPECT_STREQ(kv->source, "kv_cache_memory");
  c.num_gpu_blocks_override = 7;  // fewer than one max_model_len sequence: allowed when fixed
  kv = SizeKvCache(c, 10 * kMiB, 1024, 1 << 30);
  ASSERT_TRUE(kv.ok());
  EXPECT_EQ(kv->num_blocks, 7);
  EXPECT_STREQ(kv->source, "num_gpu_blocks_override");
}

TEST(KvCacheSizingTest, RefusesWhatCannotServeOneFullLengthSequence) {
  EngineConfig c = Config();
  // Weights over the usable half of the budget.
  auto kv = SizeKvCache(c, 60 * kMiB, 1024, 1 << 30);
  EXPECT_EQ(kv.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(kv.status().message().find("no memory left for the KV cache"), std::string::npos);

  // 1 MiB left: 64 blocks = 1024 tokens, exactly one sequence of max_model_len.
  kv = SizeKvCache(c, 49 * kMiB, 1024, 1 << 30);
  ASSERT_TRUE(kv.ok()) << kv.status().ToString();
  EXPECT_EQ(kv->num_blocks, 64);
  // One token more per sequence does not fit; the message names the length that would.
  c.max_model_len = 1025;
  kv = SizeKvCache(c, 49 * kMiB, 1024, 1 << 30);
  EXPECT_EQ(kv.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(kv.status().message().find("max_model_len 1025 is larger than the 1024 tokens"),
            std::string::npos)
      << kv.status().message();
  EXPECT_NE(kv.status().message().find("--max-model-len to at most 1024"), std::string::npos);
  // So does a --kv-cache-memory too small for one sequence.
  c = Config();
  c.kv_cache_memory = 1 * kMiB - 1;
  EXPECT_EQ(SizeKvCache(c, 0, 1024, 1 << 30).status().code(), StatusCode::kResourceExhausted);

  // A fixed block count over the budget.
  c = Config();
  c.num_gpu_blocks_override = 100 * 64 + 1;
  kv = SizeKvCache(c, 0, 1024, 1 << 30);
  EXPECT_EQ(kv.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(kv.status().message().find("over the memory budget"), std::string::npos);
}

}  // namespace
}  // namespace xinfer
