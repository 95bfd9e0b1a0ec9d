// The lines the server logs as vLLM does: the periodic stats line and the per-request line.
#include "server/request_log.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace xinfer::server {
namespace {

TEST(RequestLogTest, StatsLineGivesThroughputsOverTheIntervalAndTheStateNow) {
  EngineStats before;
  before.prompt_tokens = 100;
  before.generation_tokens = 40;
  before.computed_tokens = 140;
  EngineStats now = before;
  now.prompt_tokens = 350;      // 250 in 10 s
  now.generation_tokens = 441;  // 401 in 10 s
  now.computed_tokens = 791;
  now.num_running = 3;
  now.num_waiting = 1;
  now.kv_cache_usage = 0.0125;
  now.prefix_cache_queries = 200;
  now.prefix_cache_hits = 70;
  EXPECT_EQ(FormatStatsLine(1, before, now, 10.0),
            "Engine 001: Avg prompt throughput: 25.0 tokens/s, Avg generation throughput: 40.1 "
            "tokens/s, Running: 3 reqs, Waiting: 1 reqs, KV cache usage: 1.2%, Prefix cache hit "
            "rate: 35.0%");
  EXPECT_FALSE(StatsIntervalIdle(before, now));
  // Nothing computed and nothing queued: idle, whatever the counters say so far.
  EngineStats later = now;
  later.num_running = 0;
  later.num_waiting = 0;
  EXPECT_TRUE(StatsIntervalIdle(now, later));
  later.num_waiting = 2;  // waiting for blocks is not idle
  EXPECT_FALSE(StatsIntervalIdle(now, later));
  EXPECT_NE(FormatStatsLine(0, now, now, 0).find("Avg prompt throughput: 0.0 tokens/s"),
            std::string::npos);
}

TEST(RequestLogTest, RequestLineCutsPromptTextAndIdsToMaxLogLen) {
  const std::string dir = std::string(XINFER_SHARED_DIR) + "/models/tiny-qwen3";
  if (!std::filesystem::exists(dir)) GTEST_SKIP() << dir << " is absent (../shared not available)";
  auto tokenizer = Tokenizer::FromDir(dir);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status().ToString();
  auto ids = (*tokenizer)->Encode("héllo wörld, \"quoted\"\n", false);
  ASSERT_TRUE(ids.ok());
  GenerationRequest r;
  r.id = "cmpl-1";
  r.prompts = {*ids, {9707}};
  r.params.temperature = 0.5f;
  r.params.max_tokens = 7;
  r.params.stop = {"end"};
  r.params.seed = 3;
  const std::string whole = FormatRequestLine(r, 0, **tokenizer, -1);
  EXPECT_EQ(whole.rfind("Received request cmpl-1-0: prompt: \"héllo wörld, \\\"quoted\\\"\\n\", "
                        "params: n=1 temperature=0.5 ",
                        0),
            0u)
      << whole;
  EXPECT_NE(whole.find("max_tokens=7 "), std::string::npos) << whole;
  EXPECT_NE(whole.find("seed=3 stop=[\"end\"] "), std::string::npos) << whole;
  EXPECT_EQ(whole.find(" (of "), std::string::npos) << whole;
  // Two ids and two bytes: the text stops before the character the cut would split ("é").
  const std::string cut = FormatRequestLine(r, 0, **tokenizer, 2);
  EXPECT_NE(cut.find("prompt: \"h\","), std::string::npos) << cut;
  EXPECT_NE(cut.find(fmt::format("prompt_token_ids: [{}, {}] (of {})", (*ids)[0], (*ids)[1],
                                 ids->size())),
            std::string::npos)
      << cut;
  EXPECT_NE(FormatRequestLine(r, 1, **tokenizer, -1).find("cmpl-1-1: "), std::string::npos);
  r.prompts.pop_back();
  EXPECT_NE(FormatRequestLine(r, 0, **tokenizer, 0).find("cmpl-1: prompt: \"\","),
            std::string::npos);
}

}  // namespace
}  // namespace xinfer::server
