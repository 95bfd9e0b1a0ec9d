// Mixture-of-experts layers (Qwen3MoeForCausalLM) checked without a MoE reference: checkpoints
// built here from the tiny Qwen3 whose sparse layers must compute its dense MLP exactly, so they
// must match the independent float64 reference's golden logits.
//  - Identical experts: any routing with renormalized weights (norm_topk_prob) gives the MLP.
//  - The MLP's 192 intermediate features cut into 4 experts of 48, every expert routed (top 4 of
//    4) with a zero router (weights 1/4 each) and each down_proj scaled by 4: the experts' sum is
//    the MLP. This one checks that each expert computes its own slice and the outputs are added.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <tuple>

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

// Qwen2-MoE: the routed experts' weights are not renormalized and a shared expert, scaled by the
// sigmoid of its gate, is added. Either carries the tiny Qwen2's dense MLP while the other adds 0:
// the shared expert (down_proj doubled, gate 0: sigmoid 0.5) under randomly routed zero experts,
// or the MLP's 4 slices each routed with softmax(0) = 1/4 beside a zero shared expert. Both must
// give the float64 reference's golden logits of the tiny Qwen2.
TEST(Qwen2MoeGoldenTest, SharedExpertAndUnnormalizedRoutingComputeTheDenseMlp) {
  XI_REQUIRE_SHARED("models/tiny-qwen2");
  XI_REQUIRE_SHARED("golden/logits/tiny-qwen2/golden.json");
  for (const auto& [kind, shared, top_k] :
       {std::tuple{MoeExperts::kZeroOutput, testing::SharedExpert::kDoubledMlp, 2},
        std::tuple{MoeExperts::kSlices, testing::SharedExpert::kZeroOutput,
                   testing::kMoeExperts}}) {
    SCOPED_TRACE(kind == MoeExperts::kSlices ? "routed slices" : "shared expert");
    const fs::path dir = testing::WriteQwen2MoeModel(kind, shared, top_k, "qwen2");
    auto backend = CreateCpuBackend();
    auto model = LoadCausalLM(dir.string(), *backend);
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    EXPECT_EQ((*model)->config().architecture, "Qwen2MoeForCausalLM");
    EXPECT_FALSE((*model)->config().norm_topk_prob);
    EXPECT_EQ((*model)->config().shared_expert_intermediate_size, 160);
    testing::ExpectMatchesGolden(**model, *backend,
                                 testing::SharedDir() + "/golden/logits/tiny-qwen2");
    fs::remove_all(dir);
  }
  // Without its gate the shared expert is an error naming the tensor.
  const fs::path dir = testing::WriteQwen2MoeModel(MoeExperts::kZeroOutput,
                                                   testing::SharedExpert::kNone, 2, "qwen2-bad");
  {
    nlohmann::json config = nlohmann::json::parse(std::ifstream(dir / "config.json"));
    config["shared_expert_intermediate_size"] = 160;
    std::ofstream(dir / "config.json") << config.dump();
  }
  auto backend = CreateCpuBackend();
  auto model = LoadCausalLM(dir.string(), *backend);
  ASSERT_FALSE(model.ok());
  EXPECT_NE(model.status().message().find("model.layers.0.mlp.shared_expert.gate_proj.weight"),
            std::string::npos)
      << model.status().ToString();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace xinfer
