#include "sampling/sampling_params.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include "sampling/test_values.h"

namespace xinfer {
namespace {

using testing::kInf;
using testing::kNaN;
constexpr int32_t kVocab = 1000;

struct BadCase {
  const char* what;
  std::function<void(SamplingParams&)> mutate;
  const char* param;  // expected first word of the message
};

TEST(SamplingParamsTest, DefaultsAreValid) { EXPECT_TRUE(SamplingParams{}.Validate(kVocab).ok()); }

TEST(SamplingParamsTest, RejectsEachOutOfRangeValueNamingTheParameter) {
  const BadCase cases[] = {
      {"negative temperature", [](auto& p) { p.temperature = -0.1f; }, "temperature"},
      {"NaN temperature", [](auto& p) { p.temperature = kNaN; }, "temperature"},
      {"infinite temperature", [](auto& p) { p.temperature = kInf; }, "temperature"},
      {"top_p 0", [](auto& p) { p.top_p = 0.0f; }, "top_p"},
      {"top_p > 1", [](auto& p) { p.top_p = 1.01f; }, "top_p"},
      {"NaN top_p", [](auto& p) { p.top_p = kNaN; }, "top_p"},
      {"top_k -2", [](auto& p) { p.top_k = -2; }, "top_k"},
      {"negative min_p", [](auto& p) { p.min_p = -0.01f; }, "min_p"},
      {"min_p > 1", [](auto& p) { p.min_p = 1.5f; }, "min_p"},
      {"NaN min_p", [](auto& p) { p.min_p = kNaN; }, "min_p"},
      {"repetition_penalty 0", [](auto& p) { p.repetition_penalty = 0.0f; }, "repetition_penalty"},
      {"negative repetition_penalty", [](auto& p) { p.repetition_penalty = -1.0f; },
       "repetition_penalty"},
      {"infinite repetition_penalty", [](auto& p) { p.repetition_penalty = kInf; },
       "repetition_penalty"},
      {"presence_penalty > 2", [](auto& p) { p.presence_penalty = 2.01f; }, "presence_penalty"},
      {"presence_penalty < -2", [](auto& p) { p.presence_penalty = -2.5f; }, "presence_penalty"},
      {"NaN presence_penalty", [](auto& p) { p.presence_penalty = kNaN; }, "presence_penalty"},
      {"frequency_penalty > 2", [](auto& p) { p.frequency_penalty = 3.0f; }, "frequency_penalty"},
      {"frequency_penalty < -2", [](auto& p) { p.frequency_penalty = -2.01f; },
       "frequency_penalty"},
      {"logit_bias negative id",
       [](auto& p) {
         p.logit_bias = {{-1, 1.0f}};
       },
       "logit_bias"},
      {"logit_bias id == vocab",
       [](auto& p) {
         p.logit_bias = {{kVocab, 1.0f}};
       },
       "logit_bias"},
      {"logit_bias > 100",
       [](auto& p) {
         p.logit_bias = {{5, 100.5f}};
       },
       "logit_bias"},
      {"logit_bias < -100",
       [](auto& p) {
         p.logit_bias = {{5, -101.0f}};
       },
       "logit_bias"},
      {"logit_bias NaN",
       [](auto& p) {
         p.logit_bias = {{5, kNaN}};
       },
       "logit_bias"},
      {"logit_bias duplicate",
       [](auto& p) {
         p.logit_bias = {{5, 1.0f}, {5, 2.0f}};
       },
       "logit_bias"},
      {"logprobs -2", [](auto& p) { p.logprobs = -2; }, "logprobs"},
      {"logprobs 21", [](auto& p) { p.logprobs = kMaxLogprobs + 1; }, "logprobs"},
      {"max_tokens 0", [](auto& p) { p.max_tokens = 0; }, "max_tokens"},
      {"empty stop",
       [](auto& p) {
         p.stop = {"ok", ""};
       },
       "stop"},
      {"invalid UTF-8 stop", [](auto& p) { p.stop = {"a\xC3"}; }, "stop"},
      {"stop_token_ids negative", [](auto& p) { p.stop_token_ids = {-3}; }, "stop_token_ids"},
      {"stop_token_ids == vocab",
       [](auto& p) {
         p.stop_token_ids = {1, kVocab};
       },
       "stop_token_ids"},
      {"min_tokens negative", [](auto& p) { p.min_tokens = -1; }, "min_tokens"},
      {"min_tokens > max_tokens", [](auto& p) { p.min_tokens = 17; }, "min_tokens"},
      {"n 0", [](auto& p) { p.n = 0; }, "n"},
      {"n > cap", [](auto& p) { p.n = kMaxN + 1; }, "n"},
  };
  for (const auto& c : cases) {
    SamplingParams p;
    c.mutate(p);
    const Status s = p.Validate(kVocab);
    ASSERT_FALSE(s.ok()) << c.what;
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << c.what;
    const std::string first_word = s.message().substr(0, s.message().find(' '));
    EXPECT_EQ(first_word, c.param) << c.what << ": " << s.message();
  }
}

TEST(SamplingParamsTest, AcceptsBoundaryValues) {
  const std::function<void(SamplingParams&)> cases[] = {
      [](auto& p) { p.temperature = 0.0f; },
      [](auto& p) { p.temperature = 1000.0f; },
      [](auto& p) { p.top_p = 1.0f; },
      [](auto& p) { p.top_p = 1e-6f; },
      [](auto& p) { p.top_k = -1; },
      [](auto& p) { p.top_k = 1; },
      [](auto& p) { p.top_k = kVocab * 10; },  // larger than the vocab: no-op, as vLLM
      [](auto& p) { p.min_p = 0.0f; },
      [](auto& p) { p.min_p = 1.0f; },
      [](auto& p) { p.repetition_penalty = 1e-3f; },
      [](auto& p) { p.presence_penalty = -2.0f; },
      [](auto& p) { p.frequency_penalty = 2.0f; },
      [](auto& p) {
        p.logit_bias = {{0, -100.0f}, {kVocab - 1, 100.0f}};
      },
      [](auto& p) { p.logprobs = 0; },
      [](auto& p) { p.logprobs = kMaxLogprobs; },
      [](auto& p) { p.max_tokens = 1; },
      [](auto& p) {
        p.stop = {"\xE2\x82\xAC", "</s>"};
      },
      [](auto& p) {
        p.stop_token_ids = {0, kVocab - 1};
      },
      [](auto& p) { p.min_tokens = p.max_tokens; },
      [](auto& p) { p.n = kMaxN; },
      [](auto& p) { p.seed = std::numeric_limits<uint64_t>::max(); },
  };
  int i = 0;
  for (const auto& mutate : cases) {
    SamplingParams p;
    mutate(p);
    EXPECT_TRUE(p.Validate(kVocab).ok()) << "case " << i << ": " << p.Validate(kVocab).message();
    ++i;
  }
}

TEST(SamplingParamsTest, GreedyBelowThreshold) {
  SamplingParams p;
  p.temperature = 0.0f;
  EXPECT_TRUE(p.greedy());
  p.temperature = kGreedyTemperature / 2;
  EXPECT_TRUE(p.greedy());
  p.temperature = 0.01f;
  EXPECT_FALSE(p.greedy());
}

TEST(SamplingParamsTest, ForChoiceOffsetsSeedAndClearsN) {
  SamplingParams p;
  p.n = 4;
  p.seed = 100;
  p.temperature = 0.7f;
  const SamplingParams c2 = p.ForChoice(2);
  EXPECT_EQ(c2.n, 1);
  EXPECT_EQ(c2.seed, 102u);
  EXPECT_EQ(c2.temperature, 0.7f);
  p.seed = std::numeric_limits<uint64_t>::max();
  EXPECT_EQ(p.ForChoice(1).seed, 0u);  // wraps, no UB
  p.seed.reset();
  EXPECT_FALSE(p.ForChoice(3).seed.has_value());
}

}  // namespace
}  // namespace xinfer
