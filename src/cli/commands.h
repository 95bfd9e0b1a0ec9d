// Subcommands of the `xinfer` binary. Each Add*Command registers a CLI11 subcommand whose
// callback runs the command and stores the process exit code in *exit_code (0 on success, 1 on
// an error that was printed to stderr as "error: ..."). Callbacks never throw, except CLI11's
// own parse errors, which main() reports.
#pragma once

#include <CLI/CLI.hpp>

namespace xinfer {

void AddGenerateCommand(CLI::App& app, int* exit_code);
void AddTokenizeCommand(CLI::App& app, int* exit_code);
void AddInspectCommand(CLI::App& app, int* exit_code);
void AddChatTemplateCommand(CLI::App& app, int* exit_code);
void AddServeCommand(CLI::App& app, int* exit_code);
void AddMakeModelCommand(CLI::App& app, int* exit_code);
void AddMakeLoraCommand(CLI::App& app, int* exit_code);
void AddDoctorCommand(CLI::App& app, int* exit_code);
void AddQuantizeCommand(CLI::App& app, int* exit_code);
void AddPlanCommand(CLI::App& app, int* exit_code);
// Subcommands of `xinfer bench`: `serve` (load-test an OpenAI endpoint) and `offline` (engine
// throughput without HTTP). Each adds itself to the given `bench` parent.
void AddBenchServeCommand(CLI::App& bench, int* exit_code);
void AddBenchOfflineCommand(CLI::App& bench, int* exit_code);

}  // namespace xinfer
