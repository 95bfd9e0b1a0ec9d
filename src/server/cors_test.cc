// CORS as vLLM's API server (Starlette's CORSMiddleware) answers browsers.
#include "server/cors.h"

#include <gtest/gtest.h>

namespace xinfer::server {
namespace {

HttpRequest Request(http::verb method, const std::vector<std::pair<std::string, std::string>>& h) {
  HttpRequest r{method, "/v1/chat/completions", 11};
  for (const auto& [k, v] : h) r.set(k, v);
  return r;
}

std::string Get(const Headers& headers, const std::string& name) {
  for (const auto& [k, v] : headers)
    if (k == name) return v;
  return "<absent>";
}

TEST(CorsTest, DefaultAllowsEveryOriginWithoutCredentials) {
  auto policy = ParseCorsPolicy("", "", "", false);
  ASSERT_TRUE(policy.ok());
  const Headers h =
      CorsResponseHeaders(*policy, Request(http::verb::post, {{"Origin", "http://ui.example"}}));
  EXPECT_EQ(Get(h, "Access-Control-Allow-Origin"), "*");
  EXPECT_EQ(Get(h, "Vary"), "<absent>");
  EXPECT_EQ(Get(h, "Access-Control-Allow-Credentials"), "<absent>");
  // No Origin: not a cross-origin request, nothing to add.
  EXPECT_TRUE(CorsResponseHeaders(*policy, Request(http::verb::post, {})).empty());
  // Not a preflight: a plain OPTIONS, or a POST.
  EXPECT_FALSE(CorsPreflight(*policy, Request(http::verb::options, {{"Origin", "http://x"}})));
  EXPECT_FALSE(CorsPreflight(
      *policy, Request(http::verb::post,
                       {{"Origin", "http://x"}, {"Access-Control-Request-Method", "POST"}})));

  auto pre = CorsPreflight(
      *policy, Request(http::verb::options, {{"Origin", "http://ui.example"},
                                             {"Access-Control-Request-Method", "POST"},
                                             {"Access-Control-Request-Headers",
                                              "Authorization, Content-Type, X-Custom"}}));
  ASSERT_TRUE(pre);
  EXPECT_EQ(pre->status, 200);
  EXPECT_EQ(Get(pre->headers, "Access-Control-Allow-Origin"), "*");
  EXPECT_EQ(Get(pre->headers, "Access-Control-Allow-Methods"),
            "DELETE, GET, HEAD, OPTIONS, PATCH, POST, PUT");
  EXPECT_EQ(Get(pre->headers, "Access-Control-Allow-Headers"),
            "Authorization, Content-Type, X-Custom");
  EXPECT_EQ(Get(pre->headers, "Access-Control-Max-Age"), "600");
}

TEST(CorsTest, ListedOriginsMethodsAndHeadersOnly) {
  auto policy = ParseCorsPolicy(R"(["http://a.example", "HTTPS://B.example"])", R"(["post"])",
                                R"(["Authorization"])", false);
  ASSERT_TRUE(policy.ok()) << policy.status().ToString();
  // A listed origin is echoed, with Vary: Origin (the answer depends on it).
  Headers h =
      CorsResponseHeaders(*policy, Request(http::verb::post, {{"Origin", "http://a.example"}}));
  EXPECT_EQ(Get(h, "Access-Control-Allow-Origin"), "http://a.example");
  EXPECT_EQ(Get(h, "Vary"), "Origin");
  h = CorsResponseHeaders(*policy, Request(http::verb::post, {{"Origin", "https://b.example"}}));
  EXPECT_EQ(Get(h, "Access-Control-Allow-Origin"), "https://b.example");
  EXPECT_TRUE(
      CorsResponseHeaders(*policy, Request(http::verb::post, {{"Origin", "http://evil.example"}}))
          .empty());

  auto preflight = [&](const std::string& origin, const std::string& method,
                       const std::string& headers) {
    return CorsPreflight(
        *policy, Request(http::verb::options, {{"Origin", origin},
                                               {"Access-Control-Request-Method", method},
                                               {"Access-Control-Request-Headers", headers}}));
  };
  auto ok = preflight("http://a.example", "POST", "authorization,content-type");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(Get(ok->headers, "Access-Control-Allow-Methods"), "POST");
  EXPECT_EQ(Get(ok->headers, "Access-Control-Allow-Headers"),
            "authorization, accept, accept-language, content-language, content-type");
  auto bad = preflight("http://evil.example", "DELETE", "x-custom");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  EXPECT_EQ(bad->body, "Disallowed CORS origin, method, headers");
  EXPECT_TRUE(bad->headers.empty());
  EXPECT_EQ(preflight("http://a.example", "POST", "x-custom")->body, "Disallowed CORS headers");
}

TEST(CorsTest, CredentialsEchoTheOrigin) {
  auto policy = ParseCorsPolicy("", "", "", true);
  ASSERT_TRUE(policy.ok());
  // Browsers refuse "*" with credentials: the origin itself is sent back.
  const Headers h =
      CorsResponseHeaders(*policy, Request(http::verb::get, {{"Origin", "http://ui.example"}}));
  EXPECT_EQ(Get(h, "Access-Control-Allow-Origin"), "http://ui.example");
  EXPECT_EQ(Get(h, "Access-Control-Allow-Credentials"), "true");
  EXPECT_EQ(Get(h, "Vary"), "Origin");
}

TEST(CorsTest, FlagsThatAreNotJsonListsOfStringsAreRefused) {
  for (const auto& [origins, methods, headers, flag] :
       std::vector<std::tuple<std::string, std::string, std::string, std::string>>{
           {"*", "", "", "--allowed-origins"},
           {"", "[\"GET\", 1]", "", "--allowed-methods"},
           {"", "", "{\"a\": 1}", "--allowed-headers"}}) {
    auto p = ParseCorsPolicy(origins, methods, headers, false);
    ASSERT_FALSE(p.ok()) << flag;
    EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(p.status().message().rfind(flag + " must be a JSON list of strings", 0), 0u)
        << p.status().message();
  }
}

}  // namespace
}  // namespace xinfer::server
