#include "engine/speculative_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace xinfer {
namespace {

using ::testing::HasSubstr;

TEST(SpeculativeConfigTest, ReadsVllmsNgramSettingsWithItsDefaults) {
  auto off = ParseSpeculativeConfig("");
  ASSERT_TRUE(off.ok());
  EXPECT_FALSE(off->enabled());

  auto c = ParseSpeculativeConfig(R"({"method": "ngram", "num_speculative_tokens": 4})");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(c->enabled());
  EXPECT_EQ(c->num_speculative_tokens, 4);
  EXPECT_EQ(c->prompt_lookup_min, 5);  // vLLM's defaults when neither is given
  EXPECT_EQ(c->prompt_lookup_max, 5);
  EXPECT_EQ(c->disable_by_batch_size, 0);

  // Each bound defaults to the other.
  c = ParseSpeculativeConfig(R"({"method": "[ngram]", "num_speculative_tokens": 2,
                                 "prompt_lookup_max": 3})");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->prompt_lookup_min, 3);
  EXPECT_EQ(c->prompt_lookup_max, 3);
  c = ParseSpeculativeConfig(R"({"model": "ngram", "num_speculative_tokens": 2,
                                 "prompt_lookup_min": 2, "disable_by_batch_size": 8,
                                 "disable_log_stats": true, "prompt_lookup_max": null})");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->prompt_lookup_min, 2);
  EXPECT_EQ(c->prompt_lookup_max, 2);
  EXPECT_EQ(c->disable_by_batch_size, 8);
  c = ParseSpeculativeConfig(R"({"method": "ngram_gpu", "num_speculative_tokens": 1,
                                 "prompt_lookup_min": 1, "prompt_lookup_max": 4})");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->prompt_lookup_min, 1);
  EXPECT_EQ(c->prompt_lookup_max, 4);
}

TEST(SpeculativeConfigTest, RefusesWhatItCannotRunByName) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{", "must be a JSON object, got '{'"},
      {R"("ngram")", "must be a JSON object"},
      {R"({"num_speculative_tokens": 3})", "needs a method (\"ngram\")"},
      {R"({"method": "eagle3", "model": "m", "num_speculative_tokens": 3})",
       "method 'eagle3' is not supported; method \"ngram\" (prompt lookup) is"},
      {R"({"method": "mtp", "num_speculative_tokens": 1})", "method 'mtp' is not supported"},
      {R"({"model": "Qwen/Qwen3-0.6B", "num_speculative_tokens": 3})",
       "a draft model ('Qwen/Qwen3-0.6B') is not supported"},
      {R"({"method": 3, "num_speculative_tokens": 3})", "method must be a string, got 3"},
      {R"({"method": "ngram"})", "needs num_speculative_tokens"},
      {R"({"method": "ngram", "num_speculative_tokens": 0})",
       "num_speculative_tokens must be an integer in [1, 1024], got 0"},
      {R"({"method": "ngram", "num_speculative_tokens": 2.5})", "got 2.5"},
      {R"({"method": "ngram", "num_speculative_tokens": 4096})", "got 4096"},
      {R"({"method": "ngram", "num_speculative_tokens": 2, "prompt_lookup_min": 0})",
       "prompt_lookup_min must be an integer in [1, 1024], got 0"},
      {R"({"method": "ngram", "num_speculative_tokens": 2, "prompt_lookup_min": 3,
           "prompt_lookup_max": 2})",
       "prompt_lookup_min (3) must be <= prompt_lookup_max (2)"},
      {R"({"method": "ngram", "num_speculative_tokens": 2, "disable_log_stats": "no"})",
       "disable_log_stats must be a boolean"},
      {R"({"method": "ngram", "num_speculative_tokens": 2, "quantization": "awq"})",
       "speculative_config quantization is not available"},
  };
  for (const auto& [text, message] : cases) {
    auto c = ParseSpeculativeConfig(text);
    ASSERT_FALSE(c.ok()) << text;
    EXPECT_THAT(c.status().message(), HasSubstr(message)) << text;
  }
}

}  // namespace
}  // namespace xinfer
