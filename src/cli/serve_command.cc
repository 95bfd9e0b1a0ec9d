// `xinfer serve MODEL`: the OpenAI-compatible HTTP server (flags named as vLLM names them).
#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "base/logging.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/engine_flags.h"
#include "engine/async_engine.h"
#include "engine/prompt_builder.h"
#include "server/openai_server.h"

namespace xinfer {
namespace {

struct ServeFlags {
  EngineConfig engine;
  std::string host = "127.0.0.1";
  int port = 8000;
  std::vector<std::string> served_model_names;
  std::string api_key;
  std::string chat_template;
  int max_queue_len = 0;
  double shutdown_timeout = 30;
  std::string reasoning_parser;
  bool enable_auto_tool_choice = false;
  std::string tool_call_parser;
  int io_threads = 1;
  uint64_t max_request_body_bytes = uint64_t{32} << 20;
  int timeout_keep_alive = 30;
  std::string debug_scripted_output;
  std::string allowed_origins, allowed_methods, allowed_headers;
  bool allow_credentials = false;
  bool disable_log_stats = false;
  bool enable_log_requests = false;
  int max_log_len = -1;
  std::string response_role = "assistant";
  bool return_tokens_as_token_ids = false;
  bool enable_force_include_usage = false;
};

// vLLM's VLLM_LOG_STATS_INTERVAL: seconds between stats lines (default 10).
StatusOr<std::chrono::milliseconds> LogStatsInterval() {
  const char* env = std::getenv("VLLM_LOG_STATS_INTERVAL");
  if (env == nullptr || *env == 0) return std::chrono::milliseconds(10000);
  char* end = nullptr;
  const double seconds = std::strtod(env, &end);
  if (*end != 0 || !(seconds > 0) || seconds > 86400)
    return InvalidArgument("VLLM_LOG_STATS_INTERVAL must be seconds in (0, 86400], got '{}'", env);
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000 + 0.5));
}

int RunServe(const ServeFlags& f) {
  if (f.shutdown_timeout < 0)
    return ReportError(InvalidArgument("--shutdown-timeout must be >= 0"));
  if (f.max_queue_len < 0) return ReportError(InvalidArgument("--max-queue-len must be >= 0"));
  if (f.timeout_keep_alive < 1)
    return ReportError(InvalidArgument("--timeout-keep-alive must be >= 1"));
  server::ServeOptions o;
  o.config.served_model_name =
      f.served_model_names.empty() ? f.engine.model : f.served_model_names[0];
  if (f.served_model_names.size() > 1)
    o.config.served_model_aliases.assign(f.served_model_names.begin() + 1,
                                         f.served_model_names.end());
  o.config.model_path = f.engine.model;
  if (f.response_role.empty()) return ReportError(InvalidArgument("--response-role is empty"));
  o.config.response_role = f.response_role;
  o.config.return_tokens_as_token_ids = f.return_tokens_as_token_ids;
  o.config.enable_force_include_usage = f.enable_force_include_usage;
  // vLLM reads it as a boolean: "1" or "true" (any case) turn it on.
  if (const char* env = std::getenv("VLLM_ALLOW_RUNTIME_LORA_UPDATING")) {
    std::string v = env;
    for (char& ch : v) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    o.config.allow_runtime_lora_updating = v == "1" || v == "true";
  }
  for (const std::string& text : f.engine.lora_modules) {
    auto module = ParseLoraModule(text);
    if (!module.ok()) return ReportError(module.status());
    if (module->name == o.config.served_model_name ||
        std::find(o.config.served_model_aliases.begin(), o.config.served_model_aliases.end(),
                  module->name) != o.config.served_model_aliases.end())
      return ReportError(
          InvalidArgument("--lora-modules: '{}' is already the served model's name", module->name));
    o.config.loras->Add(
        {module->name, module->path,
         module->base_model_name.empty() ? o.config.served_model_name : module->base_model_name});
  }
  o.config.api_key = f.api_key;
  o.config.version = XINFER_VERSION;
  o.config.enable_auto_tool_choice = f.enable_auto_tool_choice;
  o.config.tool_call_parser = f.tool_call_parser;
  o.config.reasoning_parser = f.reasoning_parser;
  o.host = f.host;
  o.port = f.port;
  o.io_threads = f.io_threads;
  o.shutdown_timeout = std::chrono::milliseconds(static_cast<int64_t>(f.shutdown_timeout * 1000));
  o.http.max_body_bytes = f.max_request_body_bytes;
  o.http.header_timeout = std::chrono::seconds(f.timeout_keep_alive);
  auto cors = server::ParseCorsPolicy(f.allowed_origins, f.allowed_methods, f.allowed_headers,
                                      f.allow_credentials);
  if (!cors.ok()) return ReportError(cors.status());
  o.cors = *cors;
  o.log_requests = f.enable_log_requests;
  o.max_log_len = f.max_log_len;
  if (f.disable_log_stats) {
    o.log_stats_interval = std::chrono::milliseconds(0);
  } else {
    auto interval = LogStatsInterval();
    if (!interval.ok()) return ReportError(interval.status());
    o.log_stats_interval = *interval;
  }

  // One engine per data-parallel replica, each on its share of the cores and memory.
  std::vector<std::unique_ptr<LLMEngine>> engines;
  for (int rank = 0; rank < std::max(f.engine.data_parallel_size, 1); ++rank) {
    auto engine = LLMEngine::Create(f.engine, rank);
    if (!engine.ok()) return ReportError(engine.status());
    engines.push_back(std::move(*engine));
  }
  auto prompts =
      PromptBuilder::Create(f.engine.TokenizerPath(), engines[0]->tokenizer(), f.chat_template);
  std::unique_ptr<PromptBuilder> builder;
  if (prompts.ok()) {
    builder = std::move(*prompts);
  } else if (prompts.status().code() == StatusCode::kNotFound && f.chat_template.empty()) {
    // A model without a chat template (e.g. TinyStories) still serves /v1/completions; chat
    // requests get a 400.
    XI_LOG_WARN("no chat template ({}); /v1/chat/completions is disabled",
                prompts.status().message());
  } else {
    return ReportError(prompts.status());
  }
  AsyncEngineOptions ao;
  ao.max_queue_len = f.max_queue_len;
  ao.scripted_output_file = f.debug_scripted_output;
  auto async = AsyncEngine::Create(std::move(engines), ao);
  if (!async.ok()) return ReportError(async.status());
  auto srv = server::OpenAIServer::Create(std::move(*async), std::move(builder), std::move(o));
  if (!srv.ok()) return ReportError(srv.status());
  Status s = (*srv)->Run([](int port) {
    // Scripts and tests wait for this line to know the port (--port 0 picks a free one).
    std::fprintf(stdout, "xinfer: listening on port %d\n", port);
    std::fflush(stdout);
  });
  if (!s.ok()) return ReportError(s);
  return 0;
}

}  // namespace

void AddServeCommand(CLI::App& app, int* exit_code) {
  auto f = std::make_shared<ServeFlags>();
  CLI::App* cmd = app.add_subcommand("serve", "Serve a model over an OpenAI-compatible HTTP API");
  cmd->add_option("model", f->engine.model, "Hugging Face model folder")->required();
  cmd->add_option("--host", f->host, "Address to listen on (default 127.0.0.1)");
  cmd->add_option("--port", f->port, "Port (default 8000; 0 picks a free one)");
  cmd->add_option("--served-model-name", f->served_model_names,
                  "Model name(s) in the API (default: the model path); requests may use any, "
                  "metrics and logs the first");
  cmd->add_option("--api-key", f->api_key, "Require 'Authorization: Bearer KEY' on /v1/ routes");
  cmd->add_option("--chat-template", f->chat_template, "Chat template file or text");
  cmd->add_option("--max-queue-len", f->max_queue_len,
                  "Waiting requests at most; more get 503 + Retry-After (default 0: no cap)");
  cmd->add_option("--shutdown-timeout", f->shutdown_timeout,
                  "Seconds in-flight requests may take to finish after SIGTERM (default 30)");
  cmd->add_option("--reasoning-parser", f->reasoning_parser,
                  "Split <think> reasoning into reasoning_content: qwen3 (Qwen3), or deepseek_r1 "
                  "(QwQ, DeepSeek-R1-Distill-Qwen: the output starts inside the reasoning)");
  AddAcceptedVllmFlag(cmd, "--enable-reasoning",
                      "(older vLLM's) reasoning is split whenever --reasoning-parser is given");
  cmd->add_flag("--enable-auto-tool-choice", f->enable_auto_tool_choice,
                "Parse tool calls when tool_choice is auto");
  cmd->add_option("--tool-call-parser", f->tool_call_parser, "Tool call format: hermes");
  cmd->add_option("--api-server-threads", f->io_threads, "HTTP event-loop threads (default 1)");
  cmd->add_option("--max-request-body-bytes", f->max_request_body_bytes,
                  "Larger request bodies get 413 (default 32 MiB)");
  cmd->add_option("--timeout-keep-alive", f->timeout_keep_alive,
                  "Seconds to wait for a request's headers, idle keep-alive included (default 30)");
  cmd->add_option("--seed", f->engine.seed,
                  "Seed of the per-request seeds of requests that give none: the same seed, the "
                  "same samples for the same requests (default: random)");
  cmd->add_flag("--disable-log-stats", f->disable_log_stats,
                "Do not log the engine's throughput, queue and cache line every 10 s "
                "($VLLM_LOG_STATS_INTERVAL seconds)");
  cmd->add_flag("--enable-log-requests", f->enable_log_requests,
                "Log each request's prompt and sampling parameters when it arrives");
  AddAcceptedVllmFlag(cmd, "--disable-log-requests",
                      "requests are logged only with --enable-log-requests");
  cmd->add_option("--max-log-len", f->max_log_len,
                  "Prompt characters and token ids --enable-log-requests logs at most (default: "
                  "all)")
      ->check(CLI::NonNegativeNumber);
  AddAcceptedVllmFlag(cmd, "--uvicorn-log-level",
                      "(critical, error, warning, info, debug, trace) the server writes no access "
                      "log, and $XINFER_LOG_LEVEL sets its log level",
                      true)
      ->check(CLI::IsMember({"critical", "error", "warning", "info", "debug", "trace"}));
  AddAcceptedVllmFlag(cmd, "--disable-uvicorn-access-log,--disable-fastapi-docs",
                      "there is no access log and no docs page");
  cmd->add_option("--allowed-origins", f->allowed_origins,
                  "Browser origins that may call the API, as a JSON list (default '[\"*\"]')");
  cmd->add_option("--allowed-methods", f->allowed_methods,
                  "HTTP methods browsers may use, as a JSON list (default '[\"*\"]')");
  cmd->add_option("--allowed-headers", f->allowed_headers,
                  "Request headers browsers may send, as a JSON list (default '[\"*\"]')");
  cmd->add_flag("--allow-credentials", f->allow_credentials,
                "Let browsers send credentials (cookies, HTTP auth) cross-origin");
  AddAcceptedVllmFlag(cmd, "--enable-prompt-tokens-details",
                      "usage.prompt_tokens_details.cached_tokens is always sent");
  cmd->add_option("--response-role", f->response_role,
                  "Role of chat answers to prompts that end with the generation prompt (default "
                  "assistant)");
  cmd->add_flag("--return-tokens-as-token-ids", f->return_tokens_as_token_ids,
                "Name logprobs' tokens token_id:<id> instead of their text");
  cmd->add_flag("--enable-force-include-usage", f->enable_force_include_usage,
                "End every streamed answer with a usage chunk (as stream_options.include_usage)");
  AddAcceptedVllmFlag(cmd, "--disable-frontend-multiprocessing",
                      "the HTTP server and the engine are threads of one process");
  AddAcceptedVllmFlag(cmd, "--root-path",
                      "routes are served at /; a proxy in front strips its own prefix", true);
  AddRefusedVllmFlag(cmd, "--ssl-keyfile,--ssl-certfile,--ssl-ca-certs,--ssl-cert-reqs",
                     "the server speaks plain HTTP; terminate TLS in a proxy in front of it "
                     "(nginx, envoy)",
                     true);
  AddRefusedVllmFlag(cmd, "--middleware,--tool-parser-plugin",
                     "they load Python code; the tool-call parser is built in (hermes)", true);
  // Test-only: see AsyncEngineOptions::scripted_output_file. Hidden (empty group).
  cmd->add_option("--debug-scripted-output", f->debug_scripted_output)->group("");
  AddEngineFlags(cmd, &f->engine);
  cmd->callback([f, exit_code] { *exit_code = RunServe(*f); });
}

}  // namespace xinfer
