#include "server/cors.h"

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>

namespace xinfer::server {
namespace {

StatusOr<std::vector<std::string>> ParseList(const std::string& flag, const std::string& text,
                                             bool upper) {
  if (text.empty()) return std::vector<std::string>{"*"};
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_array())
    return InvalidArgument("{} must be a JSON list of strings such as '[\"*\"]', got '{}'", flag,
                           text);
  std::vector<std::string> out;
  for (const auto& x : j) {
    if (!x.is_string())
      return InvalidArgument("{} must be a JSON list of strings, got '{}'", flag, text);
    std::string s = x.get<std::string>();
    for (char& c : s)
      c = static_cast<char>(upper ? std::toupper(static_cast<unsigned char>(c))
                                  : std::tolower(static_cast<unsigned char>(c)));
    out.push_back(std::move(s));
  }
  return out;
}

bool Has(const std::vector<std::string>& list, const std::string& item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

bool AnyOrigin(const CorsPolicy& p) { return Has(p.origins, "*"); }

bool OriginAllowed(const CorsPolicy& p, const std::string& origin) {
  return AnyOrigin(p) || Has(p.origins, origin);
}

// Access-Control-Allow-Origin and what goes with it: "*" for any origin without credentials,
// else the origin itself (and Vary: Origin, since the answer depends on it).
void AddOriginHeaders(const CorsPolicy& p, const std::string& origin, Headers& h) {
  if (AnyOrigin(p) && !p.credentials) {
    h.emplace_back("Access-Control-Allow-Origin", "*");
  } else {
    h.emplace_back("Access-Control-Allow-Origin", origin);
    h.emplace_back("Vary", "Origin");
  }
  if (p.credentials) h.emplace_back("Access-Control-Allow-Credentials", "true");
}

std::string Trim(std::string s) {
  const auto space = [](unsigned char c) { return std::isspace(c) != 0; };
  while (!s.empty() && space(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t i = 0;
  while (i < s.size() && space(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

}  // namespace

StatusOr<CorsPolicy> ParseCorsPolicy(const std::string& origins_json,
                                     const std::string& methods_json,
                                     const std::string& headers_json, bool credentials) {
  CorsPolicy p;
  XI_ASSIGN_OR_RETURN(p.origins, ParseList("--allowed-origins", origins_json, false));
  XI_ASSIGN_OR_RETURN(p.methods, ParseList("--allowed-methods", methods_json, true));
  XI_ASSIGN_OR_RETURN(p.headers, ParseList("--allowed-headers", headers_json, false));
  // The CORS-safelisted request headers are always allowed (as Starlette adds them).
  if (!Has(p.headers, "*"))
    for (const char* safe : {"accept", "accept-language", "content-language", "content-type"})
      if (!Has(p.headers, safe)) p.headers.push_back(safe);
  p.credentials = credentials;
  return p;
}

Headers CorsResponseHeaders(const CorsPolicy& policy, const HttpRequest& request) {
  Headers h;
  const auto origin = request.find(http::field::origin);
  if (origin == request.end()) return h;
  const std::string value(origin->value());
  if (OriginAllowed(policy, value)) AddOriginHeaders(policy, value, h);
  return h;
}

std::optional<PreflightResponse> CorsPreflight(const CorsPolicy& policy,
                                               const HttpRequest& request) {
  const auto origin = request.find(http::field::origin);
  const auto method = request.find(http::field::access_control_request_method);
  if (request.method() != http::verb::options || origin == request.end() || method == request.end())
    return std::nullopt;
  PreflightResponse r;
  const std::string origin_value(origin->value());
  std::string asked_method(method->value());
  std::transform(asked_method.begin(), asked_method.end(), asked_method.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  std::vector<std::string> failures;
  if (!OriginAllowed(policy, origin_value)) failures.push_back("origin");
  if (!Has(policy.methods, "*") && !Has(policy.methods, asked_method)) failures.push_back("method");
  std::string asked_headers;
  if (const auto h = request.find(http::field::access_control_request_headers);
      h != request.end()) {
    asked_headers = std::string(h->value());
    if (!Has(policy.headers, "*")) {
      size_t start = 0;
      while (start <= asked_headers.size()) {
        size_t comma = asked_headers.find(',', start);
        if (comma == std::string::npos) comma = asked_headers.size();
        std::string name = Trim(asked_headers.substr(start, comma - start));
        std::transform(name.begin(), name.end(), name.begin(),
                       [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        if (!name.empty() && !Has(policy.headers, name)) {
          failures.push_back("headers");
          break;
        }
        start = comma + 1;
      }
    }
  }
  if (!failures.empty()) {
    r.status = 400;
    r.body = "Disallowed CORS";
    for (size_t i = 0; i < failures.size(); ++i) r.body += (i ? ", " : " ") + failures[i];
    return r;
  }
  AddOriginHeaders(policy, origin_value, r.headers);
  std::string methods;
  if (Has(policy.methods, "*")) {
    methods = "DELETE, GET, HEAD, OPTIONS, PATCH, POST, PUT";
  } else {
    for (const std::string& m : policy.methods) methods += (methods.empty() ? "" : ", ") + m;
  }
  r.headers.emplace_back("Access-Control-Allow-Methods", methods);
  r.headers.emplace_back("Access-Control-Max-Age", "600");
  if (Has(policy.headers, "*")) {
    if (!asked_headers.empty())
      r.headers.emplace_back("Access-Control-Allow-Headers", asked_headers);
  } else {
    std::string headers;
    for (const std::string& h : policy.headers) headers += (headers.empty() ? "" : ", ") + h;
    r.headers.emplace_back("Access-Control-Allow-Headers", headers);
  }
  r.body = "OK";
  return r;
}

}  // namespace xinfer::server
