// JSON → SamplingParams with vLLM/OpenAI field names, shared by the offline batch mode and the
// HTTP server so that both accept exactly the same parameters.
#pragma once

#include <nlohmann/json.hpp>

#include "sampling/sampling_params.h"

namespace xinfer {

// Reads the sampling fields of `body` over `defaults`: temperature, top_p, top_k, min_p,
// repetition_penalty, presence_penalty, frequency_penalty, logit_bias ({"id": bias}), seed,
// max_tokens / max_completion_tokens, stop (string or list), stop_token_ids, ignore_eos,
// include_stop_str_in_output, min_tokens, n, logprobs (integer, or true with top_logprobs).
// When max_tokens is absent it becomes the room left in the context (max_model_len - prompt_len),
// as in vLLM. Wrong types are InvalidArgument naming the field; ranges are checked by the caller
// via SamplingParams::Validate.
StatusOr<SamplingParams> ParseSamplingParams(const nlohmann::ordered_json& body,
                                             const SamplingParams& defaults, int max_model_len,
                                             int prompt_len);

}  // namespace xinfer
