// Runs one chat/completions request on the AsyncEngine and answers it, as one JSON response or
// an SSE stream. A client that hangs up (seen while writing or while waiting for the engine)
// gets its requests cancelled at once, which frees their KV blocks before the next engine step.
#pragma once

#include "engine/async_engine.h"
#include "server/http_server.h"
#include "server/protocol.h"

namespace xinfer::server {

net::awaitable<void> HandleGeneration(HttpExchange& exchange, AsyncEngine& engine,
                                      GenerationRequest request);

// Sends the OpenAI error response for `status`.
net::awaitable<void> RespondError(HttpExchange& exchange, const Status& status);

}  // namespace xinfer::server
