// GET /metrics: AsyncEngine statistics in the Prometheus text format (version 0.0.4), with vLLM's
// metric names so existing dashboards and scrapers work unchanged. Counters carry the "_total"
// suffix on their samples, as prometheus_client (and so vLLM) writes them. Pure; thread-safe.
#pragma once

#include <string>

#include "engine/async_engine.h"

namespace xinfer::server {

std::string FormatPrometheus(const AsyncEngineStats& stats, const std::string& model_name);

}  // namespace xinfer::server
