#include "engine/engine_config.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <utility>

#include "base/cpu_topology.h"
#include "engine/gguf_tokenizer_loader.h"
#include "engine/speculative_config.h"
#include "formats/hf_config.h"

namespace xinfer {

Status ValidateDtype(const std::string& dtype) {
  if (dtype == "half" || dtype == "float16")
    return InvalidArgument(
        "dtype {} is not supported by the CPU backend (F16 weights are computed in float32); use "
        "auto, bfloat16 or float32",
        dtype);
  if (dtype != "auto" && dtype != "bfloat16" && dtype != "float32" && dtype != "float")
    return InvalidArgument("dtype must be auto, bfloat16, float32 or float, got '{}'", dtype);
  return Status::Ok();
}

Status ValidateKvCacheDtype(const std::string& kv_cache_dtype) {
  if (kv_cache_dtype.rfind("fp8", 0) == 0)
    return InvalidArgument(
        "kv_cache_dtype {} is not supported by the CPU backend; use auto, bfloat16 or float32",
        kv_cache_dtype);
  if (kv_cache_dtype != "auto" && kv_cache_dtype != "bfloat16" && kv_cache_dtype != "float32" &&
      kv_cache_dtype != "float")
    return InvalidArgument("kv_cache_dtype must be auto, bfloat16, float32 or float, got '{}'",
                           kv_cache_dtype);
  return Status::Ok();
}

DType EngineConfig::KvCacheDType() const {
  if (kv_cache_dtype == "bfloat16") return DType::kBF16;
  if (kv_cache_dtype == "auto" && bf16_activations()) return DType::kBF16;
  return DType::kF32;
}

Status EngineConfig::Validate() const {
  if (model.empty()) return InvalidArgument("model: a model folder is required");
  if (block_size < 1 || block_size > 1024)
    return InvalidArgument("block_size must be in [1, 1024], got {}", block_size);
  if (num_gpu_blocks_override < 0)
    return InvalidArgument("num_gpu_blocks_override must be >= 0, got {}", num_gpu_blocks_override);
  if (kv_cache_memory < 0)
    return InvalidArgument("kv_cache_memory must be >= 0, got {}", kv_cache_memory);
  if (!(gpu_memory_utilization > 0 && gpu_memory_utilization <= 1))
    return InvalidArgument("gpu_memory_utilization must be in (0, 1], got {}",
                           gpu_memory_utilization);
  if (cpu_memory_budget < 0)
    return InvalidArgument("cpu_memory_budget must be >= 0, got {}", cpu_memory_budget);
  if (max_model_len < 0)
    return InvalidArgument("max_model_len must be >= 0, got {}", max_model_len);
  if (!rope_scaling.empty()) {
    const nlohmann::json r = nlohmann::json::parse(rope_scaling, nullptr, false);
    if (r.is_discarded() || !r.is_object())
      return InvalidArgument("rope_scaling must be a JSON object, got '{}'", rope_scaling);
  }
  if (!(rope_theta >= 0) || !std::isfinite(rope_theta))
    return InvalidArgument("rope_theta must be a positive number, got {}", rope_theta);
  if (max_num_seqs < 1) return InvalidArgument("max_num_seqs must be >= 1, got {}", max_num_seqs);
  if (max_num_batched_tokens < 0)
    return InvalidArgument("max_num_batched_tokens must be >= 0, got {}", max_num_batched_tokens);
  if (scheduling_policy != "fcfs" && scheduling_policy != "priority")
    return InvalidArgument("scheduling_policy must be 'fcfs' or 'priority', got '{}'",
                           scheduling_policy);
  if (threads < 0) return InvalidArgument("threads must be >= 0, got {}", threads);
  XI_RETURN_IF_ERROR(ValidateDtype(dtype));
  XI_RETURN_IF_ERROR(ValidateKvCacheDtype(kv_cache_dtype));
  if (tensor_parallel_size < 1)
    return InvalidArgument("tensor_parallel_size must be >= 1, got {}", tensor_parallel_size);
  XI_RETURN_IF_ERROR(ValidateThreadsBind(cpu_threads_bind));
  if (pipeline_parallel_size < 1)
    return InvalidArgument("pipeline_parallel_size must be >= 1, got {}", pipeline_parallel_size);
  if (pipeline_parallel_size > 1)
    return Unimplemented(
        "pipeline_parallel_size {}: pipeline parallelism is not implemented yet; on one machine "
        "use --tensor-parallel-size (one model split over the cores) or --data-parallel-size "
        "(one model per group of cores)",
        pipeline_parallel_size);
  if (data_parallel_size < 1)
    return InvalidArgument("data_parallel_size must be >= 1, got {}", data_parallel_size);
  if (threads > 0 && tensor_parallel_size * data_parallel_size > threads)
    return InvalidArgument("{} needs at least one thread per rank, got threads {}", RanksName(),
                           threads);
  if (max_logprobs < -1) return InvalidArgument("max_logprobs must be >= -1, got {}", max_logprobs);
  if (load_format != "auto" && load_format != "safetensors" && load_format != "gguf")
    return InvalidArgument(
        "load_format '{}' is not supported: auto, safetensors (a Hugging Face folder) or gguf (a "
        ".gguf file)",
        load_format);
  if (load_format != "auto" && (load_format == "gguf") != IsGgufModelPath(model))
    return InvalidArgument("load_format {} was given but the model {} is {}", load_format, model,
                           IsGgufModelPath(model) ? "a GGUF file" : "not a .gguf file");
  if (distributed_executor_backend != "mp" && distributed_executor_backend != "uni")
    return Unimplemented(
        "distributed_executor_backend '{}' is not available: ranks are threads of this process "
        "(mp or uni)",
        distributed_executor_backend);
  if (tokenizer_mode != "auto" && tokenizer_mode != "hf" && tokenizer_mode != "slow")
    return Unimplemented(
        "tokenizer_mode '{}' is not available: the tokenizer is read from tokenizer.json (auto, "
        "hf or slow)",
        tokenizer_mode);
  if (!override_generation_config.empty()) {
    GenerationConfig unused;
    XI_RETURN_IF_ERROR(OverrideGenerationConfig(override_generation_config, unused));
  }
  if (generation_config.empty())
    return InvalidArgument("generation_config must be auto, vllm or a folder, got ''");
  if (task != "auto" && task != "generate" && task != "embed" && task != "score")
    return Unimplemented(
        "task '{}' is not available: generate (text), embed (embeddings, last-token pooling) or "
        "score (a reranker's scores)",
        task);
  XI_RETURN_IF_ERROR(ParsePoolerConfig(pooler_config).status());
  if (device != "auto" && device != "cpu")
    return Unimplemented("device '{}' is not available: this build has the cpu backend (auto, cpu)",
                         device);
  if (!lora_modules.empty() && !enable_lora)
    return InvalidArgument("--lora-modules needs --enable-lora");
  if (max_lora_rank < 1)
    return InvalidArgument("max_lora_rank must be >= 1, got {}", max_lora_rank);
  if (max_loras < 1) return InvalidArgument("max_loras must be >= 1, got {}", max_loras);
  std::vector<std::string> names;
  for (const std::string& m : lora_modules) {
    XI_ASSIGN_OR_RETURN(LoraModule module, ParseLoraModule(m));
    if (std::find(names.begin(), names.end(), module.name) != names.end())
      return InvalidArgument("--lora-modules names '{}' twice", module.name);
    names.push_back(module.name);
  }
  XI_ASSIGN_OR_RETURN(const SpeculativeConfig spec, ParseSpeculativeConfig(speculative_config));
  if (spec.enabled() && task == "embed")
    return InvalidArgument("--speculative-config is for text generation, not task {}", task);
  if (!quantization.empty() && quantization != "awq" && quantization != "gguf")
    return InvalidArgument("quantization '{}' is not supported (supported: awq, gguf)",
                           quantization);
  return Status::Ok();
}

Status EngineConfig::ResolveModelLimits(int derived_max_model_len) {
  const int model_len = derived_max_model_len > 0 ? derived_max_model_len : 4096;
  if (max_model_len == 0) max_model_len = model_len;
  if (max_model_len > model_len)
    return InvalidArgument(
        "max_model_len {} exceeds the model's maximum length {} (max_position_embeddings, times "
        "the rope_scaling factor if any)",
        max_model_len, model_len);
  if (max_num_batched_tokens == 0)
    max_num_batched_tokens = enable_chunked_prefill ? std::max(2048, max_num_seqs)
                                                    : std::max(max_model_len, max_num_seqs);
  return Status::Ok();
}

std::string EngineConfig::RanksName() const {
  return data_parallel_size > 1 ? fmt::format("tensor_parallel_size {} x data_parallel_size {}",
                                              tensor_parallel_size, data_parallel_size)
                                : fmt::format("tensor_parallel_size {}", tensor_parallel_size);
}

StatusOr<bool> ParsePoolerConfig(const std::string& text) {
  if (text.empty()) return true;
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return InvalidArgument("pooler_config must be a JSON object, got '{}'", text);
  bool normalize = true;
  for (const auto& [key, value] : j.items()) {
    if (key == "pooling_type") {
      if (value != "LAST" && value != "last")
        return Unimplemented(
            "pooler_config pooling_type {} is not available: LAST (the last token's hidden "
            "state, as Qwen's embedding models pool)",
            value.dump());
    } else if (key == "normalize") {
      if (!value.is_boolean()) return InvalidArgument("pooler_config normalize must be a boolean");
      normalize = value.get<bool>();
    } else {
      return Unimplemented("pooler_config {} is not available (pooling_type, normalize are)", key);
    }
  }
  return normalize;
}

bool EngineConfig::PoolerNormalizes() const {
  const StatusOr<bool> n = ParsePoolerConfig(pooler_config);
  return n.ok() && *n;
}

std::string EngineConfig::ConfigOverrides() const {
  if (rope_scaling.empty() && rope_theta == 0) return hf_overrides;
  nlohmann::json o = hf_overrides.empty() ? nlohmann::json::object()
                                          : nlohmann::json::parse(hf_overrides, nullptr, false);
  if (o.is_discarded() || !o.is_object()) return hf_overrides;
  if (!rope_scaling.empty())
    o["rope_scaling"] = nlohmann::json::parse(rope_scaling, nullptr, false);
  if (rope_theta > 0) o["rope_theta"] = rope_theta;
  return o.dump();
}

std::string EngineConfig::ToString() const {
  const std::string overrides = ConfigOverrides();
  return fmt::format(
      "model={} block_size={} num_gpu_blocks_override={} kv_cache_memory={} "
      "gpu_memory_utilization={} cpu_memory_budget={} max_model_len={} max_num_seqs={} "
      "max_num_batched_tokens={} enable_chunked_prefill={} enable_prefix_caching={} "
      "scheduling_policy={} threads={} mmap_weights={} int8_activations={} dtype={} "
      "kv_cache_dtype={} ({}) quantization={} tensor_parallel_size={} cpu_threads_bind={} "
      "pipeline_parallel_size={} data_parallel_size={} device={} seed={} tokenizer={} "
      "generation_config={} override_generation_config={} max_logprobs={} task={} "
      "pooler_config={} hf_overrides={} enable_lora={} lora_modules={} max_lora_rank={} "
      "max_loras={} speculative_config={}",
      model, block_size, num_gpu_blocks_override, kv_cache_memory, gpu_memory_utilization,
      cpu_memory_budget, max_model_len, max_num_seqs, max_num_batched_tokens,
      enable_chunked_prefill, enable_prefix_caching, scheduling_policy, threads, mmap_weights,
      int8_activations.has_value() ? (*int8_activations ? "true" : "false") : "auto", dtype,
      kv_cache_dtype, KvCacheDType() == DType::kBF16 ? "bfloat16" : "float32",
      quantization.empty() ? "auto" : quantization, tensor_parallel_size, cpu_threads_bind,
      pipeline_parallel_size, data_parallel_size, device,
      seed.has_value() ? std::to_string(*seed) : "random", TokenizerPath(), generation_config,
      override_generation_config.empty() ? "none" : override_generation_config, max_logprobs,
      embeds() || scores() ? task : "generate", pooler_config.empty() ? "default" : pooler_config,
      overrides.empty() ? "none" : overrides, enable_lora,
      lora_modules.empty() ? "none" : fmt::format("{}", fmt::join(lora_modules, " ")),
      max_lora_rank, max_loras, speculative_config.empty() ? "none" : speculative_config);
}

StatusOr<LoraModule> ParseLoraModule(const std::string& text) {
  LoraModule m;
  if (!text.empty() && text.front() == '{') {
    const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    auto string_field = [&](const char* key) -> std::string {
      return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>()
                                                                    : "";
    };
    m.name = string_field("name");
    m.path = string_field("path");
    m.base_model_name = string_field("base_model_name");
    if (j.is_discarded() || !j.is_object() || m.name.empty() || m.path.empty())
      return InvalidArgument(
          "--lora-modules '{}': a JSON module needs string fields \"name\" and \"path\"", text);
    return m;
  }
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    return InvalidArgument("--lora-modules '{}': expected name=path or a JSON object", text);
  m.name = text.substr(0, eq);
  m.path = text.substr(eq + 1);
  return m;
}

}  // namespace xinfer
