// `xinfer inspect PATH`: architecture, shapes, dtypes, quantization and parameter count of a model
// folder or a GGUF file.
#include <fmt/core.h>

#include <cstring>
#include <map>
#include <nlohmann/json.hpp>

#include "cli/cli_util.h"
#include "cli/commands.h"
#include "formats/gguf.h"
#include "formats/hf_config.h"
#include "formats/safetensors.h"
#include "model/gguf_config.h"

namespace xinfer {
namespace {

// The model's shape, as both formats print it: architecture, sizes, attention heads, RoPE and how
// far its scaling stretches the context, experts.
void PrintShape(const ModelConfig& c) {
  fmt::print("architecture: {} (model_type {})\n", c.architecture, c.model_type);
  fmt::print("layers: {}  hidden: {}  intermediate: {}  vocab: {}\n", c.num_hidden_layers,
             c.hidden_size, c.intermediate_size, c.vocab_size);
  fmt::print("attention: {} query heads, {} kv heads, head_dim {}, rope_theta {}\n",
             c.num_attention_heads, c.num_key_value_heads, c.head_dim, c.rope_theta);
  const RopeScaling& r = c.rope_scaling;
  if (!r.type.empty())
    fmt::print("rope scaling: {} factor {}{}: max model length {}\n", r.type, r.factor,
               r.original_max_position_embeddings > 0
                   ? fmt::format(" (trained context {})", r.original_max_position_embeddings)
                   : "",
               DerivedMaxModelLen(c));
  if (!r.freq_factors.empty())
    fmt::print("rope frequency factors: {} (rope_freqs.weight)\n", r.freq_factors.size());
  if (c.is_moe())
    fmt::print("experts: {} per sparse layer (intermediate {}), {} per token{}{}\n", c.num_experts,
               c.moe_intermediate_size, c.num_experts_per_tok,
               c.norm_topk_prob ? ", weights renormalized" : "",
               c.shared_expert_intermediate_size > 0
                   ? fmt::format(", a gated shared expert (intermediate {})",
                                 c.shared_expert_intermediate_size)
                   : "");
}

struct InspectOptions {
  std::string path;
  bool json = false;
};

// A GGUF file: its model config (when the architecture is one we run), the metadata, and every
// tensor with its ggml type and bytes per parameter.
int RunInspectGguf(const InspectOptions& o) {
  auto file = GgufFile::Open(o.path);
  if (!file.ok()) return ReportError(file.status());
  const GgufFile& g = **file;
  auto config = GgufModelConfig(g);
  int64_t params = 0;
  size_t bytes = 0;
  std::map<std::string, int64_t> params_by_type;
  nlohmann::ordered_json tensors = nlohmann::ordered_json::array();
  for (const auto& t : g.tensors()) {
    const char* type = GgmlTypeName(t.type);
    params += t.num_elements;
    bytes += t.size;
    params_by_type[type] += t.num_elements;
    const double bpp = t.num_elements ? static_cast<double>(t.size) / t.num_elements : 0.0;
    tensors.push_back({{"name", t.name},
                       {"type", type},
                       {"shape", t.shape},
                       {"bytes", t.size},
                       {"bytes_per_parameter", bpp}});
  }
  nlohmann::ordered_json metadata = nlohmann::ordered_json::object();
  for (const auto& [key, value] : g.metadata()) metadata[key] = value.ToString();
  if (o.json) {
    nlohmann::ordered_json j = {{"format", "gguf"},
                                {"version", g.version()},
                                {"parameters", params},
                                {"weight_bytes", bytes}};
    if (config.ok()) {
      j["architecture"] = config->architecture;
      j["hidden_size"] = config->hidden_size;
      j["num_hidden_layers"] = config->num_hidden_layers;
      j["vocab_size"] = config->vocab_size;
      j["head_dim"] = config->head_dim;
      j["tie_word_embeddings"] = config->tie_word_embeddings;
    } else {
      j["config_error"] = config.status().ToString();
    }
    j["metadata"] = metadata;
    j["tensors"] = tensors;
    fmt::print("{}\n", j.dump(2));
    return 0;
  }
  fmt::print("GGUF v{} ({} tensors, {} metadata keys, alignment {})\n", g.version(),
             g.tensors().size(), g.metadata().size(), g.alignment());
  if (config.ok()) {
    PrintShape(*config);
  } else {
    fmt::print("not runnable here: {}\n", config.status().ToString());
  }
  fmt::print("metadata:\n");
  for (const auto& [key, value] : metadata.items())
    fmt::print("  {:<48} {}\n", key, value.get<std::string>());
  fmt::print("parameters: {} ({:.3f} M), {} bytes ({:.3f} bytes/parameter)\n", params, params / 1e6,
             bytes, params ? static_cast<double>(bytes) / params : 0.0);
  for (const auto& [type, n] : params_by_type) fmt::print("  {}: {} parameters\n", type, n);
  fmt::print("tensors ({}):\n", tensors.size());
  for (const auto& t : tensors)
    fmt::print("  {:<40} {:<6} {:<16} {:.4f} bytes/parameter\n", t["name"].get<std::string>(),
               t["type"].get<std::string>(), t["shape"].dump(),
               t["bytes_per_parameter"].get<double>());
  return 0;
}

// AWQ folders store a Linear as <prefix>.qweight/.qzeros/.scales: the quantization of each such
// prefix and its bytes per (logical) parameter, qweight being [in, out / 8] int32.
std::string AwqAnnotation(const WeightStore& store, const std::string& name, const ModelConfig& c) {
  if (c.quantization.method != "awq") return "";
  std::string prefix = name;
  for (const char* s : {".qweight", ".qzeros", ".scales"})
    if (name.ends_with(s)) prefix = name.substr(0, name.size() - std::strlen(s));
  const TensorInfo* qw = store.Find(prefix + ".qweight");
  if (qw == nullptr || qw->shape.size() != 2) return "";
  const int64_t logical = qw->shape[0] * qw->shape[1] * 8;
  size_t bytes = 0;
  for (const char* s : {".qweight", ".qzeros", ".scales"})
    if (const TensorInfo* t = store.Find(prefix + s)) bytes += t->size;
  return fmt::format("AWQ{}-g{} {:.4f} bytes/parameter", c.quantization.bits,
                     c.quantization.group_size, static_cast<double>(bytes) / logical);
}

int RunInspect(const InspectOptions& o) {
  if (o.path.ends_with(".gguf")) return RunInspectGguf(o);
  auto config = LoadHfConfig(o.path);
  if (!config.ok()) return ReportError(config.status());
  auto store = WeightStore::OpenDir(o.path);
  if (!store.ok()) return ReportError(store.status());
  int64_t params = 0;
  size_t bytes = 0;
  std::map<std::string, int64_t> params_by_dtype;
  nlohmann::ordered_json tensors = nlohmann::ordered_json::array();
  for (const auto& name : (*store)->Names()) {
    const TensorInfo* t = (*store)->Find(name);
    const int64_t n = NumElements(t->shape);
    const std::string quant = AwqAnnotation(**store, name, *config);
    // AWQ: a qweight int32 packs 32 / bits parameters; its qzeros and scales are storage of the
    // same parameters, not parameters of their own.
    int64_t logical = n;
    std::string kind = DTypeName(t->dtype);
    if (!quant.empty() && config->quantization.bits > 0) {
      logical = name.ends_with(".qweight") ? n * (32 / config->quantization.bits) : 0;
      kind = fmt::format("AWQ{}", config->quantization.bits);
    }
    params += logical;
    bytes += t->size;
    if (logical > 0) params_by_dtype[kind] += logical;
    const double bpp = n ? static_cast<double>(t->size) / n : 0.0;
    tensors.push_back({{"name", name},
                       {"dtype", DTypeName(t->dtype)},
                       {"shape", t->shape},
                       {"quantization", quant.empty() ? "none" : quant},
                       {"bytes_per_parameter", bpp}});
  }
  const ModelConfig& c = *config;
  if (o.json) {
    nlohmann::ordered_json j = {{"architecture", c.architecture},
                                {"model_type", c.model_type},
                                {"vocab_size", c.vocab_size},
                                {"hidden_size", c.hidden_size},
                                {"intermediate_size", c.intermediate_size},
                                {"num_hidden_layers", c.num_hidden_layers},
                                {"num_attention_heads", c.num_attention_heads},
                                {"num_key_value_heads", c.num_key_value_heads},
                                {"head_dim", c.head_dim},
                                {"tie_word_embeddings", c.tie_word_embeddings},
                                {"parameters", params},
                                {"weight_bytes", bytes},
                                {"tensors", tensors}};
    fmt::print("{}\n", j.dump(2));
    return 0;
  }
  PrintShape(c);
  fmt::print("tied embeddings: {}  max_position_embeddings: {}\n",
             c.tie_word_embeddings ? "yes" : "no", c.max_position_embeddings);
  if (!c.quantization.method.empty())
    fmt::print("quantization: {} {}-bit group {}\n", c.quantization.method, c.quantization.bits,
               c.quantization.group_size);
  fmt::print("parameters: {} ({:.3f} M), {} bytes ({:.2f} bytes/parameter)\n", params, params / 1e6,
             bytes, params ? static_cast<double>(bytes) / params : 0.0);
  for (const auto& [dtype, n] : params_by_dtype) fmt::print("  {}: {} parameters\n", dtype, n);
  fmt::print("tensors ({}):\n", tensors.size());
  for (const auto& t : tensors)
    fmt::print("  {:<56} {:<5} {:<14} {}\n", t["name"].get<std::string>(),
               t["dtype"].get<std::string>(), t["shape"].dump(),
               t["quantization"] == "none"
                   ? fmt::format("{:.4f} bytes/parameter", t["bytes_per_parameter"].get<double>())
                   : t["quantization"].get<std::string>());
  return 0;
}

}  // namespace

void AddInspectCommand(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<InspectOptions>();
  CLI::App* cmd = app.add_subcommand(
      "inspect", "Show a model folder's or GGUF file's architecture, tensors and quantization");
  cmd->add_option("path", opts->path, "Hugging Face model folder or .gguf file")->required();
  cmd->add_flag("--json", opts->json, "Print JSON");
  cmd->callback([opts, exit_code] { *exit_code = RunInspect(*opts); });
}

}  // namespace xinfer
