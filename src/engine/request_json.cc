#include "engine/request_json.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/json_depth.h"
#include "base/json_int32.h"
#include "sampling/gbnf.h"

namespace xinfer {
namespace {

using json = nlohmann::ordered_json;

Status Number(const json& b, const char* key, float* out) {
  if (!b.contains(key) || b[key].is_null()) return Status::Ok();
  if (!b[key].is_number()) return InvalidArgument("{} must be a number", key);
  *out = b[key].get<float>();
  return Status::Ok();
}

Status Integer(const json& b, const char* key, int32_t* out) {
  if (!b.contains(key) || b[key].is_null()) return Status::Ok();
  if (!b[key].is_number_integer()) return InvalidArgument("{} must be an integer", key);
  auto v = JsonInt32(b[key]);
  if (!v) return InvalidArgument("{} is out of range", key);
  *out = *v;
  return Status::Ok();
}

Status Bool(const json& b, const char* key, bool* out) {
  if (!b.contains(key) || b[key].is_null()) return Status::Ok();
  if (!b[key].is_boolean()) return InvalidArgument("{} must be a boolean", key);
  *out = b[key].get<bool>();
  return Status::Ok();
}

// A guide's schema: an object, or (vLLM) JSON text.
StatusOr<std::shared_ptr<const JsonSchema>> SchemaOf(json schema, const std::string& what) {
  if (schema.is_string()) {
    bool too_deep = false;
    schema = ParseJsonNoDeeperThan<json>(schema.get<std::string>(), 128, &too_deep);
    if (schema.is_discarded())
      return InvalidArgument("{} is {}", what, too_deep ? "nested too deep" : "not valid JSON");
  }
  return CompileJsonSchema(schema, what);
}

// One guide named by `kind` (vLLM's guided_<kind>, or structured_outputs.<kind>) into `p`.
Status SetGuide(const std::string& kind, const json& v, const std::string& what,
                SamplingParams& p) {
  if (p.guided != GuidedDecoding::kNone)
    return InvalidArgument(
        "{}: only one kind of guided decoding can be given (response_format json_object / "
        "json_schema, guided_json, guided_regex, guided_choice, guided_grammar, "
        "structured_outputs, grammar, json_schema)",
        what);
  if (kind == "json") {
    XI_ASSIGN_OR_RETURN(p.json_schema, SchemaOf(v, what));
    p.guided = GuidedDecoding::kJsonSchema;
  } else if (kind == "regex") {
    if (!v.is_string()) return InvalidArgument("{} must be a string", what);
    XI_ASSIGN_OR_RETURN(p.regex, RegexDfa::FromPattern(v.get<std::string>(), what));
    p.guided = GuidedDecoding::kRegex;
  } else if (kind == "choice") {
    std::vector<std::string> choices;
    if (v.is_array())
      for (const auto& c : v) {
        if (!c.is_string()) break;
        choices.push_back(c.get<std::string>());
      }
    if (choices.empty() || choices.size() != v.size())
      return InvalidArgument("{} must be a non-empty list of strings", what);
    XI_ASSIGN_OR_RETURN(p.regex, RegexDfa::FromChoices(choices, what));
    p.guided = GuidedDecoding::kRegex;
  } else if (kind == "json_object") {
    if (!v.is_boolean()) return InvalidArgument("{} must be a boolean", what);
    if (v.get<bool>()) p.guided = GuidedDecoding::kJsonObject;
  } else if (kind == "grammar") {
    if (!v.is_string()) return InvalidArgument("{} must be a string (a GBNF grammar)", what);
    XI_ASSIGN_OR_RETURN(p.grammar, ParseGbnf(v.get<std::string>(), what));
    p.guided = GuidedDecoding::kGrammar;
  } else {  // structural_tag
    return Unimplemented(
        "{} is not supported (json, regex, choice, grammar and json_object guides are)", what);
  }
  return Status::Ok();
}

// OpenAI's response_format, vLLM's guided_json / guided_regex / guided_choice / guided_grammar and
// its newer structured_outputs object, llama.cpp's grammar / json_schema (the same guides under
// other names); at most one of them.
Status ParseGuidedDecoding(const json& b, SamplingParams& p) {
  auto given = [&](const char* key) { return b.contains(key) && !b[key].is_null(); };
  // OpenAI's response_format: "text", "json_object" or "json_schema".
  if (given("response_format")) {
    const json& rf = b["response_format"];
    if (!rf.is_object() || !rf.contains("type") || !rf["type"].is_string())
      return InvalidArgument("response_format must be an object with a string 'type'");
    const std::string type = rf["type"].get<std::string>();
    if (type == "json_object") {
      p.guided = GuidedDecoding::kJsonObject;
    } else if (type == "json_schema") {
      const json* spec = rf.contains("json_schema") ? &rf["json_schema"] : nullptr;
      if (spec == nullptr || !spec->is_object() || !spec->contains("schema"))
        return InvalidArgument(
            "response_format json_schema needs a json_schema object with a 'schema'");
      XI_ASSIGN_OR_RETURN(p.json_schema,
                          CompileJsonSchema((*spec)["schema"], "response_format json_schema"));
      p.guided = GuidedDecoding::kJsonSchema;
    } else if (type != "text") {
      return InvalidArgument(
          "response_format type must be 'text', 'json_object' or 'json_schema', got '{}'", type);
    }
  }
  for (const char* kind : {"json", "regex", "choice", "grammar"}) {
    const std::string key = std::string("guided_") + kind;
    if (given(key.c_str())) XI_RETURN_IF_ERROR(SetGuide(kind, b[key], key, p));
  }
  // llama.cpp server's names for the same guides (its clients send these).
  if (given("grammar")) XI_RETURN_IF_ERROR(SetGuide("grammar", b["grammar"], "grammar", p));
  if (given("json_schema"))
    XI_RETURN_IF_ERROR(SetGuide("json", b["json_schema"], "json_schema", p));
  if (given("structured_outputs")) {
    const json& so = b["structured_outputs"];
    if (!so.is_object()) return InvalidArgument("structured_outputs must be an object");
    // vLLM's StructuredOutputsParams fields. disable_any_whitespace compacts the JSON guides'
    // output (below); the other options change nothing here: no guide falls back to another,
    // a schema's object never has keys it does not name, and whitespace_pattern is outlines'
    // (vLLM's xgrammar backend ignores it too).
    static const std::set<std::string> kKnown = {"json",
                                                 "regex",
                                                 "choice",
                                                 "grammar",
                                                 "json_object",
                                                 "structural_tag",
                                                 "disable_fallback",
                                                 "disable_any_whitespace",
                                                 "disable_additional_properties",
                                                 "whitespace_pattern"};
    for (const auto& [key, value] : so.items())
      if (!kKnown.count(key))
        return InvalidArgument("structured_outputs has an unknown field '{}'", key);
    for (const char* kind : {"json", "regex", "choice", "grammar", "json_object", "structural_tag"})
      if (so.contains(kind) && !so[kind].is_null())
        XI_RETURN_IF_ERROR(SetGuide(kind, so[kind], std::string("structured_outputs.") + kind, p));
    // Compact JSON: no whitespace between tokens (the JSON guides; others have none of their own).
    if (so.contains("disable_any_whitespace") && !so["disable_any_whitespace"].is_null()) {
      if (!so["disable_any_whitespace"].is_boolean())
        return InvalidArgument("structured_outputs.disable_any_whitespace must be a boolean");
      p.guided_whitespace = !so["disable_any_whitespace"].get<bool>();
    }
  }
  return Status::Ok();
}

}  // namespace

StatusOr<SamplingParams> ParseSamplingParams(const json& b, const SamplingParams& defaults,
                                             int max_model_len, int prompt_len) {
  if (!b.is_object()) return InvalidArgument("request must be a JSON object");
  SamplingParams p = defaults;
  XI_RETURN_IF_ERROR(Number(b, "temperature", &p.temperature));
  XI_RETURN_IF_ERROR(Number(b, "top_p", &p.top_p));
  XI_RETURN_IF_ERROR(Integer(b, "top_k", &p.top_k));
  XI_RETURN_IF_ERROR(Number(b, "min_p", &p.min_p));
  XI_RETURN_IF_ERROR(Number(b, "repetition_penalty", &p.repetition_penalty));
  XI_RETURN_IF_ERROR(Number(b, "presence_penalty", &p.presence_penalty));
  XI_RETURN_IF_ERROR(Number(b, "frequency_penalty", &p.frequency_penalty));
  XI_RETURN_IF_ERROR(Integer(b, "min_tokens", &p.min_tokens));
  XI_RETURN_IF_ERROR(Integer(b, "n", &p.n));
  XI_RETURN_IF_ERROR(Bool(b, "ignore_eos", &p.ignore_eos));
  XI_RETURN_IF_ERROR(Bool(b, "include_stop_str_in_output", &p.include_stop_str_in_output));
  XI_RETURN_IF_ERROR(Bool(b, "skip_special_tokens", &p.skip_special_tokens));
  if (b.contains("seed") && !b["seed"].is_null()) {
    if (!b["seed"].is_number_integer()) return InvalidArgument("seed must be an integer");
    p.seed = b["seed"].is_number_unsigned() ? b["seed"].get<uint64_t>()
                                            : static_cast<uint64_t>(b["seed"].get<int64_t>());
  }
  constexpr int32_t kUnset = std::numeric_limits<int32_t>::min();
  int32_t max_tokens = kUnset;
  XI_RETURN_IF_ERROR(Integer(b, "max_tokens", &max_tokens));
  XI_RETURN_IF_ERROR(Integer(b, "max_completion_tokens", &max_tokens));
  p.max_tokens = max_tokens != kUnset ? max_tokens : std::max(max_model_len - prompt_len, 1);
  if (b.contains("stop") && !b["stop"].is_null()) {
    const json& s = b["stop"];
    p.stop.clear();
    if (s.is_string()) {
      p.stop.push_back(s.get<std::string>());
    } else if (s.is_array()) {
      for (const auto& x : s) {
        if (!x.is_string()) return InvalidArgument("stop must be a string or a list of strings");
        p.stop.push_back(x.get<std::string>());
      }
    } else {
      return InvalidArgument("stop must be a string or a list of strings");
    }
  }
  if (b.contains("stop_token_ids") && !b["stop_token_ids"].is_null()) {
    if (!b["stop_token_ids"].is_array()) return InvalidArgument("stop_token_ids must be a list");
    for (const auto& x : b["stop_token_ids"]) {
      auto id = JsonInt32(x);
      if (!id) return InvalidArgument("stop_token_ids must hold token ids");
      p.stop_token_ids.push_back(*id);
    }
  }
  XI_RETURN_IF_ERROR(ParseGuidedDecoding(b, p));
  if (b.contains("allowed_token_ids") && !b["allowed_token_ids"].is_null()) {
    if (!b["allowed_token_ids"].is_array() || b["allowed_token_ids"].empty())
      return InvalidArgument("allowed_token_ids must be a non-empty list of token ids");
    for (const auto& x : b["allowed_token_ids"]) {
      auto id = JsonInt32(x);
      if (!id) return InvalidArgument("allowed_token_ids must hold token ids");
      p.allowed_token_ids.push_back(*id);
    }
  }
  // vLLM parameters xinfer does not implement: refused rather than silently ignored, so a client
  // never gets output that disregards what it asked for.
  if (b.contains("bad_words") && !b["bad_words"].is_null()) {
    if (!b["bad_words"].is_array()) return InvalidArgument("bad_words must be a list of strings");
    for (const json& w : b["bad_words"]) {
      if (!w.is_string()) return InvalidArgument("bad_words must be a list of strings");
      const std::string word = w.get<std::string>();
      if (word.find_first_not_of(" \t\r\n") == std::string::npos)
        return InvalidArgument("bad_words entries must not be empty or blank");
      p.bad_words.push_back(word);
    }
  }
  if (b.contains("prompt_logprobs") && !b["prompt_logprobs"].is_null()) {
    XI_RETURN_IF_ERROR(Integer(b, "prompt_logprobs", &p.prompt_logprobs));
    if (p.prompt_logprobs < 0) return InvalidArgument("prompt_logprobs must be >= 0");
  }
  if (b.contains("logit_bias") && !b["logit_bias"].is_null()) {
    if (!b["logit_bias"].is_object())
      return InvalidArgument("logit_bias must be an object of token id to bias");
    for (auto it = b["logit_bias"].begin(); it != b["logit_bias"].end(); ++it) {
      char* end = nullptr;
      long id = std::strtol(it.key().c_str(), &end, 10);
      if (it.key().empty() || *end != '\0' || id < 0 || id > std::numeric_limits<int32_t>::max())
        return InvalidArgument("logit_bias key '{}' is not a token id", it.key());
      if (!it.value().is_number()) return InvalidArgument("logit_bias values must be numbers");
      p.logit_bias.emplace_back(static_cast<int32_t>(id), it.value().get<float>());
    }
  }
  // OpenAI chat: logprobs is a boolean and top_logprobs the count; completions: an integer.
  if (b.contains("logprobs") && !b["logprobs"].is_null()) {
    const json& l = b["logprobs"];
    if (l.is_boolean()) {
      p.logprobs = l.get<bool>() ? 0 : -1;
      if (l.get<bool>()) {
        XI_RETURN_IF_ERROR(Integer(b, "top_logprobs", &p.logprobs));
        // -1 is SamplingParams' "no logprobs": a client's -1 would pass Validate() and silently
        // return none.
        if (p.logprobs < 0) return InvalidArgument("top_logprobs must be >= 0");
      }
    } else if (l.is_number_integer()) {
      XI_RETURN_IF_ERROR(Integer(b, "logprobs", &p.logprobs));
      if (p.logprobs < 0) return InvalidArgument("logprobs must be >= 0");
    } else {
      return InvalidArgument("logprobs must be a boolean or an integer");
    }
  }
  return p;
}

}  // namespace xinfer
