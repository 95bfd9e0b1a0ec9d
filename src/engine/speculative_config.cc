#include "engine/speculative_config.h"

#include <nlohmann/json.hpp>
#include <optional>

namespace xinfer {
namespace {

StatusOr<int> PositiveInt(const nlohmann::json& value, const char* key) {
  if (!value.is_number_integer() || value.get<int64_t>() < 1 || value.get<int64_t>() > 1024)
    return InvalidArgument("speculative_config {} must be an integer in [1, 1024], got {}", key,
                           value.dump());
  return static_cast<int>(value.get<int64_t>());
}

bool IsNgram(const std::string& name) {
  return name == "ngram" || name == "[ngram]" || name == "ngram_gpu";
}

}  // namespace

StatusOr<SpeculativeConfig> ParseSpeculativeConfig(const std::string& text) {
  SpeculativeConfig c;
  if (text.empty()) return c;
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object())
    return InvalidArgument("speculative_config must be a JSON object, got '{}'", text);
  std::optional<std::string> method, model;
  std::optional<int> lookup_min, lookup_max;
  bool have_tokens = false;
  for (const auto& [key, value] : j.items()) {
    if (key == "method" || key == "model") {
      if (value.is_null()) continue;
      if (!value.is_string())
        return InvalidArgument("speculative_config {} must be a string, got {}", key, value.dump());
      (key == "method" ? method : model) = value.get<std::string>();
    } else if (key == "num_speculative_tokens") {
      XI_ASSIGN_OR_RETURN(c.num_speculative_tokens, PositiveInt(value, key.c_str()));
      have_tokens = true;
    } else if (key == "prompt_lookup_min" || key == "prompt_lookup_max") {
      if (value.is_null()) continue;
      XI_ASSIGN_OR_RETURN(const int n, PositiveInt(value, key.c_str()));
      (key == "prompt_lookup_min" ? lookup_min : lookup_max) = n;
    } else if (key == "disable_by_batch_size") {
      if (value.is_null()) continue;
      XI_ASSIGN_OR_RETURN(c.disable_by_batch_size, PositiveInt(value, key.c_str()));
    } else if (key == "disable_log_stats" || key == "disable_logprobs" ||
               key == "disable_padded_drafter_batch") {
      if (!value.is_boolean())
        return InvalidArgument("speculative_config {} must be a boolean, got {}", key,
                               value.dump());
    } else {
      return Unimplemented(
          "speculative_config {} is not available (method, model, num_speculative_tokens, "
          "prompt_lookup_min, prompt_lookup_max, disable_by_batch_size are)",
          key);
    }
  }
  if (!method && model && IsNgram(*model)) method = "ngram";
  if (!method && model)
    return Unimplemented(
        "speculative_config: a draft model ('{}') is not supported; method \"ngram\" (prompt "
        "lookup) is",
        *model);
  if (!method)
    return InvalidArgument("speculative_config needs a method (\"ngram\"), got '{}'", text);
  if (!IsNgram(*method))
    return Unimplemented(
        "speculative_config method '{}' is not supported; method \"ngram\" (prompt lookup) is",
        *method);
  if (!have_tokens)
    return InvalidArgument("speculative_config needs num_speculative_tokens, got '{}'", text);
  c.prompt_lookup_min = lookup_min.value_or(lookup_max.value_or(5));
  c.prompt_lookup_max = lookup_max.value_or(lookup_min.value_or(5));
  if (c.prompt_lookup_min > c.prompt_lookup_max)
    return InvalidArgument(
        "speculative_config prompt_lookup_min ({}) must be <= prompt_lookup_max ({})",
        c.prompt_lookup_min, c.prompt_lookup_max);
  return c;
}

}  // namespace xinfer
