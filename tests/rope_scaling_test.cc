// RoPE scaling (config.json's rope_scaling, vLLM's --rope-scaling) reaching the model's forward
// pass: equivalences between the scaling types that hold only if the frequencies and YaRN's
// cos/sin factor reach both q and k, on the shared tiny Qwen3 (head_dim 32, 4096 positions).
// The frequency formulas themselves: model/layers/rope_scaling_test.cc.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "golden_util.h"
#include "model/causal_lm.h"
#include "test_util.h"

namespace xinfer {
namespace {

constexpr const char* kModel = "models/tiny-qwen3";

std::vector<float> Logits(const std::string& overrides, const std::vector<int32_t>& ids) {
  auto backend = CreateCpuBackend();
  auto model =
      LoadCausalLM(testing::SharedDir() + "/" + kModel, *backend, {.hf_overrides = overrides});
  EXPECT_TRUE(model.ok()) << model.status().ToString();
  if (!model.ok()) return {};
  return testing::LastLogits(**model, *backend, ids);
}

// A prompt that runs past the 4096 trained positions: 4600 tokens of a repeating pattern.
std::vector<int32_t> LongPrompt() {
  std::vector<int32_t> ids;
  for (int i = 0; i < 4600; ++i) ids.push_back(100 + (i * 7919) % 5000);
  return ids;
}

TEST(RopeScalingModelTest, YarnWithoutExtrapolationOrScaleIsLinearScaling) {
  XI_REQUIRE_SHARED(kModel);
  const std::string yarn =
      R"({"rope_scaling": {"rope_type": "yarn", "factor": 4, "original_max_position_embeddings": 4096)";
  // YaRN with every pair interpolated and the cos/sin factor cancelled by attn_factor is linear
  // scaling; with the factor left in, q.k grows by (0.1 ln 4 + 1)^2 and the logits move.
  const double cancel = 1 / (0.1 * std::log(4.0) + 1);
  for (const std::vector<int32_t>& ids :
       {std::vector<int32_t>{9707, 11, 1879, 0, 576, 3974, 13876, 38835}, LongPrompt()}) {
    SCOPED_TRACE(ids.size());
    const std::vector<float> linear =
        Logits(R"({"rope_scaling": {"rope_type": "linear", "factor": 4}})", ids);
    const std::vector<float> as_linear = Logits(
        yarn + R"(, "extrapolation_factor": 0, "attn_factor": )" + std::to_string(cancel) + "}}",
        ids);
    const std::vector<float> scaled = Logits(yarn + R"(, "extrapolation_factor": 0}})", ids);
    const std::vector<float> yarn_logits = Logits(yarn + "}}", ids);
    const std::vector<float> plain = Logits("", ids);
    ASSERT_FALSE(linear.empty());
    EXPECT_LT(testing::MaxAbsDiff(as_linear, linear), 1e-4);
    EXPECT_GT(testing::MaxAbsDiff(scaled, linear), 1e-3);
    EXPECT_GT(testing::MaxAbsDiff(yarn_logits, scaled), 1e-3);  // high frequencies kept
    EXPECT_GT(testing::MaxAbsDiff(plain, linear), 1e-3);
    for (float x : yarn_logits) ASSERT_TRUE(std::isfinite(x));
  }
}

// Dynamic NTK is plain RoPE on a larger base: theta * (factor^2 - factor + 1)^(d / (d - 2)).
TEST(RopeScalingModelTest, DynamicNtkIsALargerRopeTheta) {
  XI_REQUIRE_SHARED(kModel);
  const std::vector<int32_t> ids = LongPrompt();
  const double theta = 1e6 * std::pow(3.0, 32.0 / 30);
  char base[64];
  std::snprintf(base, sizeof(base), "%.17g", theta);
  const std::vector<float> dynamic =
      Logits(R"({"rope_scaling": {"rope_type": "dynamic", "factor": 2}})", ids);
  ASSERT_FALSE(dynamic.empty());
  EXPECT_LT(
      testing::MaxAbsDiff(dynamic, Logits(std::string(R"({"rope_theta": )") + base + "}", ids)),
      1e-4);
  EXPECT_GT(testing::MaxAbsDiff(dynamic, Logits("", ids)), 1e-3);
}

}  // namespace
}  // namespace xinfer
