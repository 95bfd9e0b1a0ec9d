// Every error the server returns, in OpenAI's shape
//   {"error": {"message": ..., "type": ..., "param": ..., "code": <HTTP status>}}
// and the one table from Status codes to HTTP statuses. Type names follow vLLM's.
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "base/status.h"

namespace xinfer::server {

struct ErrorResponse {
  int status = 500;
  std::string body;                                          // JSON
  std::vector<std::pair<std::string, std::string>> headers;  // e.g. Retry-After
};

// Status → HTTP: InvalidArgument, OutOfRange, FailedPrecondition, Unimplemented → 400;
// NotFound → 404; Unavailable (waiting queue full, shutting down) → 503 with Retry-After;
// ResourceExhausted → 503 too (a request the server cannot take now); Cancelled → 499;
// everything else → 500. `param` is the request field the message starts with, when it names
// one (SamplingParams::Validate and the request parsers put it first).
ErrorResponse ErrorFromStatus(const Status& status);

// Errors that have no Status code of their own: 401 (API key), 404 (route), 413 (body too
// large), 431, 400 (malformed HTTP) raised by the transport.
ErrorResponse MakeError(int http_status, const std::string& message, const std::string& param = "");

// The JSON body alone (for SSE error events).
std::string ErrorBody(int http_status, const std::string& message, const std::string& param = "");

}  // namespace xinfer::server
