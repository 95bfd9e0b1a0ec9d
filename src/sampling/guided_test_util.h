// Sampled guided outputs for the guide tests: one definition, so the test files can share a
// (unity-build) translation unit.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "sampling/sampler.h"

namespace xinfer::testing {

// Samples 300 sequences under `p` (seeds 0..299) with noisy logits — N(0, 2) from one generator
// seeded `rng_seed`, plus `eos_bonus` on `eos` — of at most `max_steps` tokens each, and returns
// the texts of those that ended with `eos`. A failed step is a test failure.
inline std::vector<std::string> SampleEndedTexts(const SamplingParams& p,
                                                 const std::shared_ptr<const TokenVocabulary>& v,
                                                 int32_t eos, int max_steps, uint32_t rng_seed,
                                                 float eos_bonus = 0.0f) {
  std::mt19937 rng(rng_seed);
  std::normal_distribution<float> noise(0.0f, 2.0f);
  std::vector<std::string> ended;
  for (uint64_t seed = 0; seed < 300; ++seed) {
    Sampler s(p, {eos}, seed, v);
    std::vector<int32_t> out;
    std::string text;
    bool at_end = false;
    for (int step = 0; step < max_steps && !at_end; ++step) {
      std::vector<float> logits(v->size());
      for (float& l : logits) l = noise(rng);
      logits[static_cast<size_t>(eos)] += eos_bonus;
      auto r = s.Sample(logits, {}, out);
      if (!r.ok()) {
        ADD_FAILURE() << r.status().ToString();
        return ended;
      }
      out.push_back(r->token);
      at_end = r->token == eos;
      if (!at_end) text += v->bytes(static_cast<size_t>(r->token));
    }
    if (at_end) ended.push_back(text);
  }
  return ended;
}

}  // namespace xinfer::testing
