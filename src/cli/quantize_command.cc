// `xinfer quantize --awq [--group-size 128] SRC_DIR DST_DIR`: round-to-nearest 4-bit AWQ
// (AutoAWQ GEMM layout) of a Hugging Face model folder; see cli/awq_quantize.h.
// `xinfer quantize --gguf TYPE SRC_DIR DST.gguf`: the folder as one llama.cpp GGUF file (f32,
// f16, bf16, q8_0, q4_0); see cli/gguf_export.h.
#include <fmt/core.h>

#include "cli/awq_quantize.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/gguf_export.h"

namespace xinfer {
namespace {

struct QuantizeOptions {
  bool awq = false;
  std::string gguf;  // the GGUF type; empty when not exporting to GGUF
  int group_size = 128;
  std::string src, dst;
};

int RunQuantize(const QuantizeOptions& o) {
  if (o.awq == !o.gguf.empty())
    return ReportError(InvalidArgument("pass exactly one of --awq and --gguf TYPE"));
  if (!o.gguf.empty()) {
    auto type = ParseGgufExportType(o.gguf);
    if (!type.ok()) return ReportError(type.status());
    Status s = ExportGguf(o.src, o.dst, {.type = *type});
    if (!s.ok()) return ReportError(s);
    fmt::print("wrote {} (GGUF, {})\n", o.dst, GgufExportTypeName(*type));
    return 0;
  }
  Status s = QuantizeModelAwq(o.src, o.dst, {.group_size = o.group_size});
  if (!s.ok()) return ReportError(s);
  fmt::print("wrote {} (AWQ 4-bit, group size {})\n", o.dst, o.group_size);
  return 0;
}

}  // namespace

void AddQuantizeCommand(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<QuantizeOptions>();
  CLI::App* cmd = app.add_subcommand(
      "quantize",
      "Quantize a Hugging Face model folder (AWQ 4-bit) or export it as a llama.cpp GGUF file");
  cmd->add_flag("--awq", o->awq, "AWQ 4-bit with zero points, AutoAWQ GEMM layout");
  cmd->add_option("--gguf", o->gguf,
                  "Write one GGUF file of this type: f32, f16, bf16, q8_0 or q4_0 (norms stay "
                  "F32; like llama-quantize --pure)");
  cmd->add_option("--group-size", o->group_size,
                  "AWQ: input features per scale/zero (default 128)");
  cmd->add_option("src", o->src, "Source model folder (F32/F16/BF16 safetensors)")->required();
  cmd->add_option("dst", o->dst,
                  "Output folder for --awq (must not exist, or be empty); output .gguf file for "
                  "--gguf (must not exist)")
      ->required();
  cmd->callback([o, exit_code] { *exit_code = RunQuantize(*o); });
}

}  // namespace xinfer
