// `xinfer doctor [--measure] [--model DIR] [--threads N]`: the machine as the CPU backend sees
// it (cores, memory, ISA, which kernels run), optionally its measured limits (read bandwidth,
// FP32 FMA and BF16 dot peaks) and the decode/prefill rooflines they give for a model.
#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string_view>
#include <thread>

#include "backend/cpu/cpu_kernels.h"
#include "base/cpu_topology.h"
#include "base/huge_pages.h"
#include "base/thread_pool.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/perf_model.h"
#include "engine/engine_config.h"
#include "engine/gguf_tokenizer_loader.h"

namespace xinfer {
namespace {

struct DoctorOptions {
  bool measure = false;
  std::string model;
  int threads = 0;
  std::string dtype = "auto";
  bool json = false;
};

std::string CpuModelName() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown";
}

int Run(const DoctorOptions& o) {
  const int threads = o.threads > 0 ? o.threads : AvailableCpuCount();
  const cpu::CpuFeatures& f = cpu::DetectCpuFeatures();
  const double mem_gib =
      static_cast<double>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGE_SIZE) / (1 << 30);
  if (Status s = ValidateDtype(o.dtype); !s.ok()) return ReportError(s);
  const bool bf16_activations = o.dtype == "bfloat16";
  const char* bf16_path = cpu::Bf16PathName(cpu::SelectBf16Path(f, bf16_activations));
  nlohmann::json j = {{"cpu", CpuModelName()},
                      {"cores", std::thread::hardware_concurrency()},
                      {"threads", threads},
                      {"memory_gib", mem_gib},
                      {"avx2", f.avx2},
                      {"avx512", f.avx512},
                      {"avx512_bf16", f.avx512_bf16},
                      {"avx512_vnni", f.avx512_vnni},
                      {"neon_dotprod", f.neon_dotprod},
                      {"kernels", cpu::KernelIsaName()},
                      {"bf16_linear_path", bf16_path},
                      {"read_once_prefetch", f.read_once_non_temporal ? "nta" : "l2"},
                      {"transparent_huge_pages", TransparentHugePageMode()}};
  // What --cpu-threads-bind auto makes of this machine: the CPUs this process may use per NUMA
  // node (a node with none of them left out), for choosing --tensor-parallel-size.
  const std::vector<int> allowed = AllowedCpus();
  nlohmann::json numa = nlohmann::json::array();
  const auto nodes = NumaNodeCpus();
  for (size_t n = 0; n < nodes.size(); ++n) {
    std::vector<int> mine;
    for (int c : nodes[n])
      if (std::binary_search(allowed.begin(), allowed.end(), c)) mine.push_back(c);
    if (!mine.empty()) numa.push_back({{"node", n}, {"cpus", FormatCpuList(mine)}});
  }
  j["allowed_cpus"] = FormatCpuList(allowed);
  j["numa_nodes"] = numa;
  MachineLimits limits;
  if (o.measure) {
    limits = MeasureMachineLimits(threads);
    j["read_gb_s"] = limits.read_gb_s;
    j["peak_f32_gflop_s"] = limits.f32_gflop_s;
    j["peak_bf16_gflop_s"] = limits.bf16_gflop_s;
    j["peak_int8_gop_s"] = limits.int8_gop_s;
  }
  if (!o.model.empty()) {
    auto cost = ComputeModelCost(o.model, DType::kF32, bf16_activations);
    if (!cost.ok()) return ReportError(cost.status());
    j["model"] = {{"dir", o.model},
                  {"dtype", cost->dtype},
                  {"weight_bytes", cost->weight_bytes},
                  {"decode_read_bytes", cost->decode_read_bytes},
                  {"gflop_per_token", (cost->linear_flops + cost->lm_head_flops) / 1e9}};
    if (o.measure) {
      // Int8 activations: the engine's default for GGUF files.
      const ComputePeak peak = ComputePeakFor(*cost, bf16_activations, IsGgufModelPath(o.model));
      const Roofline r = ComputeRoofline(*cost, limits, 0, peak);
      j["roofline"] = {{"decode_tok_s_per_seq", r.decode_tok_s_per_seq},
                       {"prefill_tok_s", r.prefill_tok_s},
                       {"peak", r.peak_name},
                       {"decode_16_seqs_tok_s", BatchedDecodeRoofline(*cost, limits, 16, 0, peak)},
                       {"decode_64_seqs_tok_s", BatchedDecodeRoofline(*cost, limits, 64, 0, peak)}};
    }
  }
  if (o.json) {
    fmt::print("{}\n", j.dump(2));
    return 0;
  }
  fmt::print("cpu:      {} ({} cores, {} threads), {:.1f} GiB memory\n",
             j["cpu"].get<std::string>(), std::thread::hardware_concurrency(), threads, mem_gib);
  fmt::print(
      "isa:      avx2 {}, avx512 {}, avx512-bf16 {}, avx512-vnni {}, neon-dotprod {}; kernels {}, "
      "BF16 Linear path {}, read-once prefetch {}\n",
      f.avx2, f.avx512, f.avx512_bf16, f.avx512_vnni, f.neon_dotprod, cpu::KernelIsaName(),
      bf16_path, f.read_once_non_temporal ? "nta" : "l2");
  // Weights and the KV cache are advised as huge pages; "never" costs decode ~25 % (TLB misses).
  fmt::print("memory:   transparent huge pages {}{}\n", TransparentHugePageMode(),
             std::string_view(TransparentHugePageMode()) == "never"
                 ? " (weights on 4 KiB pages: decode ~25 % slower; set it to madvise)"
                 : "");
  std::string nodes_text;
  for (const auto& n : numa)
    nodes_text += fmt::format("{}node {}: CPUs {}", nodes_text.empty() ? "" : "; ",
                              n["node"].get<int>(), n["cpus"].get<std::string>());
  fmt::print("numa:     {} node(s) with CPUs this process may use ({}){}\n", numa.size(),
             j["allowed_cpus"].get<std::string>(),
             numa.empty() ? ""
                          : ": " + nodes_text +
                                (numa.size() > 1 ? fmt::format(" — --tensor-parallel-size {} "
                                                               "puts a rank on each",
                                                               numa.size())
                                                 : ""));
  if (o.measure)
    fmt::print(
        "measured: read bandwidth {:.1f} GB/s, FP32 FMA {:.0f} GFLOP/s, BF16 dot {:.0f} "
        "GFLOP/s, INT8 dot {:.0f} GOP/s\n",
        limits.read_gb_s, limits.f32_gflop_s, limits.bf16_gflop_s, limits.int8_gop_s);
  if (j.contains("model")) {
    fmt::print(
        "model:    {} ({}), {:.0f} MB weights, {:.0f} MB read per decode step, {:.2f} "
        "GFLOP per token\n",
        o.model, j["model"]["dtype"].get<std::string>(),
        j["model"]["weight_bytes"].get<double>() / 1e6,
        j["model"]["decode_read_bytes"].get<double>() / 1e6,
        j["model"]["gflop_per_token"].get<double>());
    if (o.measure)
      fmt::print(
          "roofline: decode {:.1f} tok/s per sequence (bandwidth), prefill {:.0f} tok/s "
          "({}), batched decode {:.0f} tok/s at 16 seqs, {:.0f} at 64\n",
          j["roofline"]["decode_tok_s_per_seq"].get<double>(),
          j["roofline"]["prefill_tok_s"].get<double>(), j["roofline"]["peak"].get<std::string>(),
          j["roofline"]["decode_16_seqs_tok_s"].get<double>(),
          j["roofline"]["decode_64_seqs_tok_s"].get<double>());
  }
  return 0;
}

}  // namespace

void AddDoctorCommand(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<DoctorOptions>();
  CLI::App* cmd = app.add_subcommand("doctor", "Machine facts, measured limits and rooflines");
  cmd->add_flag("--measure", opts->measure,
                "Measure memory bandwidth and the FP32/BF16 compute peaks (a few seconds)");
  cmd->add_option("--model", opts->model, "Print this model's per-token cost and rooflines");
  cmd->add_option("--threads", opts->threads, "CPU threads (0: all cores)");
  cmd->add_option("--dtype", opts->dtype,
                  "The serve --dtype to show the Linear path and rooflines for (default auto)");
  cmd->add_flag("--json", opts->json, "Print as JSON");
  cmd->callback([opts, exit_code] { *exit_code = Run(*opts); });
}

}  // namespace xinfer
