// The engine flags shared by `generate` and (later) `serve`, named as vLLM names them.
#pragma once

#include <CLI/CLI.hpp>

#include "engine/engine_config.h"

namespace xinfer {

void AddEngineFlags(CLI::App* cmd, EngineConfig* config);

}  // namespace xinfer
