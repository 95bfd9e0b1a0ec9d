// Qwen3-MoE checkpoints built from the shared tiny Qwen3 for tests (moe_test.cc, engine tests).
#pragma once

#include <filesystem>
#include <string>

namespace xinfer::testing {

inline constexpr int kMoeExperts = 4;

// kIdentical: every expert is the dense MLP. kSlices: the MLP's intermediate features cut into
// kMoeExperts experts, each down_proj scaled by kMoeExperts (so that routing every expert with
// weight 1 / kMoeExperts sums to the MLP). kZeroOutput: the MLP with a zero down_proj (adds 0).
enum class MoeExperts { kIdentical, kSlices, kZeroOutput };

// A Qwen2-MoE shared expert: kDoubledMlp is the dense MLP with down_proj doubled under a zero
// gate (sigmoid 0.5: exactly the MLP); kZeroOutput adds 0.
enum class SharedExpert { kNone, kDoubledMlp, kZeroOutput };

// Writes the folder (config, tokenizer, model.safetensors) under the temp directory and returns
// it; attention, norms and embeddings are the tiny Qwen3's. `random_router`: the router's weights
// random (seeded), else zero (uniform routing). norm_topk_prob is true.
std::filesystem::path WriteMoeModel(MoeExperts kind, int top_k, bool random_router,
                                    const std::string& name);
// The same from the tiny Qwen2 as Qwen2MoeForCausalLM (norm_topk_prob false, its default), with
// a shared expert of the MLP's width; the router random, but zero for kSlices.
std::filesystem::path WriteQwen2MoeModel(MoeExperts kind, SharedExpert shared, int top_k,
                                         const std::string& name);

}  // namespace xinfer::testing
