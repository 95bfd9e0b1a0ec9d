// Architecture registry: the one place that maps config.json's `architectures` to code.
#include <filesystem>
#include <map>

#include "model/arch/arch.h"
#include "model/awq.h"
#include "model/causal_lm.h"
#include "model/gguf_config.h"
#include "model/gguf_model.h"

namespace xinfer {
namespace {

using SpecFn = StatusOr<DecoderSpec> (*)(const ModelConfig&);

const std::map<std::string, SpecFn>& Registry() {
  static const std::map<std::string, SpecFn> registry = {
      {"LlamaForCausalLM", &LlamaSpec},
      {"Qwen2ForCausalLM", &Qwen2Spec},
      {"Qwen3ForCausalLM", &Qwen3Spec},
      {"Qwen3MoeForCausalLM", &Qwen3Spec},  // Qwen3's attention; sparse MLPs (decoder.cc)
      {"Qwen2MoeForCausalLM", &Qwen2Spec},  // Qwen2's attention; sparse MLPs with a shared expert
      // Classifiers: two lm_head rows (classifier_from_token) or their own score.weight head.
      {"LlamaForSequenceClassification", &LlamaSpec},
      {"Qwen2ForSequenceClassification", &Qwen2Spec},
      {"Qwen3ForSequenceClassification", &Qwen3Spec},
  };
  return registry;
}

}  // namespace

std::vector<std::string> SupportedArchitectures() {
  std::vector<std::string> names;
  for (const auto& [name, _] : Registry()) names.push_back(name);
  return names;
}

namespace {

// A llama.cpp GGUF file instead of a Hugging Face folder; it has no config.json to override.
StatusOr<bool> IsGgufFile(const std::string& model, const std::string& hf_overrides) {
  if (model.size() <= 5 || !model.ends_with(".gguf") || std::filesystem::is_directory(model))
    return false;
  if (!hf_overrides.empty())
    return InvalidArgument("hf_overrides apply to a Hugging Face folder's config.json, not to {}",
                           model);
  return true;
}

}  // namespace

StatusOr<ModelConfig> LoadModelConfig(const std::string& model, const std::string& hf_overrides) {
  XI_ASSIGN_OR_RETURN(const bool gguf, IsGgufFile(model, hf_overrides));
  if (!gguf) return LoadHfConfig(model, hf_overrides);
  XI_ASSIGN_OR_RETURN(auto file, GgufFile::Open(model));
  return GgufModelConfig(*file);
}

StatusOr<DecoderModelParts> LoadDecoderParts(const std::string& model_dir,
                                             const std::string& hf_overrides) {
  XI_ASSIGN_OR_RETURN(const bool gguf, IsGgufFile(model_dir, hf_overrides));
  if (gguf) return LoadGgufDecoderParts(model_dir);
  XI_ASSIGN_OR_RETURN(ModelConfig config, LoadHfConfig(model_dir, hf_overrides));
  auto it = Registry().find(config.architecture);
  if (it == Registry().end()) {
    std::string supported;
    for (const auto& n : SupportedArchitectures()) supported += (supported.empty() ? "" : ", ") + n;
    return Unimplemented("{}: unsupported architecture '{}' (supported: {})", model_dir,
                         config.architecture, supported);
  }
  if (!config.quantization.method.empty()) {
    Status q = CheckAwqConfig(config.quantization, model_dir);
    if (!q.ok()) return q.WithContext(model_dir + "/config.json");
  }
  XI_ASSIGN_OR_RETURN(DecoderSpec spec, it->second(config));
  XI_ASSIGN_OR_RETURN(auto store, WeightStore::OpenDir(model_dir));
  auto weights = LoadDecoderWeights(*store, config, spec);
  if (!weights.ok()) return weights.status().WithContext(model_dir);
  return DecoderModelParts{std::move(config), spec, std::move(weights).value()};
}

StatusOr<Tensor> LoadScoreHead(const std::string& model_dir, const ModelConfig& config) {
  XI_CHECK(config.has_score_head());
  XI_ASSIGN_OR_RETURN(auto store, WeightStore::OpenDir(model_dir));
  const TensorInfo* info = store->Find("score.weight");
  if (info == nullptr)
    return NotFound(
        "{}: {} needs its classification head 'score.weight' (or, for a reranker kept as a causal "
        "LM, classifier_from_token, e.g. Qwen3-Reranker: --hf-overrides '{{\"architectures\": "
        "[\"Qwen3ForSequenceClassification\"], \"classifier_from_token\": [\"no\", "
        "\"yes\"], \"is_original_qwen3_reranker\": true}}')",
        model_dir, config.architecture);
  XI_ASSIGN_OR_RETURN(Tensor t, store->Get("score.weight"));
  const int64_t labels = t.rank() == 2 ? t.dim(0) : 0;
  if (t.rank() != 2 || t.dim(1) != config.hidden_size || labels < 1 ||
      (!config.id2label.empty() && labels != static_cast<int64_t>(config.id2label.size())))
    return InvalidArgument("{}: score.weight is {}, expected [{}, {}]", model_dir,
                           ShapeToString(t.shape()),
                           config.id2label.empty() ? std::string("num_labels")
                                                   : std::to_string(config.id2label.size()),
                           config.hidden_size);
  Tensor head = NewHostTensor(DType::kF32, t.shape());
  if (!WidenToF32(t, head.data<float>()))
    return Unimplemented("{}: score.weight has dtype {}; F32, BF16 and F16 are supported",
                         model_dir, DTypeName(t.dtype()));
  return head;
}

StatusOr<std::unique_ptr<CausalLM>> LoadCausalLM(const std::string& model_dir, Backend& backend,
                                                 const ModelLoadOptions& options) {
  XI_ASSIGN_OR_RETURN(DecoderModelParts parts, LoadDecoderParts(model_dir, options.hf_overrides));
  return CreateDecoderLM(std::move(parts.config), parts.spec, std::move(parts.weights), backend,
                         options);
}

}  // namespace xinfer
