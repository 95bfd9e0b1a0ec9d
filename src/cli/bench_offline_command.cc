// `xinfer bench offline --model DIR --input-len I --output-len O --batch B [--json]`: runs B
// random prompts of I tokens through the engine, O tokens each (EOS ignored; greedy unless
// --temperature/--top-p/--top-k ask for random sampling, as vLLM's throughput benchmark does at
// temperature 1, so that the sampler's per-step cost is part of the figure), and reports
// prefill tok/s, decode tok/s (aggregate and per sequence), medians over --runs, with the same
// figures as fractions of the rooflines measured in this process (cpu_limits.h); decode also
// against the bandwidth probed beside each run (`decode_roofline_fraction_paired`).
//
// Phases: prefill ends when every sequence has its first token (the whole batch's prompts are
// scheduled in one step: max_num_batched_tokens = B x I); decode is everything after.
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <random>

#include "backend/cpu/cpu_kernels.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/perf_model.h"
#include "engine/gguf_tokenizer_loader.h"
#include "engine/llm_engine.h"

namespace xinfer {
namespace {

using Clock = std::chrono::steady_clock;

struct OfflineBenchOptions {
  std::string model;
  int input_len = 128;
  int output_len = 128;
  int batch = 1;
  int threads = 0;
  int tensor_parallel_size = 1;
  std::string cpu_threads_bind = "auto";
  int runs = 3;
  std::string dtype = "auto";
  std::string kv_cache_dtype = "auto";
  bool mmap_weights = false;
  std::optional<bool> int8_activations;  // unset: the engine's default
  bool json = false;
  float temperature = 0;  // 0: greedy
  float top_p = 1;
  int top_k = 0;
  std::string lora_path;           // a LoRA adapter the sequences run with; "" for none
  double lora_fraction = 1;        // of the sequences (the first ones of each batch)
  std::string speculative_config;  // as serve's --speculative-config; "" for none
};

SamplingParams BenchSamplingParams(const OfflineBenchOptions& o) {
  SamplingParams p;
  p.temperature = o.temperature;
  p.top_p = o.top_p;
  p.top_k = o.top_k;
  p.max_tokens = o.output_len;
  p.ignore_eos = true;
  return p;
}

struct RunResult {
  double prefill_tok_s = 0, decode_tok_s = 0;
};

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0 : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

StatusOr<RunResult> RunOnce(LLMEngine& engine, const OfflineBenchOptions& o, int run) {
  std::mt19937 rng(1234 + run);
  const int vocab = engine.model_config().vocab_size;
  std::uniform_int_distribution<int32_t> id(100, std::max(101, std::min(vocab, 100000) - 1));
  SamplingParams p = BenchSamplingParams(o);
  for (int b = 0; b < o.batch; ++b) {
    EngineRequest r;
    for (int i = 0; i < o.input_len; ++i) r.prompt_ids.push_back(id(rng));
    r.params = p;
    r.params.seed = 1000 * (run + 2) + b;  // the same draws in every invocation
    if (!o.lora_path.empty() && b < static_cast<int>(o.lora_fraction * o.batch + 0.5))
      r.lora_name = "bench";
    XI_RETURN_IF_ERROR(engine.AddRequest(fmt::format("r{}-{}", run, b), std::move(r)));
  }
  const Clock::time_point t0 = Clock::now();
  double prefill_s = 0;
  int started = 0;
  int64_t decoded = 0;
  while (engine.HasUnfinishedRequests()) {
    XI_ASSIGN_OR_RETURN(std::vector<RequestOutput> outs, engine.Step());
    for (const RequestOutput& out : outs) {
      const int n = static_cast<int>(out.token_ids.size());
      if (n == 0) continue;
      if (out.completion_tokens == n) ++started;  // this step produced its first token(s)
      if (prefill_s > 0) decoded += n;
    }
    if (prefill_s == 0 && started >= o.batch) prefill_s = Since(t0);
  }
  const double total_s = Since(t0);
  RunResult r;
  r.prefill_tok_s = static_cast<double>(o.batch) * o.input_len / prefill_s;
  r.decode_tok_s = total_s > prefill_s ? decoded / (total_s - prefill_s) : 0;
  return r;
}

int Run(const OfflineBenchOptions& o) {
  if (o.input_len < 1 || o.output_len < 2 || o.batch < 1 || o.runs < 1)
    return ReportError(InvalidArgument(
        "--input-len >= 1, --output-len >= 2, --batch >= 1 and --runs >= 1 are required"));
  EngineConfig cfg;
  cfg.model = o.model;
  cfg.threads = o.threads;
  cfg.tensor_parallel_size = o.tensor_parallel_size;
  cfg.cpu_threads_bind = o.cpu_threads_bind;
  cfg.dtype = o.dtype;
  cfg.kv_cache_dtype = o.kv_cache_dtype;
  if (Status s = ValidateKvCacheDtype(o.kv_cache_dtype); !s.ok()) return ReportError(s);
  auto cost = ComputeModelCost(o.model, cfg.KvCacheDType(), cfg.bf16_activations());
  if (!cost.ok()) return ReportError(cost.status());
  cfg.mmap_weights = o.mmap_weights;
  cfg.int8_activations = o.int8_activations;
  const bool int8 = cfg.Int8ActivationsFor(IsGgufModelPath(o.model));
  const ComputePeak peak = ComputePeakFor(*cost, o.dtype == "bfloat16", int8);
  cfg.max_num_seqs = o.batch;
  cfg.max_model_len = o.input_len + o.output_len;
  cfg.max_num_batched_tokens = std::max(o.batch * o.input_len, o.input_len + o.output_len);
  cfg.enable_prefix_caching = false;
  cfg.num_gpu_blocks_override = o.batch * ((cfg.max_model_len + 15) / 16) + 16;
  if (!o.lora_path.empty()) {
    if (!(o.lora_fraction >= 0 && o.lora_fraction <= 1))
      return ReportError(InvalidArgument("--lora-fraction must be in [0, 1]"));
    cfg.enable_lora = true;
    cfg.lora_modules = {"bench=" + o.lora_path};
    cfg.max_lora_rank = 1 << 20;  // whatever the adapter's rank
  }
  cfg.speculative_config = o.speculative_config;
  auto engine = LLMEngine::Create(cfg);
  if (!engine.ok()) return ReportError(engine.status());
  if (Status valid = BenchSamplingParams(o).Validate((*engine)->model_config().vocab_size);
      !valid.ok())
    return ReportError(valid);
  // Warm-up: faults the mapped weights in and grows the activation arena and kernel scratch to
  // their final sizes, so the timed runs see neither.
  {
    OfflineBenchOptions warm = o;
    warm.output_len = 2;
    auto r = RunOnce(**engine, warm, -1);
    if (!r.ok()) return ReportError(r.status());
  }
  // The host's bandwidth moves between minutes, so each run's decode is also compared with the
  // bandwidth read right before and right after it (the higher of the two: the stricter bound),
  // with the same probe (one 1 GiB buffer, faulted in once).
  BandwidthProbe probe(o.threads);
  const MachineLimits limits = MeasureMachineLimits(probe);
  // Average context attended: prompt/2 during prefill, prompt + output/2 during decode.
  const double decode_ctx = o.input_len + o.output_len / 2.0;
  std::vector<double> prefill, decode, run_read_gb_s, run_decode_frac;
  for (int run = 0; run < o.runs; ++run) {
    const double read_before = probe.Measure();
    auto r = RunOnce(**engine, o, run);
    if (!r.ok()) return ReportError(r.status());
    MachineLimits run_limits = limits;
    run_limits.read_gb_s = std::max(read_before, probe.Measure());
    prefill.push_back(r->prefill_tok_s);
    decode.push_back(r->decode_tok_s);
    run_read_gb_s.push_back(run_limits.read_gb_s);
    run_decode_frac.push_back(r->decode_tok_s /
                              BatchedDecodeRoofline(*cost, run_limits, o.batch, decode_ctx, peak));
  }
  const double prefill_med = Median(prefill), decode_med = Median(decode);
  // Speculative decoding: the drafts kept (of all runs, the warm-up's included).
  const EngineStats stats = (*engine)->stats();
  const double acceptance =
      stats.spec_num_draft_tokens > 0
          ? static_cast<double>(stats.spec_num_accepted_tokens) / stats.spec_num_draft_tokens
          : 0;
  const Roofline prefill_roof = ComputeRoofline(*cost, limits, o.input_len / 2.0, peak);
  const Roofline decode_roof = ComputeRoofline(*cost, limits, decode_ctx, peak);
  const double batched_roof = BatchedDecodeRoofline(*cost, limits, o.batch, decode_ctx, peak);
  const double decode_frac = decode_med / batched_roof;
  const double decode_frac_paired = Median(run_decode_frac);
  const double prefill_frac = prefill_med / prefill_roof.prefill_tok_s;
  if (o.json) {
    nlohmann::json j = {
        {"prefill_tok_s", prefill_med},
        {"decode_tok_s", decode_med},
        {"decode_tok_s_per_seq", decode_med / o.batch},
        {"weight_bytes", cost->weight_bytes},
        {"decode_read_bytes", cost->decode_read_bytes},
        {"batch", o.batch},
        {"input_len", o.input_len},
        {"output_len", o.output_len},
        {"threads", limits.threads},
        {"runs", o.runs},
        {"prefill_tok_s_runs", prefill},
        {"decode_tok_s_runs", decode},
        {"isa", cpu::KernelIsaName()},
        {"dtype", o.dtype},
        {"kv_cache_dtype", DTypeName(cfg.KvCacheDType())},
        {"mmap_weights", o.mmap_weights},
        {"int8_activations", int8},
        {"temperature", o.temperature},
        {"top_p", o.top_p},
        {"top_k", o.top_k},
        {"peak", prefill_roof.peak_name},
        {"read_gb_s", limits.read_gb_s},
        {"peak_f32_gflop_s", limits.f32_gflop_s},
        {"peak_bf16_gflop_s", limits.bf16_gflop_s},
        {"peak_int8_gop_s", limits.int8_gop_s},
        {"decode_roofline_tok_s", batched_roof},
        {"decode_roofline_tok_s_per_seq_bandwidth", decode_roof.decode_tok_s_per_seq},
        {"decode_roofline_fraction", decode_frac},
        {"read_gb_s_runs", run_read_gb_s},
        {"decode_roofline_fraction_runs", run_decode_frac},
        {"decode_roofline_fraction_paired", decode_frac_paired},
        {"prefill_roofline_tok_s", prefill_roof.prefill_tok_s},
        {"prefill_roofline_fraction", prefill_frac},
        {"spec_draft_tokens", stats.spec_num_draft_tokens},
        {"spec_accepted_tokens", stats.spec_num_accepted_tokens},
        {"spec_acceptance", acceptance},
    };
    fmt::print("{}\n", j.dump(2));
    return 0;
  }
  fmt::print("model {} ({} weights, {:.0f} MB, {:.0f} MB read per decode step)\n", o.model,
             cost->dtype, cost->weight_bytes / 1e6, cost->decode_read_bytes / 1e6);
  fmt::print("batch {} x (input {} + output {}), {} threads, kernels {}, median of {} runs\n",
             o.batch, o.input_len, o.output_len, limits.threads, cpu::KernelIsaName(), o.runs);
  if (o.temperature > 0)
    fmt::print("sampling: temperature {}, top_p {}, top_k {}\n", o.temperature, o.top_p, o.top_k);
  fmt::print(
      "measured: read {:.1f} GB/s, F32 FMA {:.0f} GFLOP/s, BF16 dot {:.0f} GFLOP/s, INT8 dot "
      "{:.0f} "
      "GOP/s\n",
      limits.read_gb_s, limits.f32_gflop_s, limits.bf16_gflop_s, limits.int8_gop_s);
  fmt::print("prefill: {:8.1f} tok/s   ({:.0f}% of {:.0f} tok/s {} roofline)\n", prefill_med,
             100 * prefill_frac, prefill_roof.prefill_tok_s, prefill_roof.peak_name);
  fmt::print(
      "decode:  {:8.1f} tok/s aggregate, {:.2f} tok/s per sequence   ({:.0f}% of {:.1f} "
      "tok/s roofline)\n",
      decode_med, decode_med / o.batch, 100 * decode_frac, batched_roof);
  fmt::print("         {:.0f}% of the roofline at the bandwidth read beside each run (median)\n",
             100 * decode_frac_paired);
  if (stats.spec_num_draft_tokens > 0)
    fmt::print(
        "speculative decoding: {} of {} draft tokens kept ({:.0f}%), {:.2f} per sequence step "
        "(the roofline counts one token per step)\n",
        stats.spec_num_accepted_tokens, stats.spec_num_draft_tokens, 100 * acceptance,
        static_cast<double>(stats.spec_num_accepted_tokens) /
            std::max<int64_t>(stats.spec_num_drafts, 1));
  return 0;
}

}  // namespace

void AddBenchOfflineCommand(CLI::App& bench, int* exit_code) {
  auto opts = std::make_shared<OfflineBenchOptions>();
  CLI::App* cmd = bench.add_subcommand(
      "offline", "Offline throughput: prefill and decode tok/s against the measured rooflines");
  cmd->add_option("--model", opts->model, "Hugging Face model folder")->required();
  cmd->add_option("--input-len", opts->input_len, "Prompt tokens per sequence")
      ->capture_default_str();
  cmd->add_option("--output-len", opts->output_len, "Generated tokens per sequence")
      ->capture_default_str();
  cmd->add_option("--batch", opts->batch, "Sequences run together")->capture_default_str();
  cmd->add_option("--threads", opts->threads, "CPU threads (0: all cores)")->capture_default_str();
  cmd->add_option("--tensor-parallel-size", opts->tensor_parallel_size,
                  "Ranks the model is split over, as serve's (each with threads / N threads)")
      ->capture_default_str();
  cmd->add_option("--cpu-threads-bind", opts->cpu_threads_bind,
                  "Where the ranks run, as serve's: auto, nobind or CPU lists such as 0|1")
      ->capture_default_str();
  cmd->add_option("--runs", opts->runs, "Timed runs (the median is reported)")
      ->capture_default_str();
  cmd->add_option("--dtype", opts->dtype, "As serve's --dtype: auto, bfloat16 or float32")
      ->capture_default_str();
  cmd->add_option("--kv-cache-dtype", opts->kv_cache_dtype,
                  "As serve's --kv-cache-dtype: auto, bfloat16 or float32")
      ->capture_default_str();
  cmd->add_flag_function(
      "--int8-activations,!--no-int8-activations",
      [opts](int64_t count) { opts->int8_activations = count > 0; },
      "As serve's --int8-activations (default: on for GGUF files, off for AWQ)");
  cmd->add_flag("--mmap-weights", opts->mmap_weights,
                "As serve's --mmap-weights: weights read from the mapped file (4 KiB pages)");
  cmd->add_option("--temperature", opts->temperature,
                  "Sampling temperature (0: greedy; vLLM's throughput benchmark samples at 1)")
      ->capture_default_str();
  cmd->add_option("--top-p", opts->top_p, "Nucleus sampling mass (1: off)")->capture_default_str();
  cmd->add_option("--top-k", opts->top_k, "Keep the k most likely tokens (0: off)")
      ->capture_default_str();
  cmd->add_flag("--json", opts->json, "Print the figures as JSON");
  cmd->add_option("--lora-path", opts->lora_path,
                  "A LoRA adapter folder (PEFT) the sequences run with");
  cmd->add_option("--speculative-config", opts->speculative_config,
                  "As serve's: JSON {\"method\": \"ngram\", \"num_speculative_tokens\": K, ...}");
  cmd->add_option("--lora-fraction", opts->lora_fraction,
                  "Share of the sequences that use --lora-path (default 1: all; the rest run "
                  "the base model in the same batches)");
  cmd->callback([opts, exit_code] { *exit_code = Run(*opts); });
}

}  // namespace xinfer
