// Helpers for engine tests: run requests to completion and collect their outputs.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/llm_engine.h"

namespace xinfer::testing {

struct Completed {
  std::vector<int32_t> token_ids;
  std::string text;
  std::string finish_reason;
  std::string stop_reason;
  int cached_tokens = 0;
  int prompt_tokens = 0;
  int completion_tokens = 0;
  std::vector<TokenLogprobs> logprobs;
  std::vector<TokenLogprobs> prompt_logprobs;
  std::vector<float> embedding;
  std::optional<float> score;
  std::vector<float> probs;
};

// Greedy sampling of max_tokens tokens, EOS ignored.
SamplingParams Greedy(int max_tokens);

// Steps `engine` until it is idle; returns every choice's accumulated output keyed by
// "<request id>/<index>" (and the steps taken in *steps when given). Fails the test (returns
// what it has) on an engine error.
std::map<std::string, Completed> RunToCompletion(LLMEngine& engine, int max_steps = 100000,
                                                 int* steps = nullptr);

}  // namespace xinfer::testing
