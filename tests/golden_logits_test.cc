// Last-position logits and greedy continuations of the shared tiny models against the golden
// files made by an independent float64 implementation (../shared/golden/logits/<model>/).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "model/causal_lm.h"
#include "test_util.h"

namespace xinfer {
namespace {

using nlohmann::json;

constexpr double kLogitTolerance = 2e-2;
constexpr double kGapThreshold = 0.05;

std::vector<float> ReadF32(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), {});
  std::vector<float> v(bytes.size() / 4);
  std::memcpy(v.data(), bytes.data(), v.size() * 4);
  return v;
}

int32_t Argmax(const std::vector<float>& v) {
  return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

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
  const std::string model_dir = testing::SharedDir() + "/models/" + c.model;
  const std::string golden_dir = testing::SharedDir() + "/golden/logits/" + c.golden;

  auto backend = CreateCpuBackend();
  auto model = LoadCausalLM(model_dir, *backend);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  const int vocab = (*model)->config().vocab_size;

  std::ifstream gf(golden_dir + "/golden.json");
  json golden = json::parse(gf);
  ASSERT_FALSE(golden["prompts"].empty());
  for (const auto& prompt : golden["prompts"]) {
    SCOPED_TRACE(prompt["name"].get<std::string>());
    std::vector<int32_t> ids = prompt["ids"].get<std::vector<int32_t>>();
    std::vector<int32_t> greedy = prompt["greedy"].get<std::vector<int32_t>>();
    std::vector<double> gaps = prompt["greedy_top2_gap"].get<std::vector<double>>();
    std::vector<float> ref = ReadF32(golden_dir + "/" + prompt["name"].get<std::string>() +
                                     ".logits.f32");
    ASSERT_EQ(static_cast<int>(ref.size()), vocab);

    SingleSequence seq(**model, *backend, static_cast<int64_t>(ids.size() + greedy.size()));
    std::vector<float> logits(vocab);
    ASSERT_TRUE(seq.Append(ids, logits).ok());
    double max_err = 0;
    for (int i = 0; i < vocab; ++i) max_err = std::max<double>(max_err, std::fabs(logits[i] - ref[i]));
    EXPECT_LT(max_err, kLogitTolerance);

    // Greedy: each token must match while the reference's top-2 gap is above our error; after
    // the first (allowed) divergence the continuations are no longer comparable.
    for (size_t step = 0; step < greedy.size(); ++step) {
      int32_t next = Argmax(logits);
      if (next != greedy[step]) {
        EXPECT_LE(gaps[step], kGapThreshold)
            << "step " << step << ": got " << next << ", reference " << greedy[step];
        break;
      }
      if (step + 1 == greedy.size()) break;
      std::vector<int32_t> one = {next};
      ASSERT_TRUE(seq.Append(one, logits).ok());
    }
  }
}

INSTANTIATE_TEST_SUITE_P(SharedModels, GoldenLogitsTest,
                         ::testing::Values(Case{"tiny-qwen3", "tiny-qwen3"},
                                           Case{"tiny-qwen2", "tiny-qwen2"},
                                           Case{"tinystories-656k", "tinystories-656k"},
                                           Case{"tinystories-656k-qwen2", "tinystories-656k"}),
                         [](const auto& info) {
                           std::string n = info.param.model;
                           for (char& c : n)
                             if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });

}  // namespace
}  // namespace xinfer
