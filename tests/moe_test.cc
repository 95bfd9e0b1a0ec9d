// Mixture-of-experts layers (Qwen3MoeForCausalLM) checked without a MoE reference: checkpoints
// built here from the tiny Qwen3 whose sparse layers must compute its dense MLP exactly, so they
// must match the independent float64 reference's golden logits.
//  - Identical experts: any routing with renormalized weights (norm_topk_prob) gives the MLP.
//  - The MLP's 192 intermediate features cut into 4 experts of 48, every expert routed (top 4 of
//    4) with a zero router (weights 1/4 each) and each down_proj scaled by 4: the experts' sum is
//    the MLP. This one checks that each expert computes its own slice and the outputs are added.
#include <gtest/gtest.h>

#include <filesystem>

#include "golden_util.h"
#include "model/causal_lm.h"
#include "moe_model_util.h"
#include "test_util.h"

namespace xinfer {
namespace {

namespace fs = std::filesystem;
using testing::MoeExperts;

class MoeGoldenTest : public ::testing::TestWithParam<std::pair<MoeExperts, int>> {};

TEST_P(MoeGoldenTest, SparseLayersComputeTheDenseMlpOfTheReference) {
  XI_REQUIRE_SHARED("models/tiny-qwen3");
  XI_REQUIRE_SHARED("golden/logits/tiny-qwen3/golden.json");
  const auto [kind, top_k] = GetParam();
  // Identical experts under a random router; slices under a zero (uniform) one.
  const fs::path dir =
      testing::WriteMoeModel(kind, top_k, kind == MoeExperts::kIdentical, std::to_string(top_k));
  auto backend = CreateCpuBackend();
  auto model = LoadCausalLM(dir.string(), *backend);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  EXPECT_EQ((*model)->config().architecture, "Qwen3MoeForCausalLM");
  EXPECT_TRUE((*model)->config().IsSparseLayer(0));
  testing::ExpectMatchesGolden(**model, *backend,
                               testing::SharedDir() + "/golden/logits/tiny-qwen3");
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Routings, MoeGoldenTest,
                         ::testing::Values(std::pair{MoeExperts::kIdentical, 2},
                                           std::pair{MoeExperts::kIdentical, 1},
                                           std::pair{MoeExperts::kSlices, testing::kMoeExperts}),
                         [](const auto& info) {
                           return fmt::format("{}_top{}",
                                              info.param.first == MoeExperts::kIdentical
                                                  ? "IdenticalExperts"
                                                  : "ExpertSlices",
                                              info.param.second);
                         });

}  // namespace
}  // namespace xinfer
