// The OpenAI-compatible server: routes, authentication, and the process lifecycle of
// `xinfer serve` (listen, serve until SIGINT/SIGTERM, then drain gracefully).
//
// Routes: POST /v1/chat/completions, POST /v1/completions, GET /v1/models, GET /health,
// GET /version, GET /metrics, POST /tokenize, POST /detokenize. With an API key, every /v1/ route
// needs "Authorization: Bearer <key>" (as vLLM).
//
// Ownership: owns the AsyncEngine and the PromptBuilder (null when the model has no chat
// template: chat requests then get a 400). Run() blocks the calling thread.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "engine/async_engine.h"
#include "engine/prompt_builder.h"
#include "server/cors.h"
#include "server/http_server.h"
#include "server/protocol.h"

namespace xinfer::server {

struct ServeOptions {
  ServerConfig config;
  HttpServerOptions http;
  std::string host = "127.0.0.1";
  int port = 8000;
  int io_threads = 1;  // threads running the event loop (connections are spread over them)
  // After SIGTERM/SIGINT: how long in-flight requests may take to finish before they are aborted.
  std::chrono::milliseconds shutdown_timeout{30000};
  // vLLM's periodic stats line (request_log.h) every this often; 0: never (--disable-log-stats).
  std::chrono::milliseconds log_stats_interval{10000};
  // vLLM's --enable-log-requests: each request's prompt and parameters logged when it arrives,
  // prompt text and ids cut to max_log_len (-1: whole; vLLM's --max-log-len).
  bool log_requests = false;
  int max_log_len = -1;
  // Which browser origins may call the API (cors.h; vLLM's --allowed-origins and friends).
  CorsPolicy cors;
};

class OpenAIServer {
 public:
  static StatusOr<std::unique_ptr<OpenAIServer>> Create(std::unique_ptr<AsyncEngine> engine,
                                                        std::unique_ptr<PromptBuilder> prompts,
                                                        ServeOptions options);
  ~OpenAIServer();

  // Listens, serves until SIGINT/SIGTERM, then: closes the listening socket (new connections
  // are refused), lets in-flight requests finish within shutdown_timeout and returns OK.
  // `on_listening(port)` runs once the socket accepts connections.
  Status Run(const std::function<void(int)>& on_listening = {});

 private:
  OpenAIServer(std::unique_ptr<AsyncEngine> engine, std::unique_ptr<PromptBuilder> prompts,
               ServeOptions options);
  net::awaitable<void> Route(HttpExchange& ex);
  net::awaitable<void> Json(HttpExchange& ex, const nlohmann::ordered_json& body);
  // Plain functions: GCC 12 miscompiles braced JSON initializers inside coroutines.
  StatusOr<nlohmann::ordered_json> TokenizeBody(const nlohmann::ordered_json& body) const;
  StatusOr<nlohmann::ordered_json> DetokenizeBody(const nlohmann::ordered_json& body) const;
  nlohmann::ordered_json ModelsBody() const;
  ProtocolContext Context() const;
  // Logs the stats line of each replica every log_stats_interval until the timer is cancelled.
  net::awaitable<void> LogStats(net::steady_timer& timer);

  std::unique_ptr<AsyncEngine> engine_;
  std::unique_ptr<PromptBuilder> prompts_;
  ServeOptions options_;
  int64_t created_ = 0;
};

}  // namespace xinfer::server
