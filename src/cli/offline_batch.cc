#include "cli/offline_batch.h"

#include <fmt/core.h>

#include <chrono>
#include <fstream>

#include "cli/cli_util.h"
#include "engine/prompt_builder.h"
#include "engine/request_json.h"

namespace xinfer {
namespace {

using nlohmann::json;

struct Result {
  std::vector<json> choices;  // per index: token_ids, text, finish_reason
  int prompt_tokens = 0;
  int completion_tokens = 0;
  int cached_tokens = 0;
};

void PrintProgress(size_t done, size_t total, int64_t tokens, double seconds, bool final) {
  const int width = 30;
  const int filled = total ? static_cast<int>(width * done / total) : width;
  fmt::print(stderr, "\r[{}{}] {}/{} requests, {:.1f} tok/s{}", std::string(filled, '='),
             std::string(width - filled, ' '), done, total, seconds > 0 ? tokens / seconds : 0.0,
             final ? "\n" : "");
  std::fflush(stderr);
}

}  // namespace

StatusOr<std::vector<int32_t>> BuildPromptIds(const nlohmann::ordered_json& request,
                                              LLMEngine& engine,
                                              const std::string& chat_template_arg) {
  XI_ASSIGN_OR_RETURN(auto builder, PromptBuilder::Create(engine.config().TokenizerPath(),
                                                          engine.tokenizer(), chat_template_arg));
  return builder->Build(request);
}

int RunOfflineBatch(const std::string& input_path, const std::string& output_path,
                    LLMEngine& engine, const std::string& chat_template_arg,
                    const std::string& lora) {
  std::ifstream in(input_path);
  if (!in) return ReportError(NotFound("cannot read --input {}", input_path));
  auto builder =
      PromptBuilder::Create(engine.config().TokenizerPath(), engine.tokenizer(), chat_template_arg);
  if (!builder.ok()) return ReportError(builder.status());

  // Parse and validate everything first: a bad line changes nothing.
  std::vector<std::pair<std::vector<int32_t>, SamplingParams>> requests;
  std::string line;
  for (int line_no = 1; std::getline(in, line); ++line_no) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    auto fail = [&](const Status& s) {
      return ReportError(s.WithContext(fmt::format("{} line {}", input_path, line_no)));
    };
    auto parsed = ParseInputJson(line);
    if (!parsed.ok()) return fail(parsed.status());
    nlohmann::ordered_json body = std::move(*parsed);
    auto prompt = (*builder)->Build(body);
    if (!prompt.ok()) return fail(prompt.status());
    auto params =
        ParseSamplingParams(body, engine.default_sampling_params(), engine.config().max_model_len,
                            static_cast<int>(prompt->size()));
    if (!params.ok()) return fail(params.status());
    if (Status s = params->Validate(engine.model_config().vocab_size); !s.ok()) return fail(s);
    requests.emplace_back(std::move(*prompt), std::move(*params));
  }
  std::vector<Result> results(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    Status s =
        engine.AddRequest(std::to_string(i), {requests[i].first, requests[i].second, 0, lora});
    if (!s.ok()) {
      // Drop what was queued so nothing runs half a batch.
      for (size_t j = 0; j < i; ++j) (void)engine.Abort(std::to_string(j));
      return ReportError(s.WithContext(fmt::format("request {} (input order)", i + 1)));
    }
    results[i].choices.resize(requests[i].second.n,
                              json{{"token_ids", json::array()}, {"text", ""}});
  }

  const auto start = std::chrono::steady_clock::now();
  size_t done_requests = 0;
  std::vector<int> open_choices(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) open_choices[i] = requests[i].second.n;
  int64_t tokens = 0;
  while (engine.HasUnfinishedRequests()) {
    auto outputs = engine.Step();
    if (!outputs.ok()) return ReportError(outputs.status());
    for (const RequestOutput& o : *outputs) {
      Result& r = results[std::stoul(o.request_id)];
      json& c = r.choices[o.index];
      for (int32_t t : o.token_ids) c["token_ids"].push_back(t);
      c["text"] = c["text"].get<std::string>() + o.text;
      tokens += static_cast<int64_t>(o.token_ids.size());
      if (!o.finished) continue;
      c["finish_reason"] = o.finish_reason;
      r.prompt_tokens = o.prompt_tokens;
      r.completion_tokens += o.completion_tokens;
      r.cached_tokens = std::max(r.cached_tokens, o.cached_tokens);
      if (--open_choices[std::stoul(o.request_id)] == 0) ++done_requests;
    }
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    PrintProgress(done_requests, requests.size(), tokens, secs, false);
  }
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  PrintProgress(done_requests, requests.size(), tokens, secs, true);

  std::ofstream out(output_path);
  if (!out) return ReportError(InvalidArgument("cannot write --output {}", output_path));
  for (const Result& r : results) {
    json j = r.choices[0];
    if (r.choices.size() > 1) {
      json choices = json::array();
      for (size_t i = 0; i < r.choices.size(); ++i) {
        json c = r.choices[i];
        c["index"] = i;
        choices.push_back(c);
      }
      j["choices"] = choices;
    }
    j["usage"] = {{"prompt_tokens", r.prompt_tokens},
                  {"completion_tokens", r.completion_tokens},
                  {"prompt_tokens_details", {{"cached_tokens", r.cached_tokens}}}};
    out << j.dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
  }
  return 0;
}

}  // namespace xinfer
