#include "engine_test_util.h"

#include <gtest/gtest.h>

namespace xinfer::testing {

SamplingParams Greedy(int max_tokens) {
  SamplingParams p;
  p.temperature = 0;
  p.max_tokens = max_tokens;
  p.ignore_eos = true;
  return p;
}

std::map<std::string, Completed> RunToCompletion(LLMEngine& engine, int max_steps, int* steps) {
  std::map<std::string, Completed> done;
  for (int step = 0; step < max_steps && engine.HasUnfinishedRequests(); ++step) {
    if (steps) *steps = step + 1;
    auto outputs = engine.Step();
    if (!outputs.ok()) {
      ADD_FAILURE() << "engine step failed: " << outputs.status().ToString();
      return done;
    }
    for (RequestOutput& o : *outputs) {
      Completed& c = done[o.request_id + "/" + std::to_string(o.index)];
      c.token_ids.insert(c.token_ids.end(), o.token_ids.begin(), o.token_ids.end());
      c.text += o.text;
      c.logprobs.insert(c.logprobs.end(), o.logprobs.begin(), o.logprobs.end());
      c.prompt_logprobs.insert(c.prompt_logprobs.end(), o.prompt_logprobs.begin(),
                               o.prompt_logprobs.end());
      if (!o.embedding.empty()) c.embedding = o.embedding;
      if (o.score) c.score = o.score;
      if (!o.probs.empty()) c.probs = o.probs;
      c.prompt_tokens = o.prompt_tokens;
      c.completion_tokens = o.completion_tokens;
      if (o.finished) {
        c.finish_reason = o.finish_reason;
        c.stop_reason = o.stop_reason;
        c.cached_tokens = o.cached_tokens;
      }
    }
  }
  EXPECT_FALSE(engine.HasUnfinishedRequests()) << "engine did not finish in " << max_steps;
  return done;
}

}  // namespace xinfer::testing
