// The engine with --tensor-parallel-size 2 on the TinyStories model: continuous batching,
// chunked prefill and the prefix cache over the ranks' shards give the greedy tokens of one rank.
// Runs under ThreadSanitizer in CI (`make test-tsan`): the ranks' threads, their all-reduces and
// the engine's sampling threads between steps.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "base/cpu_topology.h"
#include "engine/llm_engine.h"

namespace xinfer {
namespace {

std::string TpStoriesDir() { return std::string(XINFER_SHARED_DIR) + "/models/tinystories-656k"; }

// Greedy tokens of a few requests of different lengths, some sharing a prefix, run to the end.
std::map<std::string, std::vector<int32_t>> RunStories(int tensor_parallel_size,
                                                       const std::string& bind = "auto") {
  EngineConfig c;
  c.model = TpStoriesDir();
  c.max_model_len = 256;
  c.num_gpu_blocks_override = 128;
  c.max_num_seqs = 8;
  c.max_num_batched_tokens = 24;  // prompts of 21-29 tokens prefill in chunks
  c.threads = 2;
  c.tensor_parallel_size = tensor_parallel_size;
  c.cpu_threads_bind = bind;
  auto engine = LLMEngine::Create(c);
  EXPECT_TRUE(engine.ok()) << engine.status().ToString();
  if (!engine.ok()) return {};
  std::vector<int32_t> shared_prefix;
  for (int i = 0; i < 20; ++i) shared_prefix.push_back(300 + 7 * i);
  for (int r = 0; r < 5; ++r) {
    EngineRequest req;
    req.prompt_ids = shared_prefix;
    for (int i = 0; i <= r * 2; ++i) req.prompt_ids.push_back(50 + 31 * r + i);
    req.params.temperature = 0;
    req.params.max_tokens = 12 + r;
    req.params.ignore_eos = true;
    EXPECT_TRUE((*engine)->AddRequest("r" + std::to_string(r), req).ok());
  }
  std::map<std::string, std::vector<int32_t>> tokens;
  while ((*engine)->HasUnfinishedRequests()) {
    auto outputs = (*engine)->Step();
    EXPECT_TRUE(outputs.ok()) << outputs.status().ToString();
    if (!outputs.ok()) break;
    for (const RequestOutput& o : *outputs)
      tokens[o.request_id].insert(tokens[o.request_id].end(), o.token_ids.begin(),
                                  o.token_ids.end());
  }
  return tokens;
}

TEST(TensorParallelEngineTest, TwoRanksGiveOneRanksGreedyTokens) {
  if (!std::filesystem::exists(TpStoriesDir()))
    GTEST_SKIP() << TpStoriesDir() << " is absent (../shared not available)";
  const auto one = RunStories(1);
  ASSERT_EQ(one.size(), 5u);
  EXPECT_EQ(RunStories(2), one);  // auto: a rank per NUMA node or run of CPUs
  EXPECT_EQ(RunStories(2, "nobind"), one);
  const std::vector<int> cpus = AllowedCpus();
  if (cpus.size() >= 2) {
    // Explicit lists, reversed; one rank bound to one CPU.
    const std::string a = std::to_string(cpus[0]), b = std::to_string(cpus[1]);
    EXPECT_EQ(RunStories(2, b + "|" + a), one);
    EXPECT_EQ(RunStories(1, a), one);
  }
}

TEST(TensorParallelEngineTest, BindingsThatCannotBeHonouredAreRefused) {
  const std::string cpu = std::to_string(AllowedCpus().front());
  const std::pair<std::string, std::string> refused[] = {
      {cpu + "|" + cpu, "CPU " + cpu + " is in two ranks' lists"},
      {cpu + "|4095", "CPU 4095 of rank 1 is not one this process may use"},
      {cpu, "has 1 CPU lists for 2 ranks"},
      {"everywhere", "cpu_threads_bind 'everywhere' is not auto, nobind or CPU lists"}};
  for (const auto& [bind, message] : refused) {
    EngineConfig c;
    c.model = TpStoriesDir();
    c.threads = 2;
    c.tensor_parallel_size = 2;
    c.cpu_threads_bind = bind;
    auto engine = LLMEngine::Create(c);
    ASSERT_FALSE(engine.ok()) << bind;
    EXPECT_NE(engine.status().message().find(message), std::string::npos)
        << bind << ": " << engine.status().ToString();
  }
}

TEST(TensorParallelEngineTest, MoreRanksThanThreadsIsRefused) {
  EngineConfig c;
  c.model = TpStoriesDir();
  c.threads = 2;
  c.tensor_parallel_size = 4;
  auto engine = LLMEngine::Create(c);
  ASSERT_FALSE(engine.ok());
  EXPECT_NE(engine.status().message().find("tensor_parallel_size 4 needs at least one thread per "
                                           "rank, got threads 2"),
            std::string::npos)
      << engine.status().ToString();
}

}  // namespace
}  // namespace xinfer
