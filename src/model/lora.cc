#include "model/lora.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "base/mapped_file.h"
#include "formats/safetensors.h"
#include "model/layers/decoder_shard.h"

namespace xinfer {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kTargetNames[kNumLoraTargets] = {"q_proj",    "k_proj",  "v_proj",   "o_proj",
                                                       "gate_proj", "up_proj", "down_proj"};

struct AdapterSettings {
  int rank = 0;
  double scale = 1;
};

// adapter_config.json: what PEFT's LoraConfig says, refusing what would change the math here.
StatusOr<AdapterSettings> ReadAdapterConfig(const std::string& path, int max_lora_rank) {
  XI_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  const json j = json::parse(text, nullptr, false);
  if (!j.is_object()) return InvalidArgument("{} is not a JSON object", path);
  auto flag = [&](const char* key) { return j.contains(key) && j[key].is_boolean() && j[key]; };
  auto nonempty = [&](const char* key) {
    return j.contains(key) && !j[key].is_null() && !j[key].empty();
  };
  if (j.contains("peft_type") && j["peft_type"] != "LORA")
    return Unimplemented("{}: peft_type {} is not supported (LORA is)", path,
                         j["peft_type"].dump());
  if (!j.contains("r") || !j["r"].is_number_integer() || j["r"].get<int64_t>() <= 0)
    return InvalidArgument("{}: 'r' must be a positive integer", path);
  if (!j.contains("lora_alpha") || !j["lora_alpha"].is_number())
    return InvalidArgument("{}: 'lora_alpha' must be a number", path);
  AdapterSettings s;
  const int64_t r = j["r"].get<int64_t>();
  if (r > max_lora_rank)
    return InvalidArgument("{}: LoRA rank {} is greater than max_lora_rank {} (--max-lora-rank)",
                           path, r, max_lora_rank);
  s.rank = static_cast<int>(r);
  const double alpha = j["lora_alpha"].get<double>();
  if (!std::isfinite(alpha)) return InvalidArgument("{}: 'lora_alpha' must be finite", path);
  s.scale = flag("use_rslora") ? alpha / std::sqrt(static_cast<double>(r)) : alpha / r;
  if (flag("use_dora"))
    return Unimplemented("{}: DoRA adapters (use_dora) are not supported", path);
  if (flag("fan_in_fan_out"))
    return Unimplemented("{}: fan_in_fan_out (Conv1D-style weights) is not supported", path);
  if (j.contains("bias") && j["bias"] != "none")
    return Unimplemented("{}: adapters with trained biases (bias {}) are not supported", path,
                         j["bias"].dump());
  for (const char* key : {"modules_to_save", "rank_pattern", "alpha_pattern"})
    if (nonempty(key))
      return Unimplemented("{}: '{}' is not supported (one rank and alpha for every projection)",
                           path, key);
  return s;
}

// "base_model.model.model.layers.3.self_attn.q_proj.lora_A.weight" → layer 3, q, A.
struct ParsedName {
  int layer = -1;
  int target = -1;
  bool is_a = false;
};
std::optional<ParsedName> ParseTensorName(const std::string& name) {
  const std::string peft = "base_model.model.";
  const std::string module = name.starts_with(peft) ? name.substr(peft.size()) : name;
  if (!module.starts_with("model.layers.")) return std::nullopt;
  const std::string digits = module.substr(13, module.find('.', 13) - 13);
  if (digits.empty() || digits.size() > 6 ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  ParsedName p;
  p.layer = std::stoi(digits);
  for (int t = 0; t < kNumLoraTargets; ++t) {
    for (const bool is_a : {true, false}) {
      if (module == LoraModuleName(p.layer, t) + (is_a ? ".lora_A.weight" : ".lora_B.weight")) {
        p.target = t;
        p.is_a = is_a;
        return p;
      }
    }
  }
  return std::nullopt;
}

}  // namespace

const char* LoraTargetName(int target) { return kTargetNames[target]; }

std::string LoraModuleName(int layer, int target) {
  return fmt::format("model.layers.{}.{}.{}", layer, target < kLoraGate ? "self_attn" : "mlp",
                     kTargetNames[target]);
}

std::array<int64_t, 2> LoraTargetShape(const ModelConfig& c, int target) {
  const int64_t h = c.hidden_size, q = static_cast<int64_t>(c.num_attention_heads) * c.head_dim,
                kv = static_cast<int64_t>(c.num_key_value_heads) * c.head_dim,
                i = c.intermediate_size;
  const std::array<int64_t, 2> shapes[kNumLoraTargets] = {{q, h}, {kv, h}, {kv, h}, {h, q},
                                                          {i, h}, {i, h},  {h, i}};
  return shapes[target];
}

StatusOr<std::shared_ptr<const LoraAdapter>> LoadLoraAdapter(const std::string& dir,
                                                             const ModelConfig& config,
                                                             int max_lora_rank, Backend& backend) {
  XI_ASSIGN_OR_RETURN(std::shared_ptr<LoraAdapter> adapter,
                      ReadLoraAdapter(dir, config, max_lora_rank));
  PlaceLoraAdapter(*adapter, backend);
  return std::shared_ptr<const LoraAdapter>(std::move(adapter));
}

StatusOr<std::shared_ptr<LoraAdapter>> ReadLoraAdapter(const std::string& dir,
                                                       const ModelConfig& config,
                                                       int max_lora_rank) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return NotFound("LoRA adapter folder {} does not exist", dir);
  const std::string config_path = (fs::path(dir) / "adapter_config.json").string();
  const std::string weights_path = (fs::path(dir) / "adapter_model.safetensors").string();
  if (!fs::exists(config_path, ec)) return NotFound("{}: no adapter_config.json", dir);
  if (!fs::exists(weights_path, ec)) {
    if (fs::exists(fs::path(dir) / "adapter_model.bin", ec))
      return Unimplemented(
          "{}: adapter_model.bin (a pickle) is not read; save the adapter as "
          "safetensors (PEFT's default)",
          dir);
    return NotFound("{}: no adapter_model.safetensors", dir);
  }
  XI_ASSIGN_OR_RETURN(AdapterSettings settings, ReadAdapterConfig(config_path, max_lora_rank));
  XI_ASSIGN_OR_RETURN(auto file, SafetensorsFile::Open(weights_path));

  auto adapter = std::make_shared<LoraAdapter>();
  adapter->path = dir;
  adapter->rank = settings.rank;
  adapter->layers.resize(static_cast<size_t>(config.num_hidden_layers));
  for (const auto& [name, info] : file->tensors()) {
    const std::optional<ParsedName> p = ParseTensorName(name);
    if (!p)
      return Unimplemented(
          "{}: tensor '{}' is not a LoRA A/B matrix of q/k/v/o/gate/up/down_proj (embedding, "
          "lm_head and expert adapters are not supported)",
          weights_path, name);
    if (p->layer >= config.num_hidden_layers)
      return InvalidArgument("{}: tensor '{}' is for layer {}; the model has {}", weights_path,
                             name, p->layer, config.num_hidden_layers);
    if (p->target >= kLoraGate && config.IsSparseLayer(p->layer))
      return Unimplemented(
          "{}: tensor '{}' adapts an MLP of a mixture-of-experts layer, which has "
          "none (expert adapters are not supported)",
          weights_path, name);
    const auto [out, in] = LoraTargetShape(config, p->target);
    const Shape want = p->is_a ? Shape{settings.rank, in} : Shape{out, settings.rank};
    if (info.shape != want)
      return InvalidArgument("{}: tensor '{}' is {}, expected {} (r = {})", weights_path, name,
                             ShapeToString(info.shape), ShapeToString(want), settings.rank);
    Tensor wide = NewHostTensor(DType::kF32, want);
    if (!WidenToF32(file->Get(info), wide.data<float>()))
      return InvalidArgument("{}: tensor '{}' is {}; LoRA weights must be F32, F16 or BF16",
                             weights_path, name, DTypeName(info.dtype));
    if (!p->is_a)
      for (int64_t i = 0; i < wide.numel(); ++i)
        wide.data<float>()[i] = static_cast<float>(wide.data<float>()[i] * settings.scale);
    LoraPair& pair = adapter->layers[p->layer][p->target];
    (p->is_a ? pair.a : pair.b) = std::move(wide);
  }
  size_t pairs = 0;
  for (size_t l = 0; l < adapter->layers.size(); ++l) {
    for (int t = 0; t < kNumLoraTargets; ++t) {
      LoraPair& pair = adapter->layers[l][t];
      if (pair.a.empty() != pair.b.empty())
        return InvalidArgument("{}: layer {} {} has lora_{} but not lora_{}", weights_path, l,
                               kTargetNames[t], pair.a.empty() ? "B" : "A",
                               pair.a.empty() ? "A" : "B");
      if (!pair.a.empty()) ++pairs;
    }
  }
  if (pairs == 0) return InvalidArgument("{}: the adapter has no LoRA tensors", weights_path);
  return adapter;
}

void PlaceLoraAdapter(LoraAdapter& adapter, Backend& backend) {
  std::vector<Backend::WeightToPlace> to_place;
  for (const LoraLayer& layer : adapter.layers)
    for (const LoraPair& pair : layer) {
      if (pair.a.empty()) continue;
      to_place.push_back({pair.a, /*linear=*/true});
      to_place.push_back({pair.b, /*linear=*/true});
    }
  std::vector<Tensor> placed = backend.PlaceWeights(to_place);
  size_t next = 0;
  for (LoraLayer& layer : adapter.layers) {
    for (LoraPair& pair : layer) {
      if (pair.a.empty()) continue;
      pair.a = placed[next++];
      pair.b = placed[next++];
      adapter.bytes += pair.a.size_bytes() + pair.b.size_bytes();
    }
  }
}

namespace {

// Host copies of rows [begin, end) / columns [begin, end) of a 2-D host F32 tensor.
Tensor CopyRowRange(const Tensor& t, int64_t begin, int64_t end) {
  const int64_t cols = t.dim(1);
  Tensor out = NewHostTensor(DType::kF32, {end - begin, cols});
  std::copy(t.data<float>() + begin * cols, t.data<float>() + end * cols, out.data<float>());
  return out;
}

Tensor CopyColumnRange(const Tensor& t, int64_t begin, int64_t end) {
  const int64_t rows = t.dim(0), cols = t.dim(1);
  Tensor out = NewHostTensor(DType::kF32, {rows, end - begin});
  for (int64_t r = 0; r < rows; ++r)
    std::copy(t.data<float>() + r * cols + begin, t.data<float>() + r * cols + end,
              out.data<float>() + r * (end - begin));
  return out;
}

}  // namespace

std::vector<LoraLayer> ShardLoraLayers(const LoraAdapter& whole, const DecoderShard& shard,
                                       const ModelConfig& config) {
  const int64_t hd = config.head_dim;
  // Each target's slice: of B's rows (column-parallel) or of A's columns (row-parallel).
  const std::pair<int64_t, int64_t> q{shard.q_head_begin * hd,
                                      (shard.q_head_begin + shard.q_heads) * hd};
  const std::pair<int64_t, int64_t> kv{shard.kv_head_begin * hd,
                                       (shard.kv_head_begin + shard.kv_heads) * hd};
  const std::pair<int64_t, int64_t> mlp{shard.intermediate_begin,
                                        shard.intermediate_begin + shard.intermediate};
  const std::pair<int64_t, int64_t> ranges[kNumLoraTargets] = {q, kv, kv, q, mlp, mlp, mlp};
  std::vector<LoraLayer> layers(whole.layers.size());
  for (size_t l = 0; l < whole.layers.size(); ++l)
    for (int t = 0; t < kNumLoraTargets; ++t) {
      const LoraPair& pair = whole.layers[l][t];
      if (pair.empty()) continue;
      const auto [begin, end] = ranges[t];
      LoraPair& part = layers[l][t];
      if (t == kLoraO || t == kLoraDown) {
        part.a = CopyColumnRange(pair.a, begin, end);
        part.b = pair.b;
      } else {
        part.a = pair.a;
        part.b = CopyRowRange(pair.b, begin, end);
      }
    }
  return layers;
}

}  // namespace xinfer
