#include "server/errors.h"

#include <cctype>
#include <nlohmann/json.hpp>
#include <set>

namespace xinfer::server {
namespace {

const char* TypeFor(int status) {
  switch (status) {
    case 400:
      return "BadRequestError";
    case 401:
      return "AuthenticationError";
    case 404:
      return "NotFoundError";
    case 405:
      return "MethodNotAllowedError";
    case 413:
      return "RequestTooLargeError";
    case 431:
      return "RequestHeaderFieldsTooLargeError";
    case 499:
      return "ClientClosedRequest";
    case 503:
      return "ServiceUnavailableError";
    default:
      return status >= 500 ? "InternalServerError" : "BadRequestError";
  }
}

// Request fields a message may start with ("top_p must be in (0, 1]" → param "top_p").
std::string ParamOf(const std::string& message) {
  static const std::set<std::string> kFields = {"temperature",
                                                "top_p",
                                                "top_k",
                                                "min_p",
                                                "repetition_penalty",
                                                "presence_penalty",
                                                "frequency_penalty",
                                                "logit_bias",
                                                "seed",
                                                "logprobs",
                                                "top_logprobs",
                                                "max_tokens",
                                                "max_completion_tokens",
                                                "stop",
                                                "stop_token_ids",
                                                "ignore_eos",
                                                "min_tokens",
                                                "n",
                                                "include_stop_str_in_output",
                                                "messages",
                                                "prompt",
                                                "model",
                                                "tools",
                                                "tool_choice",
                                                "stream",
                                                "stream_options",
                                                "chat_template_kwargs",
                                                "tokens",
                                                "echo",
                                                "priority",
                                                "add_special_tokens",
                                                "add_generation_prompt",
                                                "response_format",
                                                "guided_json",
                                                "guided_regex",
                                                "guided_choice",
                                                "guided_grammar",
                                                "grammar",
                                                "json_schema",
                                                "structured_outputs",
                                                "allowed_token_ids",
                                                "skip_special_tokens",
                                                "bad_words",
                                                "prompt_logprobs",
                                                "truncate_prompt_tokens",
                                                "continue_final_message"};
  size_t end = 0;
  while (end < message.size() &&
         (std::islower(static_cast<unsigned char>(message[end])) || message[end] == '_'))
    ++end;
  std::string word = message.substr(0, end);
  return kFields.count(word) ? word : "";
}

}  // namespace

std::string ErrorBody(int http_status, const std::string& message, const std::string& param) {
  nlohmann::ordered_json e = {
      {"message", message},
      {"type", TypeFor(http_status)},
      {"param", param.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(param)},
      {"code", http_status}};
  return nlohmann::ordered_json{{"error", e}}.dump(
      -1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

ErrorResponse MakeError(int http_status, const std::string& message, const std::string& param) {
  ErrorResponse r;
  r.status = http_status;
  r.body = ErrorBody(http_status, message, param);
  if (http_status == 503) r.headers.emplace_back("Retry-After", "1");
  if (http_status == 401) r.headers.emplace_back("WWW-Authenticate", "Bearer");
  return r;
}

ErrorResponse ErrorFromStatus(const Status& status) {
  int code = 500;
  switch (status.code()) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kOutOfRange:
    case StatusCode::kFailedPrecondition:
    case StatusCode::kUnimplemented:
      code = 400;
      break;
    case StatusCode::kNotFound:
      code = 404;
      break;
    case StatusCode::kUnavailable:
    case StatusCode::kResourceExhausted:
      code = 503;
      break;
    case StatusCode::kCancelled:
      code = 499;
      break;
    default:
      code = 500;
  }
  return MakeError(code, status.message(), code == 400 ? ParamOf(status.message()) : "");
}

}  // namespace xinfer::server
