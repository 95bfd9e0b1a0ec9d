// The lines the server logs as vLLM's API server does, so that operators' log searches and
// dashboards built on vLLM's logs read ours: the periodic stats line (vLLM's LoggingStatLogger,
// every 10 s unless --disable-log-stats) and the per-request line (--enable-log-requests).
// Plain functions; thread-safe.
#pragma once

#include <string>

#include "engine/llm_engine.h"
#include "server/protocol.h"
#include "tokenizer/tokenizer.h"

namespace xinfer::server {

// "Engine 000: Avg prompt throughput: 12.5 tokens/s, Avg generation throughput: 40.1 tokens/s,
// Running: 3 reqs, Waiting: 0 reqs, KV cache usage: 1.2%, Prefix cache hit rate: 35.0%" for
// data-parallel replica `engine` over the `seconds` between its stats `before` and `now`
// (throughputs from the counters' differences; the hit rate over all queries so far).
std::string FormatStatsLine(int engine, const EngineStats& before, const EngineStats& now,
                            double seconds);
// Whether that line is worth an info log: anything was computed in this interval or the last
// (vLLM logs idle intervals at debug level only).
bool StatsIntervalIdle(const EngineStats& before, const EngineStats& now);

// "Received request chatcmpl-...: prompt: '...', params: temperature=0.7 ..., prompt_token_ids:
// [...]" per prompt of `request`; prompt text and ids cut to `max_log_len` characters / ids
// (-1: whole), as vLLM's --max-log-len cuts them.
std::string FormatRequestLine(const GenerationRequest& request, size_t prompt_index,
                              const Tokenizer& tokenizer, int max_log_len);

}  // namespace xinfer::server
