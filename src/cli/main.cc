// xinfer: one binary, many subcommands (generate, tokenize, inspect, chat-template, ...).
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/engine_flags.h"

int main(int argc, char** argv) {
  CLI::App app{"xinfer: an inference server for Qwen-family LLMs"};
  app.set_version_flag("--version", std::string("xinfer ") + XINFER_VERSION);
  app.require_subcommand(1);
  int exit_code = 0;
  xinfer::AddGenerateCommand(app, &exit_code);
  xinfer::AddTokenizeCommand(app, &exit_code);
  xinfer::AddInspectCommand(app, &exit_code);
  xinfer::AddChatTemplateCommand(app, &exit_code);
  xinfer::AddServeCommand(app, &exit_code);
  xinfer::AddMakeModelCommand(app, &exit_code);
  xinfer::AddMakeLoraCommand(app, &exit_code);
  xinfer::AddDoctorCommand(app, &exit_code);
  xinfer::AddQuantizeCommand(app, &exit_code);
  xinfer::AddPlanCommand(app, &exit_code);
  CLI::App* bench =
      app.add_subcommand("bench", "Benchmarks: serve (HTTP load) and offline (engine)");
  bench->require_subcommand(1);
  xinfer::AddBenchServeCommand(*bench, &exit_code);
  xinfer::AddBenchOfflineCommand(*bench, &exit_code);
  try {
    // CLI11 takes the arguments in reverse order (its parse(vector) convention).
    std::vector<std::string> args =
        xinfer::ExpandVllmShortFlags(std::vector<std::string>(argv + 1, argv + argc));
    std::reverse(args.begin(), args.end());
    app.name(argv[0]);  // as parse(argc, argv) names it, for the usage lines
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return exit_code;
}
