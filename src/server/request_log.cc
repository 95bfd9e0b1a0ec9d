#include "server/request_log.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <span>

namespace xinfer::server {

std::string FormatStatsLine(int engine, const EngineStats& before, const EngineStats& now,
                            double seconds) {
  const double span = std::max(seconds, 1e-9);
  const double hit_rate = now.prefix_cache_queries > 0
                              ? 100.0 * static_cast<double>(now.prefix_cache_hits) /
                                    static_cast<double>(now.prefix_cache_queries)
                              : 0.0;
  return fmt::format(
      "Engine {:03}: Avg prompt throughput: {:.1f} tokens/s, Avg generation throughput: {:.1f} "
      "tokens/s, Running: {} reqs, Waiting: {} reqs, KV cache usage: {:.1f}%, Prefix cache hit "
      "rate: {:.1f}%",
      engine, static_cast<double>(now.prompt_tokens - before.prompt_tokens) / span,
      static_cast<double>(now.generation_tokens - before.generation_tokens) / span, now.num_running,
      now.num_waiting, 100.0 * now.kv_cache_usage, hit_rate);
}

bool StatsIntervalIdle(const EngineStats& before, const EngineStats& now) {
  return now.computed_tokens == before.computed_tokens && now.num_running == 0 &&
         now.num_waiting == 0;
}

namespace {

std::string DescribeParams(const SamplingParams& p) {
  static constexpr const char* kGuides[] = {"none", "json_object", "json_schema", "regex",
                                            "grammar"};
  std::string s = fmt::format(
      "n={} temperature={} top_p={} top_k={} min_p={} repetition_penalty={} "
      "presence_penalty={} frequency_penalty={} max_tokens={} min_tokens={} ignore_eos={} "
      "logprobs={} seed={} stop={} stop_token_ids={} guided={}",
      p.n, p.temperature, p.top_p, p.top_k, p.min_p, p.repetition_penalty, p.presence_penalty,
      p.frequency_penalty, p.max_tokens, p.min_tokens, p.ignore_eos,
      p.logprobs < 0 ? std::string("None") : std::to_string(p.logprobs),
      p.seed ? std::to_string(*p.seed) : std::string("None"), p.stop, p.stop_token_ids,
      kGuides[static_cast<int>(p.guided)]);
  return s;
}

}  // namespace

std::string FormatRequestLine(const GenerationRequest& request, size_t prompt_index,
                              const Tokenizer& tokenizer, int max_log_len) {
  const std::vector<int32_t>& ids = request.prompts[prompt_index];
  const size_t limit = max_log_len < 0 ? ids.size() : static_cast<size_t>(max_log_len);
  std::span<const int32_t> shown(ids.data(), std::min(ids.size(), limit));
  // The shown ids' text (each id one or more characters), cut to the same length.
  std::string text = tokenizer.Decode(shown);
  if (max_log_len >= 0 && text.size() > static_cast<size_t>(max_log_len)) {
    // Cut on a character boundary.
    size_t cut = static_cast<size_t>(max_log_len);
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
    text.resize(cut);
  }
  const std::string id =
      request.prompts.size() == 1 ? request.id : request.id + "-" + std::to_string(prompt_index);
  return fmt::format("Received request {}: prompt: {:?}, params: {}, prompt_token_ids: {}{}", id,
                     text, DescribeParams(request.params), shown,
                     shown.size() < ids.size() ? fmt::format(" (of {})", ids.size()) : "");
}

}  // namespace xinfer::server
