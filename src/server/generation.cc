#include "server/generation.h"

#include "base/logging.h"
#include "server/embeddings.h"
#include "server/errors.h"
#include "server/responses.h"
#include "server/responses_api.h"
#include "server/score.h"

namespace xinfer::server {

net::awaitable<void> RespondError(HttpExchange& exchange, const Status& status) {
  ErrorResponse e = ErrorFromStatus(status);
  co_await exchange.Respond(static_cast<http::status>(e.status), "application/json",
                            std::move(e.body), e.headers);
}

namespace {

// Cancels the engine requests of an exchange that ends early, whatever the exit path.
struct CancelGuard {
  AsyncEngine& engine;
  std::vector<std::shared_ptr<RequestStream>>& streams;
  bool armed = true;
  ~CancelGuard() {
    if (!armed) return;
    for (const auto& s : streams) engine.Cancel(s->id());
  }
};

}  // namespace

net::awaitable<void> HandleGeneration(HttpExchange& ex, AsyncEngine& engine,
                                      GenerationRequest req) {
  std::vector<std::shared_ptr<RequestStream>> streams;
  CancelGuard guard{engine, streams};
  auto notify = ex.MakeNotifier();
  for (size_t i = 0; i < req.prompts.size(); ++i) {
    EngineRequest er{req.prompts[i], req.params, req.priority, req.lora_name};
    const std::string id = req.prompts.size() == 1 ? req.id : req.id + "-" + std::to_string(i);
    auto s = engine.Submit(id, std::move(er), notify);
    if (!s.ok()) {
      co_await RespondError(ex, s.status());
      co_return;
    }
    streams.push_back(std::move(*s));
  }
  std::unique_ptr<OutputBuilder> output;
  if (req.endpoint == Endpoint::kResponses) {
    output = std::make_unique<ResponsesApiBuilder>(req);
  } else if (req.endpoint == Endpoint::kEmbeddings) {
    output = std::make_unique<EmbeddingsBuilder>(req);
  } else if (req.endpoint == Endpoint::kScore || req.endpoint == Endpoint::kRerank ||
             req.endpoint == Endpoint::kClassify) {
    output = std::make_unique<ScoreBuilder>(req);
  } else {
    output = std::make_unique<ResponseBuilder>(req, engine.tokenizer());
  }
  OutputBuilder& builder = *output;
  std::vector<bool> done(streams.size(), false);
  bool started = false;
  for (;;) {
    co_await ex.WaitEvent();
    if (ex.client_gone()) co_return;  // the guard cancels
    std::string events;
    Status error;
    bool all_done = true;
    for (size_t i = 0; i < streams.size(); ++i) {
      if (done[i]) continue;
      RequestStream::Batch b = streams[i]->Drain();
      for (const RequestOutput& out : b.outputs) events += builder.Add(static_cast<int>(i), out);
      if (!b.error.ok() && error.ok()) error = b.error;
      done[i] = b.done;
      all_done = all_done && b.done;
    }
    if (!error.ok()) {
      if (!started) {
        co_await RespondError(ex, error);
        co_return;
      }
      ErrorResponse e = ErrorFromStatus(error);
      events += "data: " + e.body + "\n\n";
      all_done = true;
    }
    if (req.stream && (!events.empty() || all_done)) {
      if (!started) {
        started = true;
        if (!co_await ex.BeginStream("text/event-stream; charset=utf-8")) co_return;
        events = builder.StreamStart() + events;
      }
      if (all_done) events += builder.StreamEnd();
      if (!co_await ex.Write(std::move(events))) co_return;
    }
    if (all_done) break;
  }
  guard.armed = false;
  if (req.stream) {
    co_await ex.End();
    co_return;
  }
  co_await ex.Respond(
      http::status::ok, "application/json",
      builder.Response().dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace));
}

}  // namespace xinfer::server
