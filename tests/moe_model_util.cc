#include "moe_model_util.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "formats/safetensors.h"
#include "formats/safetensors_writer.h"
#include "test_util.h"

namespace xinfer::testing {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

fs::path WriteModel(const std::string& base, MoeExperts kind, SharedExpert shared, int top_k,
                    bool random_router, const std::string& name) {
  const bool qwen2 = base == "tiny-qwen2";
  const std::string src = SharedDir() + "/models/" + base;
  const fs::path dir = fs::temp_directory_path() / fmt::format("xinfer-moe-{}-{}", name, getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const char* f : {"tokenizer.json", "tokenizer_config.json"})
    fs::copy_file(src + "/" + f, dir / f);
  json config = json::parse(std::ifstream(src + "/config.json"));
  const int h = config["hidden_size"], inter = config["intermediate_size"];
  const int layers = config["num_hidden_layers"];
  const int e_size = kind == MoeExperts::kSlices ? inter / kMoeExperts : inter;
  config["architectures"] = {qwen2 ? "Qwen2MoeForCausalLM" : "Qwen3MoeForCausalLM"};
  config["model_type"] = qwen2 ? "qwen2_moe" : "qwen3_moe";
  config["num_experts"] = kMoeExperts;
  config["num_experts_per_tok"] = top_k;
  config["moe_intermediate_size"] = e_size;
  config["norm_topk_prob"] = !qwen2;
  if (shared != SharedExpert::kNone) config["shared_expert_intermediate_size"] = inter;
  config["decoder_sparse_step"] = 1;
  config["mlp_only_layers"] = json::array();
  std::ofstream(dir / "config.json") << config.dump(2);

  auto store = WeightStore::OpenDir(src);
  EXPECT_TRUE(store.ok());
  // Every tensor's BF16 elements, by name.
  std::map<std::string, std::vector<uint16_t>> out;
  std::vector<TensorSpec> specs;
  auto add = [&](const std::string& tensor, Shape shape, std::vector<uint16_t> values) {
    specs.push_back({tensor, DType::kBF16, shape});
    out[tensor] = std::move(values);
  };
  auto get = [&](const std::string& tensor) {
    Tensor t = (*store)->Get(tensor).value();
    EXPECT_EQ(t.dtype(), DType::kBF16);
    const uint16_t* p = t.data<uint16_t>();
    return std::pair{std::vector<uint16_t>(p, p + t.numel()), t.shape()};
  };
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.f, 1.f);
  for (const std::string& tensor : (*store)->Names()) {
    if (tensor.find(".mlp.") != std::string::npos) continue;
    auto [values, shape] = get(tensor);
    add(tensor, shape, std::move(values));
  }
  for (int l = 0; l < layers; ++l) {
    const std::string p = fmt::format("model.layers.{}.mlp.", l);
    auto [gate, gate_shape] = get(p + "gate_proj.weight");  // [inter, h]
    auto [up, up_shape] = get(p + "up_proj.weight");        // [inter, h]
    auto [down, down_shape] = get(p + "down_proj.weight");  // [h, inter]
    std::vector<uint16_t> router(static_cast<size_t>(kMoeExperts) * h, 0);
    if (random_router)
      for (uint16_t& r : router) r = F32ToBf16(normal(rng));
    add(p + "gate.weight", {kMoeExperts, h}, router);
    auto scaled = [](const std::vector<uint16_t>& v, float s) {
      std::vector<uint16_t> out;
      for (uint16_t x : v) out.push_back(F32ToBf16(s * Bf16ToF32(x)));
      return out;
    };
    if (shared != SharedExpert::kNone) {
      add(p + "shared_expert.gate_proj.weight", gate_shape, gate);
      add(p + "shared_expert.up_proj.weight", up_shape, up);
      add(p + "shared_expert.down_proj.weight", down_shape,
          scaled(down, shared == SharedExpert::kDoubledMlp ? 2.f : 0.f));
      add(p + "shared_expert_gate.weight", {1, h}, std::vector<uint16_t>(h, 0));
    }
    for (int e = 0; e < kMoeExperts; ++e) {
      const std::string x = fmt::format("{}experts.{}.", p, e);
      if (kind != MoeExperts::kSlices) {
        add(x + "gate_proj.weight", gate_shape, gate);
        add(x + "up_proj.weight", up_shape, up);
        add(x + "down_proj.weight", down_shape,
            scaled(down, kind == MoeExperts::kIdentical ? 1.f : 0.f));
        continue;
      }
      const size_t rows = static_cast<size_t>(e_size) * h, first = e * rows;
      add(x + "gate_proj.weight", {e_size, h},
          std::vector<uint16_t>(gate.begin() + first, gate.begin() + first + rows));
      add(x + "up_proj.weight", {e_size, h},
          std::vector<uint16_t>(up.begin() + first, up.begin() + first + rows));
      std::vector<uint16_t> slice;
      for (int r = 0; r < h; ++r)
        for (int c = e * e_size; c < (e + 1) * e_size; ++c)
          slice.push_back(F32ToBf16(4 * Bf16ToF32(down[static_cast<size_t>(r) * inter + c])));
      add(x + "down_proj.weight", {h, e_size}, std::move(slice));
    }
  }
  const Status s = WriteSafetensors(
      dir.string(), specs,
      [&](const TensorSpec& spec, int64_t first, int64_t count, uint8_t* bytes) {
        std::memcpy(bytes, out.at(spec.name).data() + first, count * sizeof(uint16_t));
      },
      uint64_t{1} << 40);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return dir;
}

}  // namespace

fs::path WriteMoeModel(MoeExperts kind, int top_k, bool random_router, const std::string& name) {
  return WriteModel("tiny-qwen3", kind, SharedExpert::kNone, top_k, random_router, name);
}

fs::path WriteQwen2MoeModel(MoeExperts kind, SharedExpert shared, int top_k,
                            const std::string& name) {
  // Slices need uniform routing (a zero router: softmax 1/4 each, exact, and not renormalized).
  return WriteModel("tiny-qwen2", kind, shared, top_k, kind != MoeExperts::kSlices, name);
}

}  // namespace xinfer::testing
