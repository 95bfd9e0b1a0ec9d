// `xinfer make-model --preset NAME --out DIR`: writes a Hugging Face folder (config.json,
// safetensors, tokenizer files) with random weights of a real model's shape, so benchmarks and
// the demo server need no download. Weights are seeded: the same command writes the same bytes.
#include <fmt/core.h>
#include <fmt/ranges.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/cli_util.h"
#include "cli/commands.h"
#include "formats/safetensors_writer.h"
#include "model/causal_lm.h"
#include "model/lora.h"

namespace xinfer {
namespace {

namespace fs = std::filesystem;
using nlohmann::ordered_json;

struct Preset {
  const char* name;
  const char* architecture;
  const char* model_type;
  int vocab, hidden, intermediate, layers, heads, kv_heads, head_dim, max_pos;
  bool tied;
  double rope_theta;
  int experts = 0, experts_per_tok = 0, moe_intermediate = 0;  // mixture of experts; 0: dense
  int shared_intermediate = 0;                                 // Qwen2-MoE's shared expert; 0: none
};

// Shapes of the public checkpoints (config.json of each), plus a tiny demo for `make serve` and
// tiny mixtures of experts (8 experts, 2 per token; Qwen3-MoE's and Qwen2-MoE's) for trying the
// MoE paths in seconds.
constexpr Preset kPresets[] = {
    {"qwen2.5-0.5b", "Qwen2ForCausalLM", "qwen2", 151936, 896, 4864, 24, 14, 2, 64, 32768, true,
     1e6},
    {"qwen2.5-1.5b", "Qwen2ForCausalLM", "qwen2", 151936, 1536, 8960, 28, 12, 2, 128, 32768, true,
     1e6},
    {"qwen2.5-7b", "Qwen2ForCausalLM", "qwen2", 152064, 3584, 18944, 28, 28, 4, 128, 32768, false,
     1e6},
    {"qwen3-0.6b", "Qwen3ForCausalLM", "qwen3", 151936, 1024, 3072, 28, 16, 8, 128, 40960, true,
     1e6},
    {"qwen3-8b", "Qwen3ForCausalLM", "qwen3", 151936, 4096, 12288, 36, 32, 8, 128, 40960, false,
     1e6},
    {"qwen3-30b-a3b", "Qwen3MoeForCausalLM", "qwen3_moe", 151936, 2048, 6144, 48, 32, 4, 128, 40960,
     false, 1e6, 128, 8, 768},
    {"qwen1.5-moe-a2.7b", "Qwen2MoeForCausalLM", "qwen2_moe", 151936, 2048, 5632, 24, 16, 16, 128,
     8192, false, 1e6, 60, 4, 1408, 5632},
    {"qwen2-57b-a14b", "Qwen2MoeForCausalLM", "qwen2_moe", 151936, 3584, 18944, 28, 28, 4, 128,
     32768, false, 1e6, 64, 8, 2560, 20480},
    {"demo", "Qwen3ForCausalLM", "qwen3", 151936, 64, 192, 2, 4, 2, 32, 4096, true, 1e6},
    {"demo-moe", "Qwen3MoeForCausalLM", "qwen3_moe", 151936, 64, 192, 2, 4, 2, 32, 4096, true, 1e6,
     8, 2, 64},
    {"demo-qwen2-moe", "Qwen2MoeForCausalLM", "qwen2_moe", 151936, 64, 192, 2, 4, 2, 32, 4096,
     false, 1e6, 8, 2, 64, 128},
};

std::string PresetNames() {
  std::string names;
  for (const Preset& p : kPresets) names += (names.empty() ? "" : ", ") + std::string(p.name);
  return names;
}

struct MakeModelOptions {
  std::string preset;
  std::string out;
  std::string dtype = "bf16";
  std::string tokenizer;
  uint64_t seed = 0;
  int layers = 0;
  uint64_t shard_bytes = 4ull << 30;
};

uint64_t Mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Uniform in [-a, a] with a = 0.02 * sqrt(3) (std 0.02, like HF's initializer_range); norm
// weights are ~1. Counter-based so any chunk can be produced independently.
void Fill(const TensorSpec& t, int64_t first, int64_t count, uint8_t* out, uint64_t seed) {
  const uint64_t key = Mix(seed ^ std::hash<std::string>{}(t.name));
  const bool is_norm = t.name.find("norm") != std::string::npos;
  const bool is_bias = t.name.find("bias") != std::string::npos;
  for (int64_t i = 0; i < count; ++i) {
    const double u = static_cast<double>(Mix(key + first + i) >> 11) * 0x1.0p-53 * 2 - 1;
    float v = is_norm ? static_cast<float>(1.0 + 0.1 * u)
                      : static_cast<float>(u * 0.0346410161514) * (is_bias ? 0.5f : 1.0f);
    if (t.dtype == DType::kBF16) {
      reinterpret_cast<uint16_t*>(out)[i] = F32ToBf16(v);
    } else if (t.dtype == DType::kF16) {
      reinterpret_cast<uint16_t*>(out)[i] = F32ToF16(v);
    } else {
      reinterpret_cast<float*>(out)[i] = v;
    }
  }
}

std::vector<TensorSpec> Tensors(const Preset& p, DType dt) {
  const int64_t h = p.hidden, q = static_cast<int64_t>(p.heads) * p.head_dim,
                kv = static_cast<int64_t>(p.kv_heads) * p.head_dim, i = p.intermediate;
  const bool qwen2 = std::string(p.model_type).starts_with("qwen2");
  const bool qwen3 = std::string(p.model_type).starts_with("qwen3");
  std::vector<TensorSpec> t = {{"model.embed_tokens.weight", dt, {p.vocab, h}}};
  for (int l = 0; l < p.layers; ++l) {
    const std::string s = fmt::format("model.layers.{}.", l);
    t.push_back({s + "input_layernorm.weight", dt, {h}});
    t.push_back({s + "self_attn.q_proj.weight", dt, {q, h}});
    t.push_back({s + "self_attn.k_proj.weight", dt, {kv, h}});
    t.push_back({s + "self_attn.v_proj.weight", dt, {kv, h}});
    if (qwen2) {
      t.push_back({s + "self_attn.q_proj.bias", dt, {q}});
      t.push_back({s + "self_attn.k_proj.bias", dt, {kv}});
      t.push_back({s + "self_attn.v_proj.bias", dt, {kv}});
    }
    if (qwen3) {
      t.push_back({s + "self_attn.q_norm.weight", dt, {p.head_dim}});
      t.push_back({s + "self_attn.k_norm.weight", dt, {p.head_dim}});
    }
    t.push_back({s + "self_attn.o_proj.weight", dt, {h, q}});
    t.push_back({s + "post_attention_layernorm.weight", dt, {h}});
    if (p.experts > 0) {
      const int64_t m = p.moe_intermediate;
      t.push_back({s + "mlp.gate.weight", dt, {p.experts, h}});
      for (int e = 0; e < p.experts; ++e) {
        const std::string x = fmt::format("{}mlp.experts.{}.", s, e);
        t.push_back({x + "gate_proj.weight", dt, {m, h}});
        t.push_back({x + "up_proj.weight", dt, {m, h}});
        t.push_back({x + "down_proj.weight", dt, {h, m}});
      }
      if (const int64_t sh = p.shared_intermediate; sh > 0) {
        t.push_back({s + "mlp.shared_expert.gate_proj.weight", dt, {sh, h}});
        t.push_back({s + "mlp.shared_expert.up_proj.weight", dt, {sh, h}});
        t.push_back({s + "mlp.shared_expert.down_proj.weight", dt, {h, sh}});
        t.push_back({s + "mlp.shared_expert_gate.weight", dt, {1, h}});
      }
      continue;
    }
    t.push_back({s + "mlp.gate_proj.weight", dt, {i, h}});
    t.push_back({s + "mlp.up_proj.weight", dt, {i, h}});
    t.push_back({s + "mlp.down_proj.weight", dt, {h, i}});
  }
  t.push_back({"model.norm.weight", dt, {h}});
  if (!p.tied) t.push_back({"lm_head.weight", dt, {p.vocab, h}});
  return t;
}

int RunMakeModel(const MakeModelOptions& o) {
  const Preset* preset = nullptr;
  for (const Preset& p : kPresets)
    if (o.preset == p.name) preset = &p;
  if (preset == nullptr)
    return ReportError(InvalidArgument("unknown preset '{}' (known: {})", o.preset, PresetNames()));
  Preset p = *preset;
  if (o.layers < 0) return ReportError(InvalidArgument("--layers must be positive"));
  if (o.layers > 0) p.layers = o.layers;
  DType dt;
  std::string torch_dtype;
  if (o.dtype == "bf16") {
    dt = DType::kBF16, torch_dtype = "bfloat16";
  } else if (o.dtype == "f16") {
    dt = DType::kF16, torch_dtype = "float16";
  } else if (o.dtype == "f32") {
    dt = DType::kF32, torch_dtype = "float32";
  } else {
    return ReportError(InvalidArgument("--dtype must be bf16, f16 or f32, got '{}'", o.dtype));
  }
  std::error_code ec;
  fs::create_directories(o.out, ec);
  if (ec) return ReportError(InvalidArgument("cannot create {}: {}", o.out, ec.message()));
  if (!o.tokenizer.empty()) {
    for (const char* f : {"tokenizer.json", "tokenizer_config.json"}) {
      fs::path src = fs::path(o.tokenizer) / f;
      if (!fs::exists(src)) return ReportError(NotFound("no {} in --tokenizer {}", f, o.tokenizer));
      fs::copy_file(src, fs::path(o.out) / f, fs::copy_options::overwrite_existing, ec);
      if (ec) return ReportError(InvalidArgument("cannot copy {}: {}", src.string(), ec.message()));
    }
  }
  const bool qwen3 = std::string(p.model_type).starts_with("qwen3");
  ordered_json config = {
      {"architectures", {p.architecture}},
      {"model_type", p.model_type},
      {"vocab_size", p.vocab},
      {"hidden_size", p.hidden},
      {"intermediate_size", p.intermediate},
      {"num_hidden_layers", p.layers},
      {"num_attention_heads", p.heads},
      {"num_key_value_heads", p.kv_heads},
      {"head_dim", p.head_dim},
      {"hidden_act", "silu"},
      {"max_position_embeddings", p.max_pos},
      {"rms_norm_eps", 1e-6},
      {"rope_theta", p.rope_theta},
      {"tie_word_embeddings", p.tied},
      {"torch_dtype", torch_dtype},
      {"bos_token_id", 151643},
      {"eos_token_id", qwen3 ? 151645 : 151643},
      {"xinfer_generated", {{"preset", p.name}, {"seed", o.seed}, {"weights", "random"}}}};
  if (std::string(p.name) == "demo") config["xinfer_demo_model"] = true;
  if (p.experts > 0) {
    config["num_experts"] = p.experts;
    config["num_experts_per_tok"] = p.experts_per_tok;
    config["moe_intermediate_size"] = p.moe_intermediate;
    // Qwen3-MoE renormalizes the picked experts' weights; Qwen2-MoE does not.
    config["norm_topk_prob"] = p.shared_intermediate == 0;
    if (p.shared_intermediate > 0)
      config["shared_expert_intermediate_size"] = p.shared_intermediate;
    config["decoder_sparse_step"] = 1;
    config["mlp_only_layers"] = ordered_json::array();
  }
  std::ofstream(fs::path(o.out) / "config.json") << config.dump(2) << "\n";
  auto tensors = Tensors(p, dt);
  int64_t params = 0;
  for (const auto& t : tensors) params += NumElements(t.shape);
  fmt::print(stderr, "make-model: {} ({} layers), {} parameters ({:.2f} GB as {}) -> {}\n", p.name,
             p.layers, params, params * DTypeSize(dt) / 1e9, o.dtype, o.out);
  const uint64_t seed = o.seed;
  Status s = WriteSafetensors(o.out, tensors,
                              [seed](const TensorSpec& t, int64_t first, int64_t count,
                                     uint8_t* out) { Fill(t, first, count, out, seed); },
                              o.shard_bytes, {{"format", "pt"}});
  if (!s.ok()) return ReportError(s);
  return 0;
}

struct MakeLoraOptions {
  std::string model;
  std::string out;
  int rank = 16;
  double alpha = 32;
  std::vector<std::string> targets = {"q_proj",    "k_proj",  "v_proj",   "o_proj",
                                      "gate_proj", "up_proj", "down_proj"};
  uint64_t seed = 0;
};

// A random PEFT LoRA adapter of `model`'s shape (BF16, every layer, the targets given), for
// benchmarks and trying --lora-modules without a download.
int RunMakeLora(const MakeLoraOptions& o) {
  if (o.rank < 1) return ReportError(InvalidArgument("--rank must be >= 1"));
  auto config = LoadModelConfig(o.model, "");
  if (!config.ok()) return ReportError(config.status());
  const ModelConfig& c = *config;
  std::vector<int> targets;
  for (const std::string& name : o.targets) {
    int t = 0;
    while (t < kNumLoraTargets && name != LoraTargetName(t)) ++t;
    if (t == kNumLoraTargets)
      return ReportError(InvalidArgument(
          "--targets: '{}' is not one of q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, "
          "down_proj",
          name));
    targets.push_back(t);
  }
  std::vector<TensorSpec> tensors;
  for (int l = 0; l < c.num_hidden_layers; ++l) {
    for (int t : targets) {
      if (t >= kLoraGate && c.IsSparseLayer(l)) continue;  // a mixture-of-experts layer: no MLP
      const std::string name = "base_model.model." + LoraModuleName(l, t);
      const auto [out, in] = LoraTargetShape(c, t);
      tensors.push_back({name + ".lora_A.weight", DType::kBF16, {o.rank, in}});
      tensors.push_back({name + ".lora_B.weight", DType::kBF16, {out, o.rank}});
    }
  }
  std::error_code ec;
  fs::create_directories(o.out, ec);
  if (ec) return ReportError(InvalidArgument("cannot create {}: {}", o.out, ec.message()));
  const uint64_t seed = o.seed;
  Status s = WriteSafetensors(
      o.out, tensors,
      [seed](const TensorSpec& t, int64_t first, int64_t count, uint8_t* out) {
        Fill(t, first, count, out, seed);
      },
      uint64_t{1} << 40, {{"format", "pt"}}, "adapter_model");
  if (!s.ok()) return ReportError(s);
  ordered_json adapter = {{"peft_type", "LORA"},
                          {"base_model_name_or_path", o.model},
                          {"r", o.rank},
                          {"lora_alpha", o.alpha},
                          {"lora_dropout", 0.0},
                          {"target_modules", o.targets},
                          {"bias", "none"},
                          {"task_type", "CAUSAL_LM"},
                          {"xinfer_generated", {{"seed", o.seed}, {"weights", "random"}}}};
  std::ofstream(fs::path(o.out) / "adapter_config.json") << adapter.dump(2) << "\n";
  fmt::print(stderr, "make-lora: rank {} on {} for {} ({} tensors) -> {}\n", o.rank,
             fmt::join(o.targets, ","), o.model, tensors.size(), o.out);
  return 0;
}

}  // namespace

void AddMakeLoraCommand(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<MakeLoraOptions>();
  CLI::App* cmd = app.add_subcommand(
      "make-lora", "Write a random LoRA adapter (PEFT layout) for a model's shape");
  cmd->add_option("--model", o->model, "The model folder or .gguf file it adapts")->required();
  cmd->add_option("--out", o->out, "Output folder")->required();
  cmd->add_option("--rank", o->rank, "LoRA rank r (default 16)");
  cmd->add_option("--alpha", o->alpha, "lora_alpha (default 32)");
  cmd->add_option("--targets", o->targets, "Projections to adapt (default all seven)")
      ->delimiter(',');
  cmd->add_option("--seed", o->seed, "Weight seed (default 0)");
  cmd->callback([o, exit_code] { *exit_code = RunMakeLora(*o); });
}

void AddMakeModelCommand(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<MakeModelOptions>();
  CLI::App* cmd =
      app.add_subcommand("make-model", "Write a random-weight model of a real shape (HF layout)");
  cmd->add_option("--preset", o->preset, PresetNames())->required();
  cmd->add_option("--out", o->out, "Output folder")->required();
  cmd->add_option("--dtype", o->dtype, "bf16 (default), f16 or f32");
  cmd->add_option("--tokenizer", o->tokenizer,
                  "Folder with tokenizer.json and tokenizer_config.json to copy");
  cmd->add_option("--seed", o->seed, "Weight seed (default 0)");
  cmd->add_option("--layers", o->layers, "Override the number of layers");
  cmd->add_option("--shard-bytes", o->shard_bytes, "Maximum bytes per safetensors shard");
  cmd->callback([o, exit_code] { *exit_code = RunMakeModel(*o); });
}

}  // namespace xinfer
