// The engine flags shared by `generate` and (later) `serve`, named as vLLM names them.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "engine/engine_config.h"

namespace xinfer {

void AddEngineFlags(CLI::App* cmd, EngineConfig* config);

// vLLM's two-letter short flags (-tp, -pp, -dp, also as -tp=N), which CLI11 cannot name, spelled
// out as the long flags AddEngineFlags registers; every other argument unchanged.
std::vector<std::string> ExpandVllmShortFlags(std::vector<std::string> args);

}  // namespace xinfer
