// `xinfer plan MODEL [serve's engine flags] [--context N] [--measure] [--json]`: does this model
// fit this machine (or a memory budget given with --cpu-memory-budget) at this concurrency? It
// reads the model's config and tensor headers only (no weights), sizes the KV cache with the
// engine's own arithmetic (SizeKvCache) and answers how many sequences of --context tokens run at
// once against the --max-num-seqs asked, what memory would be needed otherwise, and with
// --measure the throughput ceilings this machine's measured limits give.
#include <fmt/core.h>

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>

#include "backend/cpu/cpu_limits.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/engine_flags.h"
#include "cli/perf_model.h"
#include "engine/gguf_tokenizer_loader.h"
#include "engine/kv_cache_sizing.h"
#include "formats/hf_config.h"
#include "model/causal_lm.h"

namespace xinfer {
namespace {

struct PlanOptions {
  EngineConfig engine;
  int context = 0;  // tokens per sequence (prompt + output); 0: max_model_len
  bool measure = false;
  bool json = false;
};

double GiB(double bytes) { return bytes / (1 << 30); }

int Run(PlanOptions o) {
  EngineConfig& c = o.engine;
  if (Status s = c.Validate(); !s.ok()) return ReportError(s);
  auto mc = LoadModelConfig(c.model, c.ConfigOverrides());
  if (!mc.ok()) return ReportError(mc.status());
  if (Status s = c.ResolveModelLimits(DerivedMaxModelLen(*mc)); !s.ok()) return ReportError(s);
  if (o.context < 0 || o.context > c.max_model_len)
    return ReportError(InvalidArgument("--context must be in [1, max_model_len {}], got {}",
                                       c.max_model_len, o.context));
  const int context = o.context > 0 ? o.context : c.max_model_len;
  auto cost = ComputeModelCost(c.model, c.KvCacheDType(), c.bf16_activations());
  if (!cost.ok()) return ReportError(cost.status());
  // Over tensor-parallel ranks: every rank's copy of the norms, and with more ranks than
  // key-value heads, the copies of the head its queries use on every rank (decoder_shard.h), in
  // the weights and in the KV cache alike.
  const int64_t weight_bytes =
      static_cast<int64_t>(TensorParallelWeightBytes(*cost, c.tensor_parallel_size));
  const int64_t kv_heads = mc->num_key_value_heads;
  const int64_t kv_copies =
      c.tensor_parallel_size > kv_heads ? c.tensor_parallel_size / kv_heads : 1;
  const int64_t kv_per_token = static_cast<int64_t>(cost->kv_bytes_per_token) * kv_copies;
  auto kv = SizeKvCache(c, weight_bytes, kv_per_token, PhysicalMemoryBytes());

  // What running max_num_seqs sequences of `context` tokens at once takes, in each of the
  // data-parallel replicas (each holds its own weights; SizeKvCache gives each 1/dp of the
  // budget, so budget_needed is all of them together).
  const int dp = c.data_parallel_size;
  const int64_t blocks_per_seq = (context + c.block_size - 1) / c.block_size;
  const int64_t block_bytes = kv_per_token * c.block_size;
  const int64_t kv_needed = int64_t{c.max_num_seqs} * blocks_per_seq * block_bytes;
  const double budget_needed =
      static_cast<double>(weight_bytes + kv_needed) * dp / c.gpu_memory_utilization;
  const int64_t concurrent =
      kv.ok() ? std::min<int64_t>(c.max_num_seqs, kv->num_blocks / blocks_per_seq) : 0;
  const bool fits = kv.ok() && concurrent >= c.max_num_seqs;

  nlohmann::json j = {{"model", c.model},
                      {"architecture", mc->architecture},
                      {"weight_dtype", cost->dtype},
                      {"weight_bytes", weight_bytes},
                      {"kv_cache_dtype", DTypeName(c.KvCacheDType())},
                      {"kv_bytes_per_token", kv_per_token},
                      {"block_size", c.block_size},
                      {"max_model_len", c.max_model_len},
                      {"max_num_seqs", c.max_num_seqs},
                      {"data_parallel_size", dp},
                      {"context", context},
                      {"gpu_memory_utilization", c.gpu_memory_utilization},
                      {"kv_cache_bytes_needed", kv_needed},
                      {"budget_bytes_needed", static_cast<int64_t>(budget_needed)},
                      {"starts", kv.ok()},
                      {"fits", fits},
                      {"concurrent_seqs", concurrent}};
  if (kv.ok()) {
    j["budget_bytes"] = kv->budget_bytes;
    j["kv_cache_blocks"] = kv->num_blocks;
    j["kv_cache_tokens"] = kv->num_tokens(c.block_size);
    j["kv_cache_sized_by"] = kv->source;
    // vLLM's startup line: "Maximum concurrency for N tokens per request: X.XXx".
    j["max_concurrency_at_max_model_len"] =
        static_cast<double>(kv->num_tokens(c.block_size)) / c.max_model_len;
  } else {
    j["error"] = kv.status().message();
  }
  if (!fits) {
    // The knobs that make it fit, with the numbers worked out.
    std::string options = fmt::format("a memory budget of {:.2f} GiB (--cpu-memory-budget {})",
                                      GiB(budget_needed), static_cast<int64_t>(budget_needed));
    if (kv.ok() && concurrent > 0) options += fmt::format(", --max-num-seqs {}", concurrent);
    if (kv.ok()) {
      const int64_t per_seq = kv->num_blocks / c.max_num_seqs * c.block_size;
      if (per_seq > 0) options += fmt::format(", --context / --max-model-len {}", per_seq);
    }
    if (c.KvCacheDType() != DType::kBF16)
      options += ", --kv-cache-dtype bfloat16 (half the bytes per token)";
    j["options"] = options;
  }
  if (o.measure) {
    const MachineLimits limits = MeasureMachineLimits(c.threads);
    const ComputePeak peak =
        ComputePeakFor(*cost, c.bf16_activations(), c.Int8ActivationsFor(IsGgufModelPath(c.model)));
    // Decode attends to half a sequence's final length on average.
    const double avg_context = context / 2.0;
    const Roofline r = ComputeRoofline(*cost, limits, avg_context, peak);
    j["roofline"] = {{"read_gb_s", limits.read_gb_s},
                     {"peak", r.peak_name},
                     {"peak_gflop_s", r.peak_gflop_s},
                     {"prefill_tok_s", r.prefill_tok_s},
                     {"decode_tok_s_per_seq", r.decode_tok_s_per_seq}};
    if (concurrent > 0)
      j["roofline"]["decode_tok_s_aggregate"] =
          BatchedDecodeRoofline(*cost, limits, static_cast<int>(concurrent), avg_context, peak);
  }

  if (o.json) {
    fmt::print("{}\n", j.dump(2));
  } else {
    fmt::print("model:     {} ({}), {} weights {:.2f} GiB, KV cache {} {} bytes per token\n",
               c.model, mc->architecture, cost->dtype, GiB(weight_bytes),
               DTypeName(c.KvCacheDType()), kv_per_token);
    if (kv.ok()) {
      fmt::print(
          "memory:    budget {:.2f} GiB x {} utilization: weights {:.2f} GiB + KV cache {:.2f} GiB "
          "({} blocks of {} tokens = {} tokens; sized by {}{}){}\n",
          GiB(kv->budget_bytes), c.gpu_memory_utilization, GiB(weight_bytes),
          GiB(static_cast<double>(kv->num_blocks) * block_bytes), kv->num_blocks, c.block_size,
          kv->num_tokens(c.block_size), kv->source,
          kv->capped_by_max_num_seqs ? ", capped at max_num_seqs full-length sequences" : "",
          dp > 1 ? fmt::format(", in each of {} data-parallel replicas", dp) : "");
      fmt::print("           maximum concurrency for {} tokens per request: {:.2f}x\n",
                 c.max_model_len, j["max_concurrency_at_max_model_len"].get<double>());
    }
    fmt::print(
        "needs:     {}{} sequences x {} tokens: KV cache {:.2f} GiB{}, memory budget {:.2f} GiB at "
        "{} utilization\n",
        dp > 1 ? fmt::format("{} replicas x ", dp) : "", c.max_num_seqs, context, GiB(kv_needed),
        dp > 1 ? " each" : "", GiB(budget_needed), c.gpu_memory_utilization);
    if (j.contains("roofline")) {
      const auto& r = j["roofline"];
      fmt::print(
          "roofline:  measured {:.1f} GB/s, {} {:.0f} GFLOP/s: prefill {:.0f} tok/s, decode {:.1f} "
          "tok/s per sequence",
          r["read_gb_s"].get<double>(), r["peak"].get<std::string>(),
          r["peak_gflop_s"].get<double>(), r["prefill_tok_s"].get<double>(),
          r["decode_tok_s_per_seq"].get<double>());
      if (r.contains("decode_tok_s_aggregate"))
        fmt::print(", {:.0f} tok/s over {} sequences", r["decode_tok_s_aggregate"].get<double>(),
                   concurrent);
      fmt::print(" (at {} tokens of context on average)\n", context / 2);
    }
    if (fits)
      fmt::print("verdict:   fits: {} sequences of {} tokens run at once{}\n", c.max_num_seqs * dp,
                 context, dp > 1 ? fmt::format(" ({} per replica)", c.max_num_seqs) : "");
    else if (kv.ok())
      fmt::print(
          "verdict:   does not fit: the server starts, but only {} of {} sequences of {} tokens "
          "run at once (the rest wait or are preempted)\n",
          concurrent, c.max_num_seqs, context);
    if (!fits) fmt::print("options:   {}\n", j["options"].get<std::string>());
  }
  if (!kv.ok()) return ReportError(kv.status());
  if (!fits)
    return ReportError(ResourceExhausted(
        "{} sequences of {} tokens need a KV cache of {:.2f} GiB; this one holds {} of them",
        c.max_num_seqs, context, GiB(kv_needed), concurrent));
  return 0;
}

}  // namespace

void AddPlanCommand(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<PlanOptions>();
  CLI::App* cmd = app.add_subcommand(
      "plan",
      "Does a model fit this machine (or --cpu-memory-budget) at --max-num-seqs sequences? Reads "
      "the model's headers only; exit code 0 when it fits, 1 when not");
  cmd->add_option("model", opts->engine.model, "Model folder or .gguf file")->required();
  AddEngineFlags(cmd, &opts->engine);
  cmd->add_option("--context", opts->context,
                  "Tokens per sequence (prompt + output) to plan for (default: max_model_len)");
  cmd->add_flag("--measure", opts->measure,
                "Also measure this machine's bandwidth and compute peak and print the throughput "
                "ceilings they give (a few seconds)");
  cmd->add_flag("--json", opts->json, "Print as JSON");
  cmd->callback([opts, exit_code] { *exit_code = Run(*opts); });
}

}  // namespace xinfer
