// `xinfer quantize --awq [--group-size 128] SRC_DIR DST_DIR`: round-to-nearest 4-bit AWQ
// (AutoAWQ GEMM layout) of a Hugging Face model folder; see cli/awq_quantize.h.
#include <fmt/core.h>

#include "cli/awq_quantize.h"
#include "cli/cli_util.h"
#include "cli/commands.h"

namespace xinfer {
namespace {

struct QuantizeOptions {
  bool awq = false;
  int group_size = 128;
  std::string src, dst;
};

int RunQuantize(const QuantizeOptions& o) {
  if (!o.awq) return ReportError(InvalidArgument("pass --awq (the only method for now)"));
  Status s = QuantizeModelAwq(o.src, o.dst, {.group_size = o.group_size});
  if (!s.ok()) return ReportError(s);
  fmt::print("wrote {} (AWQ 4-bit, group size {})\n", o.dst, o.group_size);
  return 0;
}

}  // namespace

void AddQuantizeCommand(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<QuantizeOptions>();
  CLI::App* cmd = app.add_subcommand(
      "quantize", "Quantize a Hugging Face model folder (round-to-nearest AWQ 4-bit)");
  cmd->add_flag("--awq", o->awq, "AWQ 4-bit with zero points, AutoAWQ GEMM layout");
  cmd->add_option("--group-size", o->group_size, "Input features per scale/zero (default 128)");
  cmd->add_option("src", o->src, "Source model folder (F32/F16/BF16 safetensors)")->required();
  cmd->add_option("dst", o->dst, "Output folder (must not exist, or be empty)")->required();
  cmd->callback([o, exit_code] { *exit_code = RunQuantize(*o); });
}

}  // namespace xinfer
