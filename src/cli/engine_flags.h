// The engine flags shared by `generate` and (later) `serve`, named as vLLM names them.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "engine/engine_config.h"

namespace xinfer {

void AddEngineFlags(CLI::App* cmd, EngineConfig* config);

// A vLLM flag for machinery this build does not have, accepted so that a vLLM command line runs
// unchanged: `names` ("--a" or "--a,--b") as a flag, or with `takes_value` an option whose value
// (checked by `check` when given) changes nothing; the help says "Accepted as vLLM takes it; "
// and `why`.
CLI::Option* AddAcceptedVllmFlag(CLI::App* cmd, const std::string& names, const std::string& why,
                                 bool takes_value = false);

// A vLLM flag whose machinery this build does not have and whose absence would change what a
// deployment does (TLS, Python plugins): refused when given, with "<name> is not available: "
// and `why`, rather than silently run another way.
void AddRefusedVllmFlag(CLI::App* cmd, const std::string& names, const std::string& why,
                        bool takes_value = false);

// vLLM's two-letter short flags (-tp, -pp, -dp, also as -tp=N), which CLI11 cannot name, spelled
// out as the long flags AddEngineFlags registers; every other argument unchanged.
std::vector<std::string> ExpandVllmShortFlags(std::vector<std::string> args);

}  // namespace xinfer
