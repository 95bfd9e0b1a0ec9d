// vLLM's runtime LoRA updating (VLLM_ALLOW_RUNTIME_LORA_UPDATING): POST /v1/load_lora_adapter
// {"lora_name", "lora_path"} loads an adapter onto every replica's engine and serves it under
// that name; POST /v1/unload_lora_adapter {"lora_name"} stops serving it (requests already
// running finish with it). Answers as vLLM's: 200 with a "Success: ..." text, or an error.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "engine/async_engine.h"
#include "server/http_server.h"
#include "server/protocol.h"

namespace xinfer::server {

bool IsLoraAdminPath(const std::string& path);

// `body` is the parsed JSON object; `config.loras` is updated on success.
net::awaitable<void> HandleLoraAdmin(HttpExchange& exchange, AsyncEngine& engine,
                                     const ServerConfig& config, const std::string& path,
                                     const nlohmann::ordered_json& body);

}  // namespace xinfer::server
