// Last-position logits and greedy continuations of the shared tiny models against the golden
// files made by an independent float64 implementation (../shared/golden/logits/<model>/).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "backend/cpu/cpu_kernels.h"
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

// `--dtype bfloat16` (weights loaded as BF16, activations rounded to BF16 before them, and K/V in
// a BF16 cache, its --kv-cache-dtype auto): within the looser BF16 tolerance of the reference,
// and measurably not the F32 path (which would mean the option was ignored) on CPUs that have
// vdpbf16ps. TinyStories is an F32 checkpoint: its weights are rounded too, as vLLM does.
TEST_P(GoldenLogitsTest, Bf16ActivationsStayWithinBf16Tolerance) {
  const Case c = GetParam();
  XI_REQUIRE_SHARED("models/" + c.model);
  XI_REQUIRE_SHARED("golden/logits/" + c.golden + "/golden.json");
  const std::string golden = testing::SharedDir() + "/golden/logits/" + c.golden;
  auto backend = CreateCpuBackend({.bf16_activations = true});
  auto model =
      LoadCausalLM(testing::SharedDir() + "/models/" + c.model, *backend, {.bf16_weights = true});
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  const double bf16_diff = testing::ExpectMatchesGolden(
      **model, *backend, golden, testing::kBf16ActivationLogitTolerance,
      testing::kBf16ActivationGapThreshold, testing::kBf16ActivationRelativeTolerance,
      DType::kBF16);
  auto f32_backend = CreateCpuBackend();
  auto f32_model = LoadCausalLM(testing::SharedDir() + "/models/" + c.model, *f32_backend);
  ASSERT_TRUE(f32_model.ok()) << f32_model.status().ToString();
  const double f32_diff = testing::ExpectMatchesGolden(**f32_model, *f32_backend, golden);
  if (cpu::DetectCpuFeatures().avx512_bf16) {
    EXPECT_NE(bf16_diff, f32_diff) << "bf16_activations had no effect";
  }
  std::printf("%s: max |logit - reference| F32 activations %.4f, BF16 activations %.4f\n",
              c.model.c_str(), f32_diff, bf16_diff);
}

// `--kv-cache-dtype bfloat16` on the default F32 path: K and V rounded to BF16 when written
// (2^-9 relative, like the activations under --dtype bfloat16), so the same looser tolerance;
// and not the F32 cache's logits (which would mean the cache ignored its dtype).
TEST_P(GoldenLogitsTest, Bf16KvCacheStaysWithinBf16Tolerance) {
  const Case c = GetParam();
  XI_REQUIRE_SHARED("models/" + c.model);
  XI_REQUIRE_SHARED("golden/logits/" + c.golden + "/golden.json");
  const std::string golden = testing::SharedDir() + "/golden/logits/" + c.golden;
  auto backend = CreateCpuBackend();
  auto model = LoadCausalLM(testing::SharedDir() + "/models/" + c.model, *backend);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  const double bf16_kv_diff = testing::ExpectMatchesGolden(
      **model, *backend, golden, testing::kBf16ActivationLogitTolerance,
      testing::kBf16ActivationGapThreshold, testing::kBf16ActivationRelativeTolerance,
      DType::kBF16);
  const double f32_kv_diff = testing::ExpectMatchesGolden(**model, *backend, golden);
  EXPECT_NE(bf16_kv_diff, f32_kv_diff) << "the BF16 KV cache had no effect";
  std::printf("%s: max |logit - reference| F32 KV cache %.4f, BF16 KV cache %.4f\n",
              c.model.c_str(), f32_kv_diff, bf16_kv_diff);
}

// Weight placement (Backend::PlaceWeights): by default the weights are copied into huge-page
// memory and the model file is unmapped once loaded (the memory is not held twice); with
// mmap_weights the file stays mapped. The logits are bitwise the same either way, for a
// safetensors folder and a GGUF file.
bool FileIsMapped(const std::string& path) {
  std::FILE* maps = std::fopen("/proc/self/maps", "r");
  if (maps == nullptr) return false;
  char line[4096];
  bool found = false;
  while (!found && std::fgets(line, sizeof line, maps) != nullptr)
    found = std::string(line).find(path) != std::string::npos;
  std::fclose(maps);
  return found;
}

TEST(WeightPlacementTest, CopiedWeightsGiveTheMappedOnesLogitsAndReleaseTheFile) {
  for (const char* name : {"tiny-qwen3", "tiny-qwen3-q8_0.gguf"}) {
    XI_REQUIRE_SHARED(std::string("models/") + name);
    const std::string path = testing::SharedDir() + "/models/" + name;
    const std::string weights_file =
        std::filesystem::canonical(path.ends_with(".gguf") ? path : path + "/model.safetensors");
    auto mapped_backend = CreateCpuBackend({.mmap_weights = true});
    auto mapped = LoadCausalLM(path, *mapped_backend);
    ASSERT_TRUE(mapped.ok()) << mapped.status().ToString();
    EXPECT_TRUE(FileIsMapped(weights_file)) << weights_file;
    const std::vector<int32_t> ids = {1, 2, 3, 4, 5, 6, 7};
    const std::vector<float> want = testing::LastLogits(**mapped, *mapped_backend, ids);
    mapped->reset();
    EXPECT_FALSE(FileIsMapped(weights_file)) << weights_file;

    auto backend = CreateCpuBackend();
    auto placed = LoadCausalLM(path, *backend);
    ASSERT_TRUE(placed.ok()) << placed.status().ToString();
    EXPECT_FALSE(FileIsMapped(weights_file)) << weights_file << " still mapped after loading";
    const std::vector<float> got = testing::LastLogits(**placed, *backend, ids);
    ASSERT_EQ(got.size(), want.size());
    // Row tiles change where the bytes lie, not the arithmetic: bitwise the same logits. The
    // dense panels (AVX2 and AVX-512 CPUs) also change the kernel (a per-lane sum over K instead of
    // a vector one) for the dense layers, so there the logits agree to rounding (tiny Qwen3: 2.7e-6
    // at most, logits up to 3.8; the Q8_0 file's quantized layers stay bitwise).
    if (cpu::DensePanelsSupport(DType::kBF16, cpu::DetectCpuFeatures())) {
      for (size_t i = 0; i < got.size(); ++i)
        ASSERT_NEAR(got[i], want[i], 1e-3 * (1 + std::fabs(want[i]))) << name << " logit " << i;
    } else {
      EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0) << name;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(SharedModels, GoldenLogitsTest,
                         ::testing::Values(Case{"tiny-qwen3", "tiny-qwen3"},
                                           Case{"tiny-qwen2", "tiny-qwen2"},
                                           Case{"tinystories-656k", "tinystories-656k"},
                                           Case{"tinystories-656k-qwen2", "tinystories-656k"}),
                         [](const auto& info) { return testing::ParamName(info.param.model); });

}  // namespace
}  // namespace xinfer
