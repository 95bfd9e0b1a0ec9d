// Speculative decoding through the engine (--speculative-config, method "ngram"): every request
// gets exactly the tokens, text, logprobs and finish reasons plain decoding gives it — greedy or
// seeded random, with penalties, stop strings, min_tokens, a guide, several choices, a LoRA-free
// batch of them together — in fewer steps, with drafts kept and counted as vLLM's metrics count
// them.
#include <gtest/gtest.h>

#include "engine_test_util.h"
#include "lora_model_util.h"
#include "sampling/regex_dfa.h"
#include "test_util.h"

namespace xinfer {
namespace {

using testing::Completed;

EngineConfig SpecEngineConfig(const std::string& model, const std::string& speculative) {
  EngineConfig c;
  c.model = testing::SharedDir() + "/models/" + model;
  c.kv_cache_memory = 64 << 20;
  c.max_model_len = 512;
  c.block_size = 4;  // drafts cross block boundaries often
  c.speculative_config = speculative;
  return c;
}

struct SpecRun {
  std::map<std::string, Completed> done;
  int steps = 0;
  EngineStats stats;
};

SpecRun RunRequests(const EngineConfig& config,
                    const std::vector<std::pair<std::string, EngineRequest>>& requests) {
  SpecRun run;
  auto engine = LLMEngine::Create(config);
  EXPECT_TRUE(engine.ok()) << engine.status().ToString();
  if (!engine.ok()) return run;
  for (const auto& [id, r] : requests) EXPECT_TRUE((*engine)->AddRequest(id, r).ok()) << id;
  run.done = testing::RunToCompletion(**engine, 10000, &run.steps);
  run.stats = (*engine)->stats();
  return run;
}

void ExpectSameOutputs(const SpecRun& plain, const SpecRun& spec) {
  ASSERT_EQ(plain.done.size(), spec.done.size());
  for (const auto& [id, want] : plain.done) {
    auto it = spec.done.find(id);
    ASSERT_NE(it, spec.done.end()) << id;
    const Completed& got = it->second;
    EXPECT_EQ(got.token_ids, want.token_ids) << id;
    EXPECT_EQ(got.text, want.text) << id;
    EXPECT_EQ(got.finish_reason, want.finish_reason) << id;
    EXPECT_EQ(got.stop_reason, want.stop_reason) << id;
    EXPECT_EQ(got.completion_tokens, want.completion_tokens) << id;
    // A step's drafted tokens each come with their logprobs.
    if (!got.logprobs.empty()) {
      EXPECT_EQ(got.logprobs.size(), got.token_ids.size()) << id;
    }
    ASSERT_EQ(got.logprobs.size(), want.logprobs.size()) << id;
    for (size_t t = 0; t < want.logprobs.size(); ++t) {
      // The same kernels on the same rows (batch invariance): bitwise the same.
      EXPECT_EQ(got.logprobs[t].token, want.logprobs[t].token) << id << " " << t;
      EXPECT_EQ(got.logprobs[t].logprob, want.logprobs[t].logprob) << id << " " << t;
      ASSERT_EQ(got.logprobs[t].top.size(), want.logprobs[t].top.size()) << id << " " << t;
      for (size_t j = 0; j < want.logprobs[t].top.size(); ++j) {
        EXPECT_EQ(got.logprobs[t].top[j].id, want.logprobs[t].top[j].id);
        EXPECT_EQ(got.logprobs[t].top[j].logprob, want.logprobs[t].top[j].logprob);
      }
    }
  }
}

std::vector<std::pair<std::string, EngineRequest>> MixedRequests(
    const std::vector<int32_t>& prompt) {
  std::vector<std::pair<std::string, EngineRequest>> r;
  SamplingParams greedy = testing::Greedy(60);
  greedy.logprobs = 2;
  r.push_back({"greedy", {prompt, greedy}});
  SamplingParams sampled = testing::Greedy(60);
  sampled.temperature = 0.7f;
  sampled.top_k = 20;
  sampled.seed = 11;
  sampled.logprobs = 1;
  sampled.n = 2;
  r.push_back({"sampled", {prompt, sampled}});
  SamplingParams penalized = testing::Greedy(50);
  penalized.repetition_penalty = 1.3f;
  penalized.presence_penalty = 0.5f;
  penalized.frequency_penalty = 0.2f;
  r.push_back({"penalized", {prompt, penalized}});
  SamplingParams short_one = testing::Greedy(7);  // drafts cut at max_tokens
  r.push_back({"short", {prompt, short_one}});
  SamplingParams min_tokens = testing::Greedy(40);
  min_tokens.ignore_eos = false;
  min_tokens.min_tokens = 30;
  r.push_back({"min_tokens", {prompt, min_tokens}});
  SamplingParams eos = testing::Greedy(80);
  eos.ignore_eos = false;
  r.push_back({"eos", {prompt, eos}});
  return r;
}

TEST(EngineSpecTest, NgramDraftsChangeNothingButTheNumberOfSteps) {
  XI_REQUIRE_SHARED("models/tinystories-656k");
  // A trained model whose greedy stories repeat their names and phrases: drafts are often kept.
  const std::vector<int32_t> prompt = {1, 80, 147, 201, 282, 215, 248, 197, 85};
  auto requests = MixedRequests(prompt);
  const SpecRun plain = RunRequests(SpecEngineConfig("tinystories-656k", ""), requests);
  const SpecRun spec = RunRequests(
      SpecEngineConfig("tinystories-656k",
                       R"({"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_max": 3,
                           "prompt_lookup_min": 1})"),
      requests);
  ExpectSameOutputs(plain, spec);
  EXPECT_EQ(spec.stats.generation_tokens, plain.stats.generation_tokens);
  EXPECT_GT(spec.stats.spec_num_drafts, 0);
  EXPECT_GT(spec.stats.spec_num_accepted_tokens, 0);
  EXPECT_LE(spec.stats.spec_num_accepted_tokens, spec.stats.spec_num_draft_tokens);
  ASSERT_EQ(spec.stats.spec_accepted_per_position.size(), 4u);
  int64_t per_position = 0;
  for (size_t p = 0; p < 4; ++p) {
    per_position += spec.stats.spec_accepted_per_position[p];
    if (p > 0) {
      EXPECT_LE(spec.stats.spec_accepted_per_position[p],
                spec.stats.spec_accepted_per_position[p - 1]);
    }
  }
  EXPECT_EQ(per_position, spec.stats.spec_num_accepted_tokens);
  EXPECT_LT(spec.steps, plain.steps);
  EXPECT_EQ(plain.stats.spec_num_drafts, 0);
  EXPECT_TRUE(plain.stats.spec_accepted_per_position.empty());
  std::printf("steps %d -> %d, drafts %lld, draft tokens %lld, kept %lld\n", plain.steps,
              spec.steps, static_cast<long long>(spec.stats.spec_num_drafts),
              static_cast<long long>(spec.stats.spec_num_draft_tokens),
              static_cast<long long>(spec.stats.spec_num_accepted_tokens));
}

TEST(EngineSpecTest, StopStringsAndGuidesEndWhereTheyWouldWithoutDrafts) {
  XI_REQUIRE_SHARED("models/tinystories-656k");
  XI_REQUIRE_SHARED("models/tiny-qwen3");
  const std::vector<int32_t> prompt = {1, 80, 147, 201, 282, 215, 248, 197, 85};
  // A stop string inside a run of kept drafts: the text ends before it, the tokens after it
  // are dropped; include_stop_str_in_output keeps it.
  const SpecRun probe =
      RunRequests(SpecEngineConfig("tinystories-656k", ""), {{"p", {prompt, testing::Greedy(60)}}});
  const std::string text = probe.done.at("p/0").text;
  ASSERT_GT(text.size(), 120u);
  const std::string stop = text.substr(100, 6);
  std::vector<std::pair<std::string, EngineRequest>> requests;
  SamplingParams stopped = testing::Greedy(60);
  stopped.stop = {stop};
  stopped.logprobs = 0;
  requests.push_back({"stop", {prompt, stopped}});
  stopped.include_stop_str_in_output = true;
  requests.push_back({"stop_kept", {prompt, stopped}});
  SamplingParams token_stop = testing::Greedy(60);
  token_stop.stop_token_ids = {probe.done.at("p/0").token_ids[40]};
  requests.push_back({"stop_token", {prompt, token_stop}});
  const std::string spec_config = R"({"method": "ngram", "num_speculative_tokens": 5})";
  const std::string low_n = R"({"method": "ngram", "num_speculative_tokens": 3,
                                "prompt_lookup_min": 1, "prompt_lookup_max": 2})";
  ExpectSameOutputs(RunRequests(SpecEngineConfig("tinystories-656k", ""), requests),
                    RunRequests(SpecEngineConfig("tinystories-656k", low_n), requests));
  EXPECT_EQ(RunRequests(SpecEngineConfig("tinystories-656k", low_n), requests)
                .done.at("stop/0")
                .finish_reason,
            "stop");

  // A guided request on a random-weight Qwen3: the guide's state follows the kept drafts.
  std::vector<std::pair<std::string, EngineRequest>> guided;
  SamplingParams g = testing::Greedy(40);
  g.ignore_eos = false;
  g.guided = GuidedDecoding::kRegex;
  g.regex = *RegexDfa::FromPattern("(ab|cd)+e", "guided_regex");
  g.logprobs = 0;
  guided.push_back({"regex", {{5, 6, 7, 5, 6, 7}, g}});
  SamplingParams g2 = g;
  g2.temperature = 1.0f;
  g2.seed = 5;
  g2.n = 3;
  guided.push_back({"regex_sampled", {{5, 6, 7, 5, 6, 7}, g2}});
  const SpecRun plain = RunRequests(SpecEngineConfig("tiny-qwen3", ""), guided);
  const SpecRun spec = RunRequests(SpecEngineConfig("tiny-qwen3", low_n), guided);
  ExpectSameOutputs(plain, spec);
  EXPECT_GT(spec.stats.spec_num_drafts, 0);
  (void)spec_config;
}

// Drafts under the engine's other machinery: a KV cache small enough to preempt (recomputed
// requests, drafts dropped when their blocks are not free), tensor parallelism, and LoRA
// adapters (a draft row runs with its sequence's adapter).
TEST(EngineSpecTest, DraftsUnderPreemptionTensorParallelismAndLora) {
  XI_REQUIRE_SHARED("models/tinystories-656k");
  XI_REQUIRE_SHARED("models/tiny-qwen3");
  const std::string spec = R"({"method": "ngram", "num_speculative_tokens": 3,
                               "prompt_lookup_min": 1, "prompt_lookup_max": 2})";
  const std::vector<int32_t> prompt = {1, 80, 147, 201, 282, 215, 248, 197, 85};
  std::vector<std::pair<std::string, EngineRequest>> requests;
  for (int i = 0; i < 6; ++i) {
    SamplingParams p = testing::Greedy(70);
    p.logprobs = 0;
    if (i % 2) {
      p.temperature = 0.9f;
      p.seed = 100 + i;
    }
    std::vector<int32_t> ids = prompt;
    ids.push_back(300 + 17 * i);
    requests.push_back({"r" + std::to_string(i), {ids, p}});
  }
  {
    EngineConfig small = SpecEngineConfig("tinystories-656k", "");
    small.kv_cache_memory = 0;
    small.num_gpu_blocks_override = 64;  // 256 tokens for six requests of ~80: preemption
    const SpecRun plain = RunRequests(small, requests);
    small.speculative_config = spec;
    const SpecRun drafted = RunRequests(small, requests);
    ExpectSameOutputs(plain, drafted);
    EXPECT_GT(plain.stats.num_preemptions, 0);
    EXPECT_GT(drafted.stats.num_preemptions, 0);
    EXPECT_GT(drafted.stats.spec_num_accepted_tokens, 0);
  }
  {
    EngineConfig tp = SpecEngineConfig("tinystories-656k", "");
    tp.tensor_parallel_size = 2;
    tp.threads = 2;
    const SpecRun plain = RunRequests(tp, requests);
    tp.speculative_config = spec;
    const SpecRun drafted = RunRequests(tp, requests);
    ExpectSameOutputs(plain, drafted);
    EXPECT_GT(drafted.stats.spec_num_accepted_tokens, 0);
  }
  {
    auto folders = testing::WriteLoraAdapter("tiny-qwen3", {}, "spec");
    EngineConfig lora = SpecEngineConfig("tiny-qwen3", "");
    lora.enable_lora = true;
    lora.lora_modules = {"tuned=" + folders.adapter.string()};
    std::vector<std::pair<std::string, EngineRequest>> mixed;
    for (int i = 0; i < 4; ++i) {
      SamplingParams p = testing::Greedy(60);
      p.logprobs = 0;
      EngineRequest r{{5, 6, 7, 5, 6, 7, static_cast<int32_t>(40 + i)}, p};
      if (i % 2 == 0) r.lora_name = "tuned";
      mixed.push_back({"m" + std::to_string(i), r});
    }
    const SpecRun plain = RunRequests(lora, mixed);
    lora.speculative_config = spec;
    const SpecRun drafted = RunRequests(lora, mixed);
    ExpectSameOutputs(plain, drafted);
    EXPECT_NE(plain.done.at("m0/0").token_ids, plain.done.at("m1/0").token_ids);
    EXPECT_GT(drafted.stats.spec_num_accepted_tokens, 0);
  }
}

TEST(EngineSpecTest, BadSpeculativeConfigsAreRefused) {
  XI_REQUIRE_SHARED("models/tiny-qwen3");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"[1]", "speculative_config must be a JSON object"},
      {R"({"num_speculative_tokens": 3})", "needs a method"},
      {R"({"method": "eagle", "model": "x", "num_speculative_tokens": 3})",
       "method 'eagle' is not supported"},
      {R"({"model": "/models/qwen-0.5b", "num_speculative_tokens": 3})",
       "a draft model ('/models/qwen-0.5b') is not supported"},
      {R"({"method": "ngram"})", "needs num_speculative_tokens"},
      {R"({"method": "ngram", "num_speculative_tokens": 0})", "must be an integer in [1, 1024]"},
      {R"({"method": "ngram", "num_speculative_tokens": 2, "prompt_lookup_min": 4,
           "prompt_lookup_max": 2})",
       "prompt_lookup_min (4) must be <= prompt_lookup_max (2)"},
      {R"({"method": "ngram", "num_speculative_tokens": 2, "draft_tensor_parallel_size": 2})",
       "speculative_config draft_tensor_parallel_size is not available"},
  };
  for (const auto& [json, message] : cases) {
    auto engine = LLMEngine::Create(SpecEngineConfig("tiny-qwen3", json));
    ASSERT_FALSE(engine.ok()) << json;
    EXPECT_NE(engine.status().message().find(message), std::string::npos)
        << json << ": " << engine.status().message();
  }
  EngineConfig embed = SpecEngineConfig("tiny-qwen3", R"({"method": "ngram",
                                                         "num_speculative_tokens": 2})");
  embed.task = "embed";
  auto engine = LLMEngine::Create(embed);
  ASSERT_FALSE(engine.ok());
  EXPECT_NE(engine.status().message().find("is for text generation"), std::string::npos);
  // vLLM's spellings of the method, and its defaults.
  for (const char* json : {R"({"model": "[ngram]", "num_speculative_tokens": 2})",
                           R"({"method": "[ngram]", "num_speculative_tokens": 2,
                               "prompt_lookup_max": 3, "disable_log_stats": false})"}) {
    auto ok = LLMEngine::Create(SpecEngineConfig("tiny-qwen3", json));
    EXPECT_TRUE(ok.ok()) << json << ": " << ok.status().ToString();
  }
}

}  // namespace
}  // namespace xinfer
