// `xinfer generate`: load a model, run one prompt, print the continuation (or JSON with ids,
// text, top log-probabilities and timings). The single-sequence path that the golden tests and
// README use; batched offline generation arrives with the engine.
#include <fmt/core.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "base/mapped_file.h"
#include "chat_template/chat_template.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "model/causal_lm.h"
#include "sampling/sampler.h"
#include "sampling/stop_checker.h"
#include "tokenizer/tokenizer.h"

namespace xinfer {
namespace {

using Clock = std::chrono::steady_clock;

struct GenerateOptions {
  std::string model;
  std::string prompt;
  std::string prompt_ids;
  bool chat = false;
  std::string chat_template;
  int max_tokens = 128;
  std::optional<float> temperature, top_p;
  std::optional<int> top_k;
  float min_p = 0.f;
  std::optional<uint64_t> seed;
  int logprobs = 0;
  std::vector<std::string> stop;
  bool ignore_eos = false;
  bool json = false;
  int threads = 0;
};

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// Sampling defaults come from the model's generation_config.json, as in vLLM and HF.
void ApplyGenerationConfig(const std::string& model_dir, SamplingParams& p,
                           std::set<int32_t>& eos_ids) {
  auto text = ReadFileToString(model_dir + "/generation_config.json");
  if (!text.ok()) return;
  auto j = nlohmann::json::parse(*text, nullptr, false);
  if (!j.is_object()) return;
  if (j.contains("temperature") && j["temperature"].is_number())
    p.temperature = j["temperature"].get<float>();
  if (j.contains("top_p") && j["top_p"].is_number()) p.top_p = j["top_p"].get<float>();
  if (j.contains("top_k") && j["top_k"].is_number_integer()) p.top_k = j["top_k"].get<int>();
  const auto& e = j.value("eos_token_id", nlohmann::json());
  if (e.is_number_integer()) eos_ids.insert(e.get<int32_t>());
  if (e.is_array())
    for (const auto& x : e)
      if (x.is_number_integer()) eos_ids.insert(x.get<int32_t>());
}

StatusOr<std::vector<int32_t>> BuildPrompt(const GenerateOptions& o, const Tokenizer& tokenizer) {
  if (!o.prompt_ids.empty()) {
    if (!o.prompt.empty() || o.chat)
      return InvalidArgument("--prompt-ids cannot be combined with --prompt or --chat");
    return ParseIdList(o.prompt_ids);
  }
  if (!o.chat) return tokenizer.Encode(o.prompt, /*add_special_tokens=*/true);
  XI_ASSIGN_OR_RETURN(ChatTemplateConfig cfg, LoadChatTemplateConfig(o.model));
  if (!o.chat_template.empty()) {
    XI_ASSIGN_OR_RETURN(cfg.source, ResolveChatTemplateArg(o.chat_template));
  }
  if (cfg.source.empty())
    return InvalidArgument("{} has no chat template; pass --chat-template", o.model);
  XI_ASSIGN_OR_RETURN(ChatTemplate tmpl, ChatTemplate::Parse(cfg.source));
  nlohmann::json messages = nlohmann::json::array({{{"role", "user"}, {"content", o.prompt}}});
  nlohmann::json context = MakeChatContext(messages, nullptr, /*add_generation_prompt=*/true,
                                           cfg.bos_token, cfg.eos_token, nlohmann::json::object());
  XI_ASSIGN_OR_RETURN(std::string rendered, tmpl.Render(context));
  // Like transformers' apply_chat_template: the template already placed every special token.
  return tokenizer.Encode(rendered, /*add_special_tokens=*/false);
}

int RunGenerate(const GenerateOptions& o) {
  if (o.prompt.empty() && o.prompt_ids.empty())
    return ReportError(InvalidArgument("give --prompt TEXT or --prompt-ids 1,2,3"));
  if (o.max_tokens < 1) return ReportError(InvalidArgument("--max-tokens must be at least 1"));
  const auto t_load = Clock::now();
  auto tokenizer = Tokenizer::FromDir(o.model);
  if (!tokenizer.ok()) return ReportError(tokenizer.status());
  auto backend = CreateCpuBackend({.num_threads = o.threads});
  auto model = LoadCausalLM(o.model, *backend);
  if (!model.ok()) return ReportError(model.status());
  const ModelConfig& config = (*model)->config();
  const double load_ms = Ms(Clock::now() - t_load);

  auto prompt = BuildPrompt(o, **tokenizer);
  if (!prompt.ok()) return ReportError(prompt.status());
  if (prompt->empty()) return ReportError(InvalidArgument("the prompt is empty"));
  for (int32_t id : *prompt)
    if (id < 0 || id >= config.vocab_size)
      return ReportError(InvalidArgument("prompt token id {} is outside the vocabulary [0, {})",
                                         id, config.vocab_size));

  SamplingParams params;
  std::set<int32_t> eos(config.eos_token_ids.begin(), config.eos_token_ids.end());
  ApplyGenerationConfig(o.model, params, eos);
  if (auto e = (*tokenizer)->eos_id()) eos.insert(*e);
  if (o.temperature) params.temperature = *o.temperature;
  if (o.top_p) params.top_p = *o.top_p;
  if (o.top_k) params.top_k = *o.top_k;
  params.min_p = o.min_p;
  params.seed = o.seed;
  params.logprobs = o.logprobs > 0 ? o.logprobs : -1;
  params.max_tokens = o.max_tokens;
  params.stop = o.stop;
  params.ignore_eos = o.ignore_eos;
  if (Status s = params.Validate(config.vocab_size); !s.ok()) return ReportError(s);

  int64_t capacity = static_cast<int64_t>(prompt->size()) + o.max_tokens;
  if (config.max_position_embeddings > 0 && capacity > config.max_position_embeddings)
    return ReportError(OutOfRange("prompt ({} tokens) + max_tokens ({}) exceeds the model's "
                                  "context of {} tokens",
                                  prompt->size(), o.max_tokens, config.max_position_embeddings));

  Sampler sampler(params, std::random_device{}());
  StopChecker stop(params, std::vector<int32_t>(eos.begin(), eos.end()));
  IncrementalDecoder decoder(**tokenizer, /*skip_special_tokens=*/true);
  KvCache cache = (*model)->NewKvCache(capacity);
  std::vector<float> logits(config.vocab_size);
  std::vector<int32_t> output;
  nlohmann::json logprobs = nlohmann::json::array();
  std::string text;
  FinishReason finish = FinishReason::kNone;

  const auto t_prefill = Clock::now();
  if (Status s = (*model)->Forward(*prompt, cache, logits); !s.ok()) return ReportError(s);
  const auto t_decode = Clock::now();
  while (true) {
    SampleResult r = sampler.Sample(logits, *prompt, output);
    output.push_back(r.token);
    if (o.logprobs > 0) {
      nlohmann::json top = nlohmann::json::array();
      for (const auto& t : r.top_logprobs) top.push_back({{"id", t.id}, {"logprob", t.logprob}});
      logprobs.push_back(top);
    }
    StopChecker::Update u = stop.Append(r.token, decoder.Append(r.token));
    text += u.text;
    if (!o.json) {
      fmt::print("{}", u.text);
      std::fflush(stdout);
    }
    if (u.finish != FinishReason::kNone) {
      finish = u.finish;
      break;
    }
    std::vector<int32_t> next = {r.token};
    if (Status s = (*model)->Forward(next, cache, logits); !s.ok()) return ReportError(s);
  }
  const auto t_end = Clock::now();
  const double prefill_ms = Ms(t_decode - t_prefill), decode_ms = Ms(t_end - t_decode);
  if (!o.json) {
    fmt::print("\n");
    return 0;
  }
  const double decode_steps = static_cast<double>(output.size() > 1 ? output.size() - 1 : 0);
  nlohmann::ordered_json j = {
      {"prompt_ids", *prompt},
      {"token_ids", output},
      {"text", text},
      {"finish_reason", finish == FinishReason::kLength ? "length" : "stop"},
      {"logprobs", logprobs},
      {"timings",
       {{"load_ms", load_ms},
        {"prefill_ms", prefill_ms},
        {"decode_ms", decode_ms},
        {"prompt_tokens", prompt->size()},
        {"generated_tokens", output.size()},
        {"prefill_tok_s", prefill_ms > 0 ? prompt->size() * 1000.0 / prefill_ms : 0.0},
        {"decode_tok_s", decode_ms > 0 ? decode_steps * 1000.0 / decode_ms : 0.0}}}};
  fmt::print("{}\n", j.dump());
  return 0;
}

}  // namespace

void AddGenerateCommand(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<GenerateOptions>();
  CLI::App* cmd = app.add_subcommand("generate", "Generate a continuation of one prompt");
  cmd->add_option("--model", o->model, "Hugging Face model folder")->required();
  cmd->add_option("--prompt", o->prompt, "Prompt text");
  cmd->add_option("--prompt-ids", o->prompt_ids, "Prompt as token ids, e.g. 1,2,3");
  cmd->add_flag("--chat", o->chat, "Apply the model's chat template to --prompt (user message)");
  cmd->add_option("--chat-template", o->chat_template, "Chat template file or text");
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
  cmd->add_option("--threads", o->threads, "Worker threads (default: all cores)");
  cmd->callback([o, exit_code] { *exit_code = RunGenerate(*o); });
}

}  // namespace xinfer
