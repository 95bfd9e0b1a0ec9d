#include "server/lora_admin.h"

#include <fmt/core.h>

#include <algorithm>
#include <memory>
#include <mutex>

#include "base/logging.h"
#include "server/generation.h"

namespace xinfer::server {
namespace {

using json = nlohmann::ordered_json;

std::string StringField(const json& body, const char* key) {
  return body.contains(key) && body[key].is_string() ? body[key].get<std::string>() : "";
}

// Runs fn on every engine and waits (without holding the I/O thread) for the result; `then`
// runs with it on the engine thread first, so that what must follow the call happens even when
// the client hangs up, which stops only the wait.
net::awaitable<Status> OnEngines(HttpExchange& ex, AsyncEngine& engine, AsyncEngine::EngineCall fn,
                                 std::function<void(const Status&)> then = {}) {
  struct Result {
    std::mutex mu;
    bool done = false;
    Status status;
  };
  auto result = std::make_shared<Result>();
  auto notify = ex.MakeNotifier();
  engine.RunOnEngines(std::move(fn), [result, notify, then = std::move(then)](Status s) {
    if (then) then(s);
    {
      std::lock_guard<std::mutex> l(result->mu);
      result->done = true;
      result->status = std::move(s);
    }
    notify();
  });
  for (;;) {
    {
      std::lock_guard<std::mutex> l(result->mu);
      if (result->done) co_return result->status;
    }
    if (ex.client_gone()) co_return Status(StatusCode::kCancelled, "the client hung up");
    co_await ex.WaitEvent();
  }
}

}  // namespace

bool IsLoraAdminPath(const std::string& path) {
  return path == "/v1/load_lora_adapter" || path == "/v1/unload_lora_adapter";
}

net::awaitable<void> HandleLoraAdmin(HttpExchange& ex, AsyncEngine& engine,
                                     const ServerConfig& config, const std::string& path,
                                     const json& body) {
  const std::string name = StringField(body, "lora_name");
  LoraNames& loras = *config.loras;
  if (path == "/v1/unload_lora_adapter") {
    if (name.empty()) {
      co_await RespondError(
          ex, InvalidArgument("'lora_name' needs to be provided to unload a LoRA adapter."));
      co_return;
    }
    // Out of the names first: from now on a request naming it is a 404.
    if (!loras.Remove(name)) {
      co_await RespondError(ex, NotFound("The lora adapter '{}' cannot be found.", name));
      co_return;
    }
    // (Calls built before the co_await: GCC 12 destroys temporaries of a co_await expression
    // twice.)
    AsyncEngine::EngineCall remove = [name](LLMEngine& e) { return e.RemoveLoraAdapter(name); };
    Status s = co_await OnEngines(ex, engine, std::move(remove));
    if (!s.ok() && s.code() != StatusCode::kCancelled)
      XI_LOG_WARN("unloading LoRA adapter '{}': {}", name, s.ToString());
    co_await ex.Respond(http::status::ok, "text/plain; charset=utf-8",
                        fmt::format("Success: LoRA adapter '{}' removed successfully.", name));
    co_return;
  }
  const std::string lora_path = StringField(body, "lora_path");
  if (name.empty() || lora_path.empty()) {
    co_await RespondError(ex,
                          InvalidArgument("Both 'lora_name' and 'lora_path' must be provided."));
    co_return;
  }
  const bool served_name =
      name == config.served_model_name ||
      std::find(config.served_model_aliases.begin(), config.served_model_aliases.end(), name) !=
          config.served_model_aliases.end();
  if (served_name || !loras.Reserve(name)) {
    co_await RespondError(ex,
                          InvalidArgument("The lora adapter '{}' has already been loaded.", name));
    co_return;
  }
  const LoraModule module{name, lora_path, ""};
  std::shared_ptr<LoraNames> names = config.loras;
  AsyncEngine* async = &engine;
  AsyncEngine::EngineCall add = [module](LLMEngine& e) { return e.AddLoraAdapter(module); };
  std::function<void(const Status&)> then =
      [names, async, module, parent = config.served_model_name](const Status& result) {
        if (result.ok()) {
          names->Commit({module.name, module.path, parent});
          return;
        }
        // A replica that did load it drops it again (the others say NotFound: ignored).
        async->RunOnEngines(
            [name = module.name](LLMEngine& e) {
              (void)e.RemoveLoraAdapter(name);
              return Status::Ok();
            },
            [names, name = module.name](Status) { names->Release(name); });
      };
  Status s = co_await OnEngines(ex, engine, std::move(add), std::move(then));
  if (!s.ok()) {
    if (s.code() != StatusCode::kCancelled) co_await RespondError(ex, s);
    co_return;
  }
  co_await ex.Respond(http::status::ok, "text/plain; charset=utf-8",
                      fmt::format("Success: LoRA adapter '{}' added successfully.", name));
}

}  // namespace xinfer::server
