// Last-position logits and greedy continuations of the shared tiny models against the golden
// files made by an independent float64 implementation (../shared/golden/logits/<model>/).
#include <gtest/gtest.h>

#include "golden_util.h"
#include "model/causal_lm.h"
#include "test_util.h"

namespace xinfer {
namespace {

struct Case {
  std::string model;
  std::string golden;  // the relabelled Qwen2 copy of TinyStories shares the Llama golden
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.model; }

class GoldenLogitsTest : public ::testing::TestWithParam<Case> {};

TEST_P(GoldenLogitsTest, LastLogitsAndGreedyMatchReference) {
  const Case c = GetParam();
  XI_REQUIRE_SHARED("models/" + c.model);
  XI_REQUIRE_SHARED("golden/logits/" + c.golden + "/golden.json");
  auto backend = CreateCpuBackend();
  auto model = LoadCausalLM(testing::SharedDir() + "/models/" + c.model, *backend);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  testing::ExpectMatchesGolden(**model, *backend,
                               testing::SharedDir() + "/golden/logits/" + c.golden);
}

INSTANTIATE_TEST_SUITE_P(SharedModels, GoldenLogitsTest,
                         ::testing::Values(Case{"tiny-qwen3", "tiny-qwen3"},
                                           Case{"tiny-qwen2", "tiny-qwen2"},
                                           Case{"tinystories-656k", "tinystories-656k"},
                                           Case{"tinystories-656k-qwen2", "tinystories-656k"}),
                         [](const auto& info) { return testing::ParamName(info.param.model); });

}  // namespace
}  // namespace xinfer
