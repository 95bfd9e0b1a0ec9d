// The golden files of the shared tiny models (../shared/golden/logits/<model>/golden.json and a
// <prompt>.logits.f32 per prompt, made by an independent float64 implementation) and the check
// that the integration tests make against them. Needs xinfer_model; helpers that need no model
// are in test_util.h.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "model/causal_lm.h"

namespace xinfer::testing {

// Float32 kernels against the float64 reference: the last-position logits may differ by this
// much, so greedy tokens are compared only while the reference's top-2 gap is larger.
inline constexpr double kGoldenLogitTolerance = 2e-2;
inline constexpr double kGoldenGapThreshold = 0.05;
// With `--dtype bfloat16` every projection input is rounded to BF16 (2^-9 relative), so the error
// grows with the logits: allowed 2e-2 + 2^-8 x the largest |reference logit| (measured: 0.018 /
// 0.033 on the random tiny Qwen2 / Qwen3 with logits up to 3.7 — the Qwen3's 0.032 before its
// attention took BF16 products (AttentionGroupBf16) — and 0.071 on the trained AWQ TinyStories,
// up to 19).
inline constexpr double kBf16ActivationLogitTolerance = 2e-2;
inline constexpr double kBf16ActivationRelativeTolerance = 1.0 / 256;
inline constexpr double kBf16ActivationGapThreshold = 0.15;
// With `--dtype bfloat16` on an F16 checkpoint (AWQ's table and lm_head) the weights lose three
// mantissa bits as well: 2^-7 x the largest |reference logit| (measured on the AWQ TinyStories,
// logits up to 15: 0.046 with the W4A16 panels' F32 x, 0.099 with BF16 x in the 4-bit layers too,
// as on AVX512-BF16 CPUs since session 25).
inline constexpr double kBf16WeightsRelativeTolerance = 1.0 / 128;
// With `--int8-activations` the 4-bit / Q8_0 projections take x quantized to int8 per block of 32
// (half a step of max|x| / 127 per element): allowed 5e-2 + 1/48 x the largest |reference logit|
// (measured: 0.11-0.24 on the trained AWQ TinyStories, logits up to 15; its greedy stories part
// from the reference where the top-2 gap is 0.04 at most).
inline constexpr double kInt8ActivationLogitTolerance = 5e-2;
inline constexpr double kInt8ActivationRelativeTolerance = 1.0 / 48;
inline constexpr double kInt8ActivationGapThreshold = 0.15;

nlohmann::json ReadJson(const std::string& path);

// One prompt of a golden.json.
struct GoldenPrompt {
  std::string name;
  std::optional<std::string> text;  // the prompt's text, where the golden file records it
  std::vector<int32_t> ids;
  std::vector<int32_t> greedy;          // the reference's greedy continuation
  std::vector<double> greedy_top2_gap;  // its top-2 logit gap at each greedy step
  std::vector<float> logits;            // last-position logits of `ids`
};

// Reads <golden_dir>/golden.json and every prompt's logits. A missing field throws (the test
// fails with nlohmann's message); no prompts at all is a test failure.
std::vector<GoldenPrompt> ReadLogitsGolden(const std::string& golden_dir);

// Logits of the last position after prefilling `ids` into a fresh sequence.
std::vector<float> LastLogits(CausalLM& model, Backend& backend, const std::vector<int32_t>& ids);

// The golden logits check: for every prompt, last-position logits within kGoldenLogitTolerance
// of the reference, and greedy tokens equal to the reference's while its top-2 gap is above
// kGoldenGapThreshold (after the first allowed divergence the continuations are no longer
// comparable).
// The allowed logit difference is logit_tolerance + relative_tolerance x the prompt's largest
// |reference logit|. `kv_dtype`: the KV cache's element type. Returns the largest logit
// difference seen.
double ExpectMatchesGolden(CausalLM& model, Backend& backend, const std::string& golden_dir,
                           double logit_tolerance = kGoldenLogitTolerance,
                           double gap_threshold = kGoldenGapThreshold,
                           double relative_tolerance = 0, DType kv_dtype = DType::kF32);

}  // namespace xinfer::testing
