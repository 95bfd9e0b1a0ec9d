// `xinfer generate`: one prompt (--prompt / --prompt-ids, printed as it streams or as --json),
// or offline batch mode (--input prompts.jsonl --output out.jsonl) through the same engine.
#include <fmt/core.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "chat_template/chat_template.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/engine_flags.h"
#include "cli/offline_batch.h"
#include "engine/llm_engine.h"

namespace xinfer {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

struct GenerateOptions {
  EngineConfig engine;
  std::string prompt;
  std::string prompt_ids;
  bool chat = false;
  std::string chat_template;
  std::string input;
  std::string output;
  int max_tokens = 128;
  std::optional<float> temperature, top_p;
  std::optional<int> top_k;
  float min_p = 0.f;
  std::optional<uint64_t> seed;
  int logprobs = 0;
  std::vector<std::string> stop;
  bool ignore_eos = false;
  bool json = false;
  std::string lora;  // a --lora-modules name every prompt runs with
};

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

int RunSingle(const GenerateOptions& o, LLMEngine& engine, double load_ms) {
  nlohmann::ordered_json request = nlohmann::ordered_json::object();
  if (!o.prompt_ids.empty()) {
    if (!o.prompt.empty() || o.chat)
      return ReportError(
          InvalidArgument("--prompt-ids cannot be combined with --prompt or --chat"));
    auto ids = ParseIdList(o.prompt_ids);
    if (!ids.ok()) return ReportError(ids.status());
    request["prompt_ids"] = *ids;
  } else if (o.chat) {
    request["messages"] =
        nlohmann::ordered_json::array({{{"role", "user"}, {"content", o.prompt}}});
  } else {
    request["prompt"] = o.prompt;
  }
  auto prompt = BuildPromptIds(request, engine, o.chat_template);
  if (!prompt.ok()) return ReportError(prompt.status());

  SamplingParams p = engine.default_sampling_params();
  if (o.temperature) p.temperature = *o.temperature;
  if (o.top_p) p.top_p = *o.top_p;
  if (o.top_k) p.top_k = *o.top_k;
  p.min_p = o.min_p;
  p.seed = o.seed;
  p.logprobs = o.logprobs > 0 ? o.logprobs : -1;
  p.max_tokens = o.max_tokens;
  p.stop = o.stop;
  p.ignore_eos = o.ignore_eos;
  const auto t_start = Clock::now();
  if (Status s = engine.AddRequest("cli", {*prompt, p, 0, o.lora}); !s.ok()) return ReportError(s);

  std::vector<int32_t> tokens;
  std::string text, finish;
  json logprobs = json::array();
  std::optional<Clock::time_point> t_first;
  while (engine.HasUnfinishedRequests()) {
    auto outputs = engine.Step();
    if (!outputs.ok()) return ReportError(outputs.status());
    for (const RequestOutput& out : *outputs) {
      if (!out.token_ids.empty() && !t_first) t_first = Clock::now();
      tokens.insert(tokens.end(), out.token_ids.begin(), out.token_ids.end());
      text += out.text;
      for (const TokenLogprobs& lp : out.logprobs) {
        json top = json::array();
        for (const auto& t : lp.top) top.push_back({{"id", t.id}, {"logprob", t.logprob}});
        logprobs.push_back(top);
      }
      if (!o.json) {
        fmt::print("{}", out.text);
        std::fflush(stdout);
      }
      if (out.finished) finish = out.finish_reason;
    }
  }
  const auto t_end = Clock::now();
  if (!o.json) {
    fmt::print("\n");
    return 0;
  }
  const double prefill_ms = t_first ? Ms(*t_first - t_start) : 0;
  const double decode_ms = t_first ? Ms(t_end - *t_first) : 0;
  const double steps = tokens.size() > 1 ? static_cast<double>(tokens.size() - 1) : 0;
  json j = {{"prompt_ids", *prompt},
            {"token_ids", tokens},
            {"text", text},
            {"finish_reason", finish},
            {"logprobs", logprobs},
            {"timings",
             {{"load_ms", load_ms},
              {"prefill_ms", prefill_ms},
              {"decode_ms", decode_ms},
              {"prompt_tokens", prompt->size()},
              {"generated_tokens", tokens.size()},
              {"prefill_tok_s", prefill_ms > 0 ? prompt->size() * 1000.0 / prefill_ms : 0.0},
              {"decode_tok_s", decode_ms > 0 ? steps * 1000.0 / decode_ms : 0.0}}}};
  fmt::print("{}\n", j.dump(-1, ' ', false, json::error_handler_t::replace));
  return 0;
}

int RunGenerate(GenerateOptions o) {
  const bool batch = !o.input.empty();
  if (batch && (!o.prompt.empty() || !o.prompt_ids.empty()))
    return ReportError(InvalidArgument("--input cannot be combined with --prompt/--prompt-ids"));
  if (batch && o.output.empty()) return ReportError(InvalidArgument("--input needs --output"));
  if (!batch && o.prompt.empty() && o.prompt_ids.empty())
    return ReportError(InvalidArgument("give --prompt TEXT, --prompt-ids 1,2,3 or --input FILE"));
  if (o.max_tokens < 1) return ReportError(InvalidArgument("--max-tokens must be at least 1"));
  if (o.engine.data_parallel_size > 1)
    return ReportError(InvalidArgument(
        "--data-parallel-size {}: generate runs one engine; data-parallel replicas share "
        "requests in `xinfer serve`",
        o.engine.data_parallel_size));
  if (o.engine.task == "embed")
    return ReportError(InvalidArgument(
        "--task embed: generate writes text; serve the model (`xinfer serve --task embed`) for "
        "its embeddings on /v1/embeddings"));
  if (!batch) {
    // One request: a small cache is plenty and starts instantly.
    if (o.engine.kv_cache_memory == 0 && o.engine.num_gpu_blocks_override == 0)
      o.engine.max_num_seqs = 1;
  }
  const auto t_load = Clock::now();
  auto engine = LLMEngine::Create(o.engine);
  if (!engine.ok()) return ReportError(engine.status());
  const double load_ms = Ms(Clock::now() - t_load);
  if (batch) return RunOfflineBatch(o.input, o.output, **engine, o.chat_template, o.lora);
  return RunSingle(o, **engine, load_ms);
}

}  // namespace

void AddGenerateCommand(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<GenerateOptions>();
  CLI::App* cmd = app.add_subcommand("generate", "Generate text for one prompt or a JSONL batch");
  cmd->add_option("--model", o->engine.model, "Hugging Face model folder")->required();
  cmd->add_option("--prompt", o->prompt, "Prompt text");
  cmd->add_option("--prompt-ids", o->prompt_ids, "Prompt as token ids, e.g. 1,2,3");
  cmd->add_flag("--chat", o->chat, "Apply the model's chat template to --prompt (user message)");
  cmd->add_option("--chat-template", o->chat_template, "Chat template file or text");
  cmd->add_option("--input", o->input, "Batch mode: JSONL of requests");
  cmd->add_option("--output", o->output, "Batch mode: JSONL of results, in input order");
  cmd->add_option("--max-tokens", o->max_tokens, "Tokens to generate (default 128)");
  cmd->add_option("--temperature", o->temperature, "0 = greedy");
  cmd->add_option("--top-p", o->top_p, "Nucleus sampling");
  cmd->add_option("--top-k", o->top_k, "Top-k sampling (0 or -1: off)");
  cmd->add_option("--min-p", o->min_p, "Min-p sampling");
  cmd->add_option("--seed", o->seed, "Random seed (same seed, same tokens)");
  cmd->add_option("--logprobs", o->logprobs, "Top-N log-probabilities per token (--json)");
  cmd->add_option("--stop", o->stop, "Stop string (repeatable)");
  cmd->add_flag("--ignore-eos", o->ignore_eos, "Keep generating past EOS");
  cmd->add_flag("--json", o->json, "Print ids, text, logprobs and timings as JSON");
  cmd->add_option("--lora", o->lora,
                  "Run every prompt with this LoRA adapter (a name of --lora-modules)");
  AddEngineFlags(cmd, &o->engine);
  cmd->callback([o, exit_code] { *exit_code = RunGenerate(*o); });
}

}  // namespace xinfer
