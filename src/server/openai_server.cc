#include "server/openai_server.h"

#include <csignal>
#include <thread>

#include "base/json_depth.h"
#include "base/json_int32.h"
#include "base/logging.h"
#include "base/process_stats.h"
#include "server/embeddings.h"
#include "server/errors.h"
#include "server/generation.h"
#include "server/lora_admin.h"
#include "server/metrics.h"
#include "server/request_log.h"
#include "server/responses_api.h"
#include "server/score.h"

namespace xinfer::server {

using json = nlohmann::ordered_json;

namespace {

std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

// Deeper request bodies are refused (base/json_depth.h says why).
constexpr int kMaxBodyDepth = 512;

net::awaitable<void> SendError(HttpExchange& ex, const ErrorResponse& e) {
  co_await ex.Respond(static_cast<http::status>(e.status), "application/json", e.body, e.headers);
}

}  // namespace

OpenAIServer::OpenAIServer(std::unique_ptr<AsyncEngine> engine,
                           std::unique_ptr<PromptBuilder> prompts, ServeOptions options)
    : engine_(std::move(engine)), prompts_(std::move(prompts)), options_(std::move(options)) {
  created_ = std::chrono::duration_cast<std::chrono::seconds>(
                 std::chrono::system_clock::now().time_since_epoch())
                 .count();
}

OpenAIServer::~OpenAIServer() = default;

StatusOr<std::unique_ptr<OpenAIServer>> OpenAIServer::Create(std::unique_ptr<AsyncEngine> engine,
                                                             std::unique_ptr<PromptBuilder> prompts,
                                                             ServeOptions options) {
  if (!engine) return InvalidArgument("the server needs an engine");
  const ServerConfig& c = options.config;
  if (!c.tool_call_parser.empty() && c.tool_call_parser != "hermes")
    return InvalidArgument("--tool-call-parser: only 'hermes' is supported, got '{}'",
                           c.tool_call_parser);
  if (c.enable_auto_tool_choice && c.tool_call_parser.empty())
    return InvalidArgument("--enable-auto-tool-choice requires --tool-call-parser");
  if (!c.reasoning_parser.empty() && !ReasoningFormatNamed(c.reasoning_parser))
    return InvalidArgument("--reasoning-parser: qwen3 or deepseek_r1, got '{}'",
                           c.reasoning_parser);
  if (options.io_threads < 1) return InvalidArgument("io threads must be >= 1");
  if (options.shutdown_timeout.count() < 0)
    return InvalidArgument("--shutdown-timeout must be >= 0");
  options.http.error_body = [](int status, const std::string& message) {
    return ErrorBody(status, message);
  };
  return std::unique_ptr<OpenAIServer>(
      new OpenAIServer(std::move(engine), std::move(prompts), std::move(options)));
}

ProtocolContext OpenAIServer::Context() const {
  return ProtocolContext{options_.config,
                         prompts_.get(),
                         engine_->tokenizer(),
                         engine_->default_sampling_params(),
                         engine_->config().max_model_len,
                         engine_->model_config().vocab_size,
                         engine_->config().MaxLogprobs(engine_->model_config().vocab_size),
                         &engine_->model_config(),
                         engine_->config().PoolerNormalizes()};
}

net::awaitable<void> OpenAIServer::Json(HttpExchange& ex, const json& body) {
  co_await ex.Respond(http::status::ok, "application/json", Dump(body));
}

StatusOr<json> OpenAIServer::TokenizeBody(const json& body) const {
  XI_RETURN_IF_ERROR(CheckModel(body, options_.config));
  std::vector<int32_t> ids;
  if (body.contains("messages")) {
    // The same messages as a chat request renders (parts joined, null content as "").
    XI_ASSIGN_OR_RETURN(json messages, NormalizeMessages(body["messages"]));
    json chat = {{"messages", std::move(messages)}};
    static const std::string kKeys[] = {"tools", "chat_template_kwargs", "add_generation_prompt",
                                        "continue_final_message"};
    for (const std::string& k : kKeys)
      if (body.contains(k)) chat[k] = body[k];
    if (!prompts_) return NoChatTemplate();
    XI_ASSIGN_OR_RETURN(ids, prompts_->Build(chat));
  } else if (body.contains("prompt") && body["prompt"].is_string()) {
    bool special = true;
    if (body.contains("add_special_tokens") && !body["add_special_tokens"].is_null()) {
      if (!body["add_special_tokens"].is_boolean())
        return InvalidArgument("add_special_tokens must be a boolean");
      special = body["add_special_tokens"].get<bool>();
    }
    XI_ASSIGN_OR_RETURN(ids,
                        engine_->tokenizer().Encode(body["prompt"].get<std::string>(), special));
  } else {
    return InvalidArgument("prompt must be a string (or give messages)");
  }
  return json{{"count", ids.size()},
              {"max_model_len", engine_->config().max_model_len},
              {"tokens", ids},
              {"token_strs", nullptr}};
}

StatusOr<json> OpenAIServer::DetokenizeBody(const json& body) const {
  XI_RETURN_IF_ERROR(CheckModel(body, options_.config));
  const int vocab = engine_->model_config().vocab_size;
  std::vector<int32_t> ids;
  if (!body.contains("tokens") || !body["tokens"].is_array())
    return InvalidArgument("tokens must be a list of token ids");
  for (const json& t : body["tokens"]) {
    const std::optional<int32_t> id = JsonInt32(t);
    if (!id || *id < 0 || *id >= vocab)
      return InvalidArgument("tokens must be a list of token ids in [0, {})", vocab);
    ids.push_back(*id);
  }
  return json{{"prompt", engine_->tokenizer().Decode(ids)}};
}

json OpenAIServer::ModelsBody() const {
  json data = json::array();
  std::vector<std::string> names = {options_.config.served_model_name};
  names.insert(names.end(), options_.config.served_model_aliases.begin(),
               options_.config.served_model_aliases.end());
  for (const std::string& name : names)
    data.push_back({{"id", name},
                    {"object", "model"},
                    {"created", created_},
                    {"owned_by", "xinfer"},
                    {"root", options_.config.model_path},
                    {"parent", nullptr},
                    {"max_model_len", engine_->config().max_model_len},
                    {"permission", json::array()}});
  // As vLLM lists its LoRA modules: rooted at the adapter's folder, parented by the base model.
  for (const LoraNames::Entry& lora : options_.config.loras->List())
    data.push_back({{"id", lora.name},
                    {"object", "model"},
                    {"created", created_},
                    {"owned_by", "xinfer"},
                    {"root", lora.path},
                    {"parent", lora.parent},
                    {"max_model_len", engine_->config().max_model_len},
                    {"permission", json::array()}});
  return {{"object", "list"}, {"data", data}};
}

net::awaitable<void> OpenAIServer::Route(HttpExchange& ex) {
  const HttpRequest& req = ex.request();
  std::string path(req.target());
  if (size_t q = path.find('?'); q != std::string::npos) path.resize(q);
  const bool get = req.method() == http::verb::get;
  const bool post = req.method() == http::verb::post;
  // CORS first: a browser's preflight carries no API key, and errors must be readable by the
  // page too.
  if (std::optional<PreflightResponse> preflight = CorsPreflight(options_.cors, req)) {
    co_await ex.Respond(static_cast<http::status>(preflight->status), "text/plain; charset=utf-8",
                        std::move(preflight->body), preflight->headers);
    co_return;
  }
  ex.AddResponseHeaders(CorsResponseHeaders(options_.cors, req));

  // SageMaker's routes, as vLLM serves them: /ping as /health, /invocations as chat or
  // completions by the body (behind the API key, unlike vLLM's).
  const bool invocations = path == "/invocations";
  if ((path.rfind("/v1/", 0) == 0 || invocations) && !options_.config.api_key.empty()) {
    const std::string auth(req[http::field::authorization]);
    if (auth != "Bearer " + options_.config.api_key) {
      co_await SendError(ex, MakeError(401, auth.empty() ? "missing API key: send "
                                                           "'Authorization: Bearer <key>'"
                                                         : "invalid API key"));
      co_return;
    }
  }
  if ((path == "/health" && get) || (path == "/ping" && (get || post))) {
    co_await ex.Respond(http::status::ok, "text/plain", "");
    co_return;
  }
  if (path == "/version" && get) {
    json version = json::object();
    version["version"] = options_.config.version;
    co_await Json(ex, version);
    co_return;
  }
  if (path == "/metrics" && get) {
    co_await ex.Respond(http::status::ok, "text/plain; version=0.0.4; charset=utf-8",
                        FormatPrometheus(engine_->Stats(), options_.config.served_model_name,
                                         ReadProcessStats(), engine_->config()));
    co_return;
  }
  if (path == "/v1/models" && get) {
    co_await Json(ex, ModelsBody());
    co_return;
  }
  const bool known_post = path == "/v1/chat/completions" || path == "/v1/completions" ||
                          path == "/v1/responses" || path == "/v1/embeddings" ||
                          IsScorePath(path) || IsRerankPath(path) || IsClassifyPath(path) ||
                          path == "/tokenize" || path == "/detokenize" || invocations ||
                          (options_.config.allow_runtime_lora_updating && IsLoraAdminPath(path));
  if (!known_post || !post) {
    const bool known_get = path == "/health" || path == "/version" || path == "/metrics" ||
                           path == "/v1/models" || path == "/ping";
    if (known_post || known_get) {
      co_await SendError(ex, MakeError(405, fmt::format("method {} is not allowed on {}",
                                                        std::string(req.method_string()), path)));
    } else {
      co_await SendError(ex, MakeError(404, fmt::format("route {} {} not found",
                                                        std::string(req.method_string()), path)));
    }
    co_return;
  }
  bool too_deep = false;
  json body = ParseJsonNoDeeperThan<json>(req.body(), kMaxBodyDepth, &too_deep);
  if (too_deep) {
    const ErrorResponse e = MakeError(
        400, fmt::format("the request body nests more than {} levels deep", kMaxBodyDepth));
    co_await SendError(ex, e);
    co_return;
  }
  if (body.is_discarded() || !body.is_object()) {
    co_await SendError(
        ex, MakeError(400, body.is_discarded() ? "the request body is not valid JSON"
                                               : "the request body must be a JSON object"));
    co_return;
  }
  if (IsLoraAdminPath(path)) {
    co_await HandleLoraAdmin(ex, *engine_, options_.config, path, body);
    co_return;
  }
  if (path == "/tokenize" || path == "/detokenize") {
    StatusOr<json> r = path == "/tokenize" ? TokenizeBody(body) : DetokenizeBody(body);
    if (!r.ok()) {
      co_await RespondError(ex, r.status());
    } else {
      co_await Json(ex, *r);
    }
    co_return;
  }
  const ProtocolContext ctx = Context();
  // One kind of model per server, as vLLM: a pooling model answers /v1/embeddings only, a
  // scoring model /score, /rerank and /classify only, a generative one everything else.
  // /invocations goes by the server's kind.
  const EngineConfig& served = engine_->config();
  const bool embeddings =
      path == "/v1/embeddings" || (invocations && body.contains("input") && served.embeds());
  const bool rerank =
      IsRerankPath(path) || (invocations && body.contains("query") && served.scores());
  const bool classify =
      IsClassifyPath(path) || (invocations && body.contains("input") && served.scores());
  const bool score = IsScorePath(path) || rerank || classify ||
                     (invocations && body.contains("text_1") && served.scores());
  if (embeddings != served.embeds() || score != served.scores()) {
    // (Built before the co_await: GCC 12 destroys a conditional's temporaries inside a co_await
    // expression twice.)
    std::string message;
    if (embeddings) {
      message =
          "The model does not support the Embeddings API (serve a pooling model with --task "
          "embed)";
    } else if (score) {
      message = fmt::format(
          "The model does not support the {} API (serve a sequence classification model{})",
          classify ? "Classification" : "Score", classify ? "" : ", e.g. a reranker");
    } else {
      message =
          fmt::format("The model serves {} ({}): {} is not available; use {}",
                      served.embeds() ? "embeddings" : "scores",
                      served.embeds() ? "--task embed" : "a sequence classification model", path,
                      served.embeds() ? "/v1/embeddings" : "/score, /rerank or /classify");
    }
    co_await SendError(ex, MakeError(400, message));
    co_return;
  }
  if (embeddings || score) {
    StatusOr<GenerationRequest> parsed = embeddings ? ParseEmbeddingsRequest(body, ctx)
                                         : rerank   ? ParseRerankRequest(body, ctx)
                                         : classify ? ParseClassifyRequest(body, ctx)
                                                    : ParseScoreRequest(body, ctx);
    if (!parsed.ok()) {
      co_await RespondError(ex, parsed.status());
      co_return;
    }
    co_await HandleGeneration(ex, *engine_, std::move(*parsed));
    co_return;
  }
  if (invocations && !body.contains("messages") && !body.contains("prompt")) {
    co_await SendError(ex, MakeError(400,
                                     "/invocations takes a chat request (with messages) or a "
                                     "completion request (with prompt)"));
    co_return;
  }
  const bool chat = path == "/v1/chat/completions" || (invocations && body.contains("messages"));
  StatusOr<GenerationRequest> parsed = path == "/v1/responses" ? ParseResponsesRequest(body, ctx)
                                       : chat                  ? ParseChatRequest(body, ctx)
                                                               : ParseCompletionRequest(body, ctx);
  if (!parsed.ok()) {
    co_await RespondError(ex, parsed.status());
    co_return;
  }
  if (options_.log_requests)
    for (size_t i = 0; i < parsed->prompts.size(); ++i)
      XI_LOG_INFO("{}", FormatRequestLine(*parsed, i, engine_->tokenizer(), options_.max_log_len));
  co_await HandleGeneration(ex, *engine_, std::move(*parsed));
}

net::awaitable<void> OpenAIServer::LogStats(net::steady_timer& timer) {
  AsyncEngineStats before = engine_->Stats();
  auto last = std::chrono::steady_clock::now();
  std::vector<bool> was_idle(before.replicas.size(), true);
  for (;;) {
    timer.expires_after(options_.log_stats_interval);
    beast::error_code ec;
    co_await timer.async_wait(net::redirect_error(net::use_awaitable, ec));
    if (ec) co_return;  // cancelled: the server is stopping
    const AsyncEngineStats now = engine_->Stats();
    const auto t = std::chrono::steady_clock::now();
    const double seconds = std::chrono::duration<double>(t - last).count();
    for (size_t r = 0; r < now.replicas.size(); ++r) {
      const bool idle = StatsIntervalIdle(before.replicas[r], now.replicas[r]);
      const std::string line =
          FormatStatsLine(static_cast<int>(r), before.replicas[r], now.replicas[r], seconds);
      // As vLLM: an idle interval after an idle one only at debug level.
      if (idle && was_idle[r]) {
        XI_LOG_DEBUG("{}", line);
      } else {
        XI_LOG_INFO("{}", line);
      }
      was_idle[r] = idle;
    }
    before = now;
    last = t;
  }
}

Status OpenAIServer::Run(const std::function<void(int)>& on_listening) {
  net::io_context ioc(options_.io_threads);
  HttpServer http(ioc, options_.http, [this](HttpExchange& ex) { return Route(ex); });
  XI_ASSIGN_OR_RETURN(int port, http.Listen(options_.host, options_.port));
  auto work = net::make_work_guard(ioc);
  http.Start();
  net::steady_timer stats_timer(ioc);
  if (options_.log_stats_interval.count() > 0)
    net::co_spawn(ioc, LogStats(stats_timer), net::detached);

  std::thread drainer;
  std::atomic<bool> stopping{false};
  net::signal_set signals(ioc, SIGINT, SIGTERM);
  signals.async_wait([&](const beast::error_code& ec, int signo) {
    if (ec || stopping.exchange(true)) return;
    XI_LOG_INFO("received signal {}: no new connections; draining in-flight requests (up to {} ms)",
                signo, options_.shutdown_timeout.count());
    http.StopAccepting();
    drainer = std::thread([&] {
      const bool drained = engine_->Shutdown(options_.shutdown_timeout);
      if (!drained) XI_LOG_WARN("shutdown timeout: unfinished requests were aborted");
      // Let the connections write what the engine produced last.
      for (int i = 0; i < 500 && http.active_exchanges() > 0; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      net::post(ioc, [&] { stats_timer.cancel(); });
      work.reset();
      ioc.stop();
    });
  });
  XI_LOG_INFO("serving {} on http://{}:{}", options_.config.served_model_name, options_.host, port);
  if (on_listening) on_listening(port);

  std::vector<std::thread> threads;
  for (int i = 1; i < options_.io_threads; ++i) threads.emplace_back([&] { ioc.run(); });
  ioc.run();
  for (auto& t : threads) t.join();
  if (drainer.joinable()) drainer.join();
  XI_LOG_INFO("server stopped");
  return Status::Ok();
}

}  // namespace xinfer::server
