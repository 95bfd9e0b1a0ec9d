// GET /metrics: AsyncEngine statistics in the Prometheus text format (version 0.0.4), with vLLM's
// metric names so existing dashboards and scrapers work unchanged. Counters carry the "_total"
// suffix on their samples, as prometheus_client (and so vLLM) writes them. The process_* metrics
// of prometheus_client's process collector come from `process` (base/process_stats.h), read by
// the caller. `cache` (the engine's resolved config) gives vLLM's vllm:cache_config_info. Pure;
// thread-safe.
#pragma once

#include <string>

#include "base/process_stats.h"
#include "engine/async_engine.h"

namespace xinfer::server {

std::string FormatPrometheus(const AsyncEngineStats& stats, const std::string& model_name,
                             const ProcessStats& process, const EngineConfig& cache);

}  // namespace xinfer::server
