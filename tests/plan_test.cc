// `xinfer plan` answers with the engine's own numbers: the weights ComputeModelCost counts from the
// file headers are the bytes the loaded model holds, so SizeKvCache over them gives the KV blocks
// LLMEngine::Create allocates, for every format and --dtype / --kv-cache-dtype.
#include <gtest/gtest.h>

#include "cli/perf_model.h"
#include "engine/kv_cache_sizing.h"
#include "engine/llm_engine.h"
#include "test_util.h"

namespace xinfer {
namespace {

// One token per block and a budget the weights take much of: a weight count off by the bytes of
// one token's K and V moves the block count.
EngineConfig SmallBudget(const std::string& model) {
  EngineConfig c;
  c.model = testing::SharedDir() + "/models/" + model;
  c.block_size = 1;
  c.max_model_len = 256;
  c.max_num_seqs = 1024;
  c.gpu_memory_utilization = 0.5;
  c.cpu_memory_budget = 128 << 20;
  c.threads = 1;
  return c;
}

TEST(PlanTest, KvBlocksFromTheFileHeadersAreTheEnginesBlocks) {
  XI_REQUIRE_SHARED("models/tiny-qwen3");
  const char* models[] = {"tiny-qwen3",           "tiny-qwen2",
                          "tinystories-656k",     "tinystories-656k-awq",
                          "tiny-qwen3-bf16.gguf", "tiny-qwen3-q8_0.gguf",
                          "tiny-qwen3-q4_0.gguf", "tiny-qwen3-kq-q4_k_m.gguf"};
  for (const char* model : models) {
    for (const char* dtype : {"auto", "bfloat16"}) {
      for (const char* kv_dtype : {"auto", "float32"}) {
        SCOPED_TRACE(std::string(model) + " --dtype " + dtype + " --kv-cache-dtype " + kv_dtype);
        EngineConfig c = SmallBudget(model);
        c.dtype = dtype;
        c.kv_cache_dtype = kv_dtype;
        auto engine = LLMEngine::Create(c);
        ASSERT_TRUE(engine.ok()) << engine.status().ToString();
        auto cost = ComputeModelCost(c.model, c.KvCacheDType(), c.bf16_activations());
        ASSERT_TRUE(cost.ok()) << cost.status().ToString();
        auto kv =
            SizeKvCache((*engine)->config(), static_cast<int64_t>(cost->weight_bytes),
                        static_cast<int64_t>(cost->kv_bytes_per_token), PhysicalMemoryBytes());
        ASSERT_TRUE(kv.ok()) << kv.status().ToString();
        EXPECT_FALSE(kv->capped_by_max_num_seqs);
        EXPECT_EQ(kv->num_blocks, (*engine)->stats().num_blocks);
      }
    }
  }
}

// Over tensor-parallel ranks the engine holds a copy of the norms per rank and, with more ranks
// than key-value heads, copies of the key / value projections: plan counts them as the engine
// does, so its blocks are the engine's.
TEST(PlanTest, TensorParallelWeightsAreTheEnginesWeights) {
  XI_REQUIRE_SHARED("models/tiny-qwen3");
  const char* models[] = {"tiny-qwen3", "tiny-qwen2", "tinystories-656k", "tiny-qwen3-q8_0.gguf"};
  for (const char* model : models) {
    for (int tp : {1, 2, 4}) {
      SCOPED_TRACE(std::string(model) + " over " + std::to_string(tp) + " ranks");
      EngineConfig c = SmallBudget(model);
      c.threads = tp;
      c.tensor_parallel_size = tp;
      c.cpu_threads_bind = "nobind";
      auto engine = LLMEngine::Create(c);
      ASSERT_TRUE(engine.ok()) << engine.status().ToString();
      auto cost = ComputeModelCost(c.model, c.KvCacheDType(), c.bf16_activations());
      ASSERT_TRUE(cost.ok()) << cost.status().ToString();
      const size_t weights = TensorParallelWeightBytes(*cost, tp);
      if (tp == 1) {
        EXPECT_EQ(weights, cost->weight_bytes);
      }
      EXPECT_EQ(weights, (*engine)->weight_bytes());
    }
  }
}

// A data-parallel replica sizes its cache from its share of the budget, as plan does.
TEST(PlanTest, DataParallelReplicaBlocksAreThePlansBlocks) {
  XI_REQUIRE_SHARED("models/tinystories-656k");
  EngineConfig c = SmallBudget("tinystories-656k");
  c.cpu_memory_budget = 64 << 20;
  c.threads = 2;
  c.data_parallel_size = 2;
  c.cpu_threads_bind = "nobind";
  auto replica = LLMEngine::Create(c, 1);
  ASSERT_TRUE(replica.ok()) << replica.status().ToString();
  auto cost = ComputeModelCost(c.model, c.KvCacheDType(), c.bf16_activations());
  ASSERT_TRUE(cost.ok());
  auto kv = SizeKvCache((*replica)->config(), static_cast<int64_t>(cost->weight_bytes),
                        static_cast<int64_t>(cost->kv_bytes_per_token), PhysicalMemoryBytes());
  ASSERT_TRUE(kv.ok()) << kv.status().ToString();
  EXPECT_EQ(kv->budget_bytes, 32 << 20);
  EXPECT_EQ(kv->num_blocks, (*replica)->stats().num_blocks);
  // Half the budget of one engine: (32 MiB x 0.5 - weights) per replica.
  EXPECT_EQ(kv->num_blocks, ((16 << 20) - static_cast<int64_t>(cost->weight_bytes)) /
                                static_cast<int64_t>(cost->kv_bytes_per_token));
}

}  // namespace
}  // namespace xinfer
