#include "formats/hf_config.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <nlohmann/json.hpp>

#include "base/json_int32.h"
#include "base/mapped_file.h"

namespace xinfer {
namespace {

using nlohmann::json;

Status GetInt(const json& j, const char* key, bool required, int* out) {
  if (!j.contains(key) || j[key].is_null()) {
    if (required) return InvalidArgument("config.json: missing '{}'", key);
    return Status::Ok();
  }
  if (!j[key].is_number_integer())
    return InvalidArgument("config.json: '{}' must be an integer", key);
  int64_t v = j[key].get<int64_t>();
  if (v <= 0 || v > (1 << 30))
    return InvalidArgument("config.json: '{}' = {} is out of range", key, v);
  *out = static_cast<int>(v);
  return Status::Ok();
}

// An optional string field; a present non-string is an error (json::value() would throw).
Status GetString(const json& j, const char* key, const char* file, std::string* out) {
  if (!j.contains(key) || j[key].is_null()) return Status::Ok();
  if (!j[key].is_string()) return InvalidArgument("{}: '{}' must be a string", file, key);
  *out = j[key].get<std::string>();
  return Status::Ok();
}

Status GetDouble(const json& j, const char* key, double* out) {
  if (!j.contains(key) || j[key].is_null()) return Status::Ok();
  if (!j[key].is_number()) return InvalidArgument("config.json: '{}' must be a number", key);
  *out = j[key].get<double>();
  if (!(*out > 0)) return InvalidArgument("config.json: '{}' must be positive", key);
  return Status::Ok();
}

// A number in rope_scaling; absent keeps `out`.
Status GetRopeNumber(const json& r, const char* key, bool positive, double* out) {
  if (!r.contains(key) || r[key].is_null()) return Status::Ok();
  if (!r[key].is_number() || !std::isfinite(r[key].get<double>()) ||
      (positive ? !(r[key].get<double>() > 0) : r[key].get<double>() < 0))
    return InvalidArgument("config.json: rope_scaling '{}' must be a {} number, got {}", key,
                           positive ? "positive" : "non-negative", r[key].dump());
  *out = r[key].get<double>();
  return Status::Ok();
}

Status ParseRopeScaling(const json& r, int max_position_embeddings, RopeScaling* out) {
  if (!r.is_object()) return InvalidArgument("config.json: 'rope_scaling' must be an object");
  std::string type;
  XI_RETURN_IF_ERROR(GetString(r, "rope_type", "config.json: rope_scaling", &type));
  if (type.empty()) XI_RETURN_IF_ERROR(GetString(r, "type", "config.json: rope_scaling", &type));
  if (r.contains("mrope_section"))
    return Unimplemented(
        "config.json: multimodal rope (rope_scaling 'mrope_section') is not "
        "supported");
  if (type.empty() || type == "default") return Status::Ok();
  if (type != "linear" && type != "dynamic" && type != "yarn" && type != "llama3")
    return Unimplemented(
        "config.json: rope_scaling type '{}' is not supported (linear, dynamic, yarn and llama3 "
        "are)",
        type);
  RopeScaling s;
  s.type = type;
  if (!r.contains("factor")) return InvalidArgument("config.json: rope_scaling needs a 'factor'");
  XI_RETURN_IF_ERROR(GetRopeNumber(r, "factor", true, &s.factor));
  if ((type == "yarn" || type == "llama3" || type == "dynamic") && s.factor < 1)
    return InvalidArgument("config.json: rope_scaling '{}' factor must be at least 1, got {}", type,
                           s.factor);
  s.original_max_position_embeddings = max_position_embeddings;
  XI_RETURN_IF_ERROR(GetInt(r, "original_max_position_embeddings", type == "llama3",
                            &s.original_max_position_embeddings));
  if (type == "yarn" && s.original_max_position_embeddings == 0)
    return InvalidArgument(
        "config.json: rope_scaling yarn needs 'original_max_position_embeddings' (or "
        "max_position_embeddings)");
  XI_RETURN_IF_ERROR(GetRopeNumber(r, "beta_fast", true, &s.beta_fast));
  XI_RETURN_IF_ERROR(GetRopeNumber(r, "beta_slow", true, &s.beta_slow));
  XI_RETURN_IF_ERROR(GetRopeNumber(r, "extrapolation_factor", false, &s.extrapolation_factor));
  XI_RETURN_IF_ERROR(GetRopeNumber(r, "attn_factor", true, &s.attn_factor));
  if (type == "llama3") {
    for (const char* key : {"low_freq_factor", "high_freq_factor"})
      if (!r.contains(key))
        return InvalidArgument("config.json: rope_scaling llama3 needs '{}'", key);
    XI_RETURN_IF_ERROR(GetRopeNumber(r, "low_freq_factor", true, &s.low_freq_factor));
    XI_RETURN_IF_ERROR(GetRopeNumber(r, "high_freq_factor", true, &s.high_freq_factor));
    if (s.high_freq_factor < s.low_freq_factor)
      return InvalidArgument(
          "config.json: rope_scaling high_freq_factor {} is below low_freq_factor {}",
          s.high_freq_factor, s.low_freq_factor);
  }
  *out = std::move(s);
  return Status::Ok();
}

// A classifier's labels: id2label ({"0": "no", "1": "yes"}, every index from 0 once), or
// num_labels generic names, or (neither) transformers' default of two.
Status ReadLabels(const json& j, ModelConfig& c) {
  constexpr int kMaxLabels = 1 << 16;
  if (j.contains("id2label") && !j["id2label"].is_null()) {
    const json& m = j["id2label"];
    if (!m.is_object() || m.empty() || m.size() > kMaxLabels)
      return InvalidArgument("config.json: 'id2label' must map label indices to names");
    c.id2label.assign(m.size(), "");
    std::vector<bool> seen(m.size(), false);
    for (const auto& [key, name] : m.items()) {
      size_t used = 0;
      int index = -1;
      try {
        index = std::stoi(key, &used);
      } catch (const std::exception&) {
      }
      if (used != key.size() || index < 0 || index >= static_cast<int>(m.size()) || seen[index] ||
          !name.is_string())
        return InvalidArgument(
            "config.json: 'id2label' must map the indices 0..{} to names once each, got key '{}'",
            m.size() - 1, key);
      seen[index] = true;
      c.id2label[index] = name.get<std::string>();
    }
    return Status::Ok();
  }
  int n = 2;
  XI_RETURN_IF_ERROR(GetInt(j, "num_labels", false, &n));
  if (n < 0 || n > kMaxLabels)
    return InvalidArgument("config.json: num_labels {} is out of range", n);
  for (int i = 0; i < n; ++i) c.id2label.push_back(fmt::format("LABEL_{}", i));
  return Status::Ok();
}

}  // namespace

bool ModelConfig::IsSparseLayer(int layer) const {
  // As transformers' Qwen3MoeDecoderLayer decides it.
  return is_moe() &&
         std::find(mlp_only_layers.begin(), mlp_only_layers.end(), layer) ==
             mlp_only_layers.end() &&
         (layer + 1) % decoder_sparse_step == 0;
}

int DerivedMaxModelLen(const ModelConfig& c) {
  const RopeScaling& s = c.rope_scaling;
  double len = c.max_position_embeddings;
  if (s.type == "yarn") len = s.original_max_position_embeddings;
  if (s.type == "linear" || s.type == "dynamic" || s.type == "yarn") len *= s.factor;
  return static_cast<int>(std::min<double>(len, 1 << 30));
}

StatusOr<ModelConfig> ParseHfConfig(const std::string& json_text) {
  json j = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    return InvalidArgument("config.json is not a JSON object");
  ModelConfig c;
  if (!j.contains("architectures") || !j["architectures"].is_array() ||
      j["architectures"].empty() || !j["architectures"][0].is_string())
    return InvalidArgument("config.json: missing 'architectures'");
  c.architecture = j["architectures"][0].get<std::string>();
  XI_RETURN_IF_ERROR(GetString(j, "model_type", "config.json", &c.model_type));
  XI_RETURN_IF_ERROR(GetInt(j, "vocab_size", true, &c.vocab_size));
  XI_RETURN_IF_ERROR(GetInt(j, "hidden_size", true, &c.hidden_size));
  XI_RETURN_IF_ERROR(GetInt(j, "intermediate_size", true, &c.intermediate_size));
  XI_RETURN_IF_ERROR(GetInt(j, "num_hidden_layers", true, &c.num_hidden_layers));
  XI_RETURN_IF_ERROR(GetInt(j, "num_attention_heads", true, &c.num_attention_heads));
  c.num_key_value_heads = c.num_attention_heads;
  XI_RETURN_IF_ERROR(GetInt(j, "num_key_value_heads", false, &c.num_key_value_heads));
  c.head_dim = c.hidden_size / c.num_attention_heads;
  XI_RETURN_IF_ERROR(GetInt(j, "head_dim", false, &c.head_dim));
  XI_RETURN_IF_ERROR(GetInt(j, "max_position_embeddings", false, &c.max_position_embeddings));
  XI_RETURN_IF_ERROR(GetDouble(j, "rms_norm_eps", &c.rms_norm_eps));
  XI_RETURN_IF_ERROR(GetDouble(j, "rope_theta", &c.rope_theta));
  if (c.num_attention_heads % c.num_key_value_heads != 0)
    return InvalidArgument(
        "config.json: num_attention_heads {} is not a multiple of "
        "num_key_value_heads {}",
        c.num_attention_heads, c.num_key_value_heads);
  if (!j.contains("head_dim") && c.hidden_size % c.num_attention_heads != 0)
    return InvalidArgument("config.json: hidden_size {} is not divisible by num_attention_heads {}",
                           c.hidden_size, c.num_attention_heads);
  if (c.head_dim % 2 != 0)
    return InvalidArgument("config.json: head_dim {} must be even", c.head_dim);
  if (j.contains("tie_word_embeddings")) {
    if (!j["tie_word_embeddings"].is_boolean())
      return InvalidArgument("config.json: 'tie_word_embeddings' must be a boolean");
    c.tie_word_embeddings = j["tie_word_embeddings"].get<bool>();
  }
  if (j.contains("attention_bias") && j["attention_bias"].is_boolean())
    c.attention_bias = j["attention_bias"].get<bool>();
  std::string act = "silu";
  XI_RETURN_IF_ERROR(GetString(j, "hidden_act", "config.json", &act));
  if (act != "silu") return Unimplemented("config.json: hidden_act '{}' is not supported", act);
  if (j.contains("rope_scaling") && !j["rope_scaling"].is_null())
    XI_RETURN_IF_ERROR(
        ParseRopeScaling(j["rope_scaling"], c.max_position_embeddings, &c.rope_scaling));
  if (j.contains("torch_dtype") && j["torch_dtype"].is_string())
    c.torch_dtype = j["torch_dtype"].get<std::string>();
  if (j.contains("bos_token_id") && j["bos_token_id"].is_number_integer())
    c.bos_token_id = j["bos_token_id"].get<int>();
  if (j.contains("eos_token_id")) {
    const json& e = j["eos_token_id"];
    if (e.is_number_integer()) c.eos_token_ids.push_back(e.get<int>());
    if (e.is_array())
      for (const auto& x : e)
        if (x.is_number_integer()) c.eos_token_ids.push_back(x.get<int>());
  }
  if (j.contains("is_matryoshka")) {
    if (!j["is_matryoshka"].is_boolean())
      return InvalidArgument("config.json: 'is_matryoshka' must be a boolean");
    c.is_matryoshka = j["is_matryoshka"].get<bool>();
  }
  if (j.contains("matryoshka_dimensions") && !j["matryoshka_dimensions"].is_null()) {
    const json& d = j["matryoshka_dimensions"];
    if (!d.is_array())
      return InvalidArgument("config.json: 'matryoshka_dimensions' must be a list");
    for (const json& x : d) {
      if (!x.is_number_integer() || x.get<int>() < 1 || x.get<int>() > c.hidden_size)
        return InvalidArgument("config.json: matryoshka_dimensions must be integers in [1, {}]",
                               c.hidden_size);
      c.matryoshka_dimensions.push_back(x.get<int>());
    }
    c.is_matryoshka = true;
  }
  if (c.architecture == "Qwen3MoeForCausalLM" || c.architecture == "Qwen2MoeForCausalLM") {
    if (c.architecture == "Qwen2MoeForCausalLM")
      XI_RETURN_IF_ERROR(
          GetInt(j, "shared_expert_intermediate_size", false, &c.shared_expert_intermediate_size));
    XI_RETURN_IF_ERROR(GetInt(j, "num_experts", true, &c.num_experts));
    XI_RETURN_IF_ERROR(GetInt(j, "num_experts_per_tok", true, &c.num_experts_per_tok));
    XI_RETURN_IF_ERROR(GetInt(j, "moe_intermediate_size", true, &c.moe_intermediate_size));
    XI_RETURN_IF_ERROR(GetInt(j, "decoder_sparse_step", false, &c.decoder_sparse_step));
    if (c.num_experts_per_tok > c.num_experts)
      return InvalidArgument("config.json: num_experts_per_tok {} exceeds num_experts {}",
                             c.num_experts_per_tok, c.num_experts);
    if (j.contains("norm_topk_prob") && !j["norm_topk_prob"].is_null()) {
      if (!j["norm_topk_prob"].is_boolean())
        return InvalidArgument("config.json: 'norm_topk_prob' must be a boolean");
      c.norm_topk_prob = j["norm_topk_prob"].get<bool>();
    }
    if (j.contains("mlp_only_layers") && !j["mlp_only_layers"].is_null()) {
      if (!j["mlp_only_layers"].is_array())
        return InvalidArgument("config.json: 'mlp_only_layers' must be a list of layer indices");
      for (const json& x : j["mlp_only_layers"]) {
        if (!x.is_number_integer())
          return InvalidArgument("config.json: 'mlp_only_layers' must be a list of layer indices");
        c.mlp_only_layers.push_back(x.get<int>());
      }
    }
  }
  if (c.is_classifier()) {
    const json* t = j.contains("classifier_from_token") ? &j["classifier_from_token"] : nullptr;
    if (t != nullptr && !t->is_null()) {
      if (!t->is_array() || t->size() != 2 || !(*t)[0].is_string() || !(*t)[1].is_string())
        return InvalidArgument(
            "config.json: 'classifier_from_token' must list two tokens (the false one, then the "
            "true one)");
      for (const json& token : *t) c.classifier_from_token.push_back(token.get<std::string>());
    }
    XI_RETURN_IF_ERROR(ReadLabels(j, c));
  }
  if (j.contains("quantization_config") && j["quantization_config"].is_object()) {
    const json& q = j["quantization_config"];
    XI_RETURN_IF_ERROR(
        GetString(q, "quant_method", "config.json: quantization_config", &c.quantization.method));
    if (q.contains("bits") && q["bits"].is_number_integer()) c.quantization.bits = q["bits"];
    if (q.contains("group_size") && q["group_size"].is_number_integer())
      c.quantization.group_size = q["group_size"];
    if (q.contains("zero_point") && q["zero_point"].is_boolean())
      c.quantization.zero_point = q["zero_point"];
    if (q.contains("version") && q["version"].is_string()) c.quantization.version = q["version"];
  }
  return c;
}

StatusOr<ModelConfig> LoadHfConfig(const std::string& model_dir, const std::string& overrides) {
  XI_ASSIGN_OR_RETURN(std::string text, ReadFileToString(model_dir + "/config.json"));
  if (!overrides.empty()) {
    const json patch = json::parse(overrides, nullptr, /*allow_exceptions=*/false);
    if (patch.is_discarded() || !patch.is_object())
      return InvalidArgument("hf_overrides must be a JSON object, got '{}'", overrides);
    json merged = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (merged.is_discarded() || !merged.is_object())
      return InvalidArgument("{}/config.json is not a JSON object", model_dir);
    merged.merge_patch(patch);
    text = merged.dump();
  }
  auto c = ParseHfConfig(text);
  if (!c.ok()) return c.status().WithContext(model_dir + "/config.json");
  return c;
}

StatusOr<GenerationConfig> LoadGenerationConfig(const std::string& model_dir) {
  GenerationConfig g;
  const std::string path = model_dir + "/generation_config.json";
  auto text = ReadFileToString(path);
  if (!text.ok()) {
    if (text.status().code() == StatusCode::kNotFound) return g;
    return text.status();
  }
  json j = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return InvalidArgument("{} is not a JSON object", path);
  // As transformers writes them; a field of another type is ignored, as vLLM ignores it.
  auto number = [&](const char* key, std::optional<float>& field) {
    if (j.contains(key) && j[key].is_number()) field = j[key].get<float>();
  };
  number("temperature", g.temperature);
  number("top_p", g.top_p);
  number("min_p", g.min_p);
  number("repetition_penalty", g.repetition_penalty);
  if (j.contains("top_k")) g.top_k = JsonInt32(j["top_k"]);
  if (j.contains("eos_token_id")) {
    const json& e = j["eos_token_id"];
    if (e.is_number_integer()) g.eos_token_ids.push_back(e.get<int>());
    if (e.is_array())
      for (const auto& x : e)
        if (x.is_number_integer()) g.eos_token_ids.push_back(x.get<int>());
  }
  return g;
}

Status OverrideGenerationConfig(const std::string& json_text, GenerationConfig& config) {
  json j = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    return InvalidArgument("override_generation_config must be a JSON object, got '{}'", json_text);
  for (const auto& [key, value] : j.items()) {
    std::optional<float>* field = key == "temperature"          ? &config.temperature
                                  : key == "top_p"              ? &config.top_p
                                  : key == "min_p"              ? &config.min_p
                                  : key == "repetition_penalty" ? &config.repetition_penalty
                                                                : nullptr;
    if (field != nullptr) {
      if (!value.is_number())
        return InvalidArgument("override_generation_config: {} must be a number", key);
      *field = value.get<float>();
    } else if (key == "top_k") {
      const std::optional<int32_t> top_k = JsonInt32(value);
      if (!top_k) return InvalidArgument("override_generation_config: top_k must be an integer");
      config.top_k = *top_k;
    } else {
      return InvalidArgument(
          "override_generation_config: '{}' is not a sampling default this server takes "
          "(temperature, top_p, top_k, min_p, repetition_penalty)",
          key);
    }
  }
  return Status::Ok();
}

}  // namespace xinfer
