// `xinfer inspect PATH`: architecture, shapes, dtypes and parameter count of a model folder.
#include <fmt/core.h>

#include <map>
#include <nlohmann/json.hpp>

#include "cli/cli_util.h"
#include "cli/commands.h"
#include "formats/hf_config.h"
#include "formats/safetensors.h"

namespace xinfer {
namespace {

struct InspectOptions {
  std::string path;
  bool json = false;
};

int RunInspect(const InspectOptions& o) {
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
    int64_t n = NumElements(t->shape);
    params += n;
    bytes += t->size;
    params_by_dtype[DTypeName(t->dtype)] += n;
    tensors.push_back({{"name", name}, {"dtype", DTypeName(t->dtype)}, {"shape", t->shape}});
  }
  const ModelConfig& c = *config;
  if (o.json) {
    nlohmann::ordered_json j = {
        {"architecture", c.architecture}, {"model_type", c.model_type},
        {"vocab_size", c.vocab_size}, {"hidden_size", c.hidden_size},
        {"intermediate_size", c.intermediate_size}, {"num_hidden_layers", c.num_hidden_layers},
        {"num_attention_heads", c.num_attention_heads},
        {"num_key_value_heads", c.num_key_value_heads}, {"head_dim", c.head_dim},
        {"tie_word_embeddings", c.tie_word_embeddings}, {"parameters", params},
        {"weight_bytes", bytes}, {"tensors", tensors}};
    fmt::print("{}\n", j.dump(2));
    return 0;
  }
  fmt::print("architecture: {} (model_type {})\n", c.architecture, c.model_type);
  fmt::print("layers: {}  hidden: {}  intermediate: {}  vocab: {}\n", c.num_hidden_layers,
             c.hidden_size, c.intermediate_size, c.vocab_size);
  fmt::print("attention: {} query heads, {} kv heads, head_dim {}, rope_theta {}\n",
             c.num_attention_heads, c.num_key_value_heads, c.head_dim, c.rope_theta);
  fmt::print("tied embeddings: {}  max_position_embeddings: {}\n",
             c.tie_word_embeddings ? "yes" : "no", c.max_position_embeddings);
  if (!c.quantization.method.empty())
    fmt::print("quantization: {} {}-bit group {}\n", c.quantization.method, c.quantization.bits,
               c.quantization.group_size);
  fmt::print("parameters: {} ({:.3f} M), {} bytes ({:.2f} bytes/parameter)\n", params,
             params / 1e6, bytes, params ? static_cast<double>(bytes) / params : 0.0);
  for (const auto& [dtype, n] : params_by_dtype) fmt::print("  {}: {} parameters\n", dtype, n);
  fmt::print("tensors ({}):\n", tensors.size());
  for (const auto& t : tensors)
    fmt::print("  {:<56} {:<5} {}\n", t["name"].get<std::string>(),
               t["dtype"].get<std::string>(), t["shape"].dump());
  return 0;
}

}  // namespace

void AddInspectCommand(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<InspectOptions>();
  CLI::App* cmd = app.add_subcommand("inspect", "Show a model folder's architecture and tensors");
  cmd->add_option("path", opts->path, "Hugging Face model folder")->required();
  cmd->add_flag("--json", opts->json, "Print JSON");
  cmd->callback([opts, exit_code] { *exit_code = RunInspect(*opts); });
}

}  // namespace xinfer
