#include "lora_model_util.h"

#include <fmt/core.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "formats/safetensors.h"
#include "formats/safetensors_writer.h"
#include "test_util.h"

namespace xinfer::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::vector<float> AsF32(const Tensor& t) {
  std::vector<float> v(static_cast<size_t>(t.numel()));
  EXPECT_TRUE(WidenToF32(t, v.data()));
  return v;
}

// Writes named F32 / BF16 tensors as dir/<base_name>.safetensors.
void Write(const fs::path& dir, const std::string& base_name, DType dtype,
           const std::map<std::string, std::pair<Shape, std::vector<float>>>& tensors) {
  std::vector<TensorSpec> specs;
  for (const auto& [name, t] : tensors) specs.push_back({name, dtype, t.first});
  const Status s = WriteSafetensors(
      dir.string(), specs,
      [&](const TensorSpec& spec, int64_t first, int64_t count, uint8_t* bytes) {
        const float* src = tensors.at(spec.name).second.data() + first;
        for (int64_t i = 0; i < count; ++i) {
          if (dtype == DType::kF32) {
            std::memcpy(bytes + 4 * i, src + i, 4);
          } else {
            const uint16_t h = F32ToBf16(src[i]);
            std::memcpy(bytes + 2 * i, &h, 2);
          }
        }
      },
      uint64_t{1} << 40, {}, base_name);
  ASSERT_TRUE(s.ok()) << s.ToString();
}

}  // namespace

LoraFolders WriteLoraAdapter(const std::string& base, const LoraSpec& spec,
                             const std::string& name) {
  const std::string src = SharedDir() + "/models/" + base;
  const fs::path root =
      fs::temp_directory_path() / fmt::format("xinfer-lora-{}-{}", name, getpid());
  fs::remove_all(root);
  LoraFolders out{root / "adapter", root / "merged"};
  fs::create_directories(out.adapter);
  fs::create_directories(out.merged);
  for (const char* f : {"tokenizer.json", "tokenizer_config.json"})
    fs::copy_file(src + "/" + f, out.merged / f);
  json config = json::parse(std::ifstream(src + "/config.json"));
  config["torch_dtype"] = "float32";
  std::ofstream(out.merged / "config.json") << config.dump(2);
  json adapter_config = {{"peft_type", "LORA"},
                         {"base_model_name_or_path", base},
                         {"r", spec.rank},
                         {"lora_alpha", spec.alpha},
                         {"lora_dropout", 0.05},
                         {"target_modules", spec.targets},
                         {"bias", "none"},
                         {"fan_in_fan_out", false},
                         {"use_rslora", spec.rslora},
                         {"use_dora", false},
                         {"modules_to_save", nullptr},
                         {"rank_pattern", json::object()},
                         {"alpha_pattern", json::object()},
                         {"task_type", "CAUSAL_LM"}};
  std::ofstream(out.adapter / "adapter_config.json") << adapter_config.dump(2);

  auto store = WeightStore::OpenDir(src);
  EXPECT_TRUE(store.ok());
  const double scale = spec.rslora ? spec.alpha / std::sqrt(spec.rank) : spec.alpha / spec.rank;
  std::map<std::string, std::pair<Shape, std::vector<float>>> merged, lora;
  for (const std::string& tensor : (*store)->Names()) {
    Tensor t = (*store)->Get(tensor).value();
    merged[tensor] = {t.shape(), AsF32(t)};
  }
  std::mt19937 rng(spec.seed);
  std::normal_distribution<float> normal(0.f, 0.1f);
  const int layers = config["num_hidden_layers"];
  for (int l = 0; l < layers; ++l) {
    for (const std::string& target : spec.targets) {
      const std::string module = fmt::format(
          "model.layers.{}.{}.{}", l,
          target == "gate_proj" || target == "up_proj" || target == "down_proj" ? "mlp"
                                                                                : "self_attn",
          target);
      auto& [shape, w] = merged.at(module + ".weight");
      const int64_t rows = shape[0], cols = shape[1], r = spec.rank;
      // The adapter is stored in BF16: the merge uses the rounded values.
      std::vector<float> a(static_cast<size_t>(r * cols)), b(static_cast<size_t>(rows * r));
      for (float& x : a) x = Bf16ToF32(F32ToBf16(normal(rng)));
      for (float& x : b) x = spec.zero_b ? 0.f : Bf16ToF32(F32ToBf16(normal(rng)));
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) {
          double d = 0;
          for (int64_t k = 0; k < r; ++k) d += static_cast<double>(b[i * r + k]) * a[k * cols + j];
          w[i * cols + j] = static_cast<float>(w[i * cols + j] + scale * d);
        }
      lora["base_model.model." + module + ".lora_A.weight"] = {{r, cols}, std::move(a)};
      lora["base_model.model." + module + ".lora_B.weight"] = {{rows, r}, std::move(b)};
    }
  }
  Write(out.adapter, "adapter_model", DType::kBF16, lora);
  Write(out.merged, "model", DType::kF32, merged);
  return out;
}

}  // namespace xinfer::testing
