// Cross-origin resource sharing, as vLLM's API server answers browsers (Starlette's
// CORSMiddleware with --allowed-origins / --allowed-methods / --allowed-headers /
// --allow-credentials; by default every origin, method and header, no credentials): web front
// ends that call the API from the browser (NextChat, LobeChat in client mode) need it.
// Immutable after ParseCorsPolicy; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "server/http_server.h"

namespace xinfer::server {

struct CorsPolicy {
  std::vector<std::string> origins = {"*"};  // "*": any
  std::vector<std::string> methods = {"*"};  // upper case
  std::vector<std::string> headers = {"*"};  // lower case
  bool credentials = false;
};

// vLLM's flags: JSON lists of strings ('["http://a.example", "https://b.example"]'); an empty
// string keeps the default ("*"). Not a list of strings is InvalidArgument naming the flag.
StatusOr<CorsPolicy> ParseCorsPolicy(const std::string& origins_json,
                                     const std::string& methods_json,
                                     const std::string& headers_json, bool credentials);

// The headers an ordinary (non-preflight) response to `request` carries: none without an Origin
// header or for an origin not allowed.
Headers CorsResponseHeaders(const CorsPolicy& policy, const HttpRequest& request);

// A preflight (OPTIONS with Origin and Access-Control-Request-Method) is answered here, before
// routing and authentication (browsers send no credentials in it): 200 with the allowed origin,
// methods, headers and a 10-minute max age, or 400 naming what is not allowed. nullopt for any
// other request.
struct PreflightResponse {
  int status = 200;
  std::string body;
  Headers headers;
};
std::optional<PreflightResponse> CorsPreflight(const CorsPolicy& policy,
                                               const HttpRequest& request);

}  // namespace xinfer::server
