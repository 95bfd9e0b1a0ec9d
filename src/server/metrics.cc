#include "server/metrics.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <chrono>

namespace xinfer::server {
namespace {

// Prometheus label values escape backslash, quote and newline.
std::string Escaped(const std::string& value) {
  std::string v;
  for (char c : value) {
    if (c == '\\' || c == '"') v += '\\';
    if (c == '\n') {
      v += "\\n";
      continue;
    }
    v += c;
  }
  return v;
}

std::string Label(const std::string& model) { return "model_name=\"" + Escaped(model) + "\""; }

// "{labels}", or nothing for the process_* metrics, which (as prometheus_client writes them)
// carry no labels.
std::string Braced(const std::string& labels) { return labels.empty() ? "" : "{" + labels + "}"; }

void Gauge(std::string& out, const char* name, const char* help, const std::string& labels,
           double value) {
  out += fmt::format("# HELP {} {}\n# TYPE {} gauge\n{}{} {}\n", name, help, name, name,
                     Braced(labels), value);
}

void Counter(std::string& out, const char* name, const char* help, const std::string& labels,
             double value) {
  out += fmt::format("# HELP {} {}\n# TYPE {} counter\n{}_total{} {}\n", name, help, name, name,
                     Braced(labels), value);
}

void Hist(std::string& out, const char* name, const char* help, const std::string& labels,
          const Histogram& h) {
  out += fmt::format("# HELP {} {}\n# TYPE {} histogram\n", name, help, name);
  uint64_t cumulative = 0;
  for (size_t i = 0; i < h.bounds.size(); ++i) {
    cumulative += h.counts[i];
    out += fmt::format("{}_bucket{{{},le=\"{}\"}} {}\n", name, labels, h.bounds[i], cumulative);
  }
  cumulative += h.counts.back();
  out += fmt::format("{}_bucket{{{},le=\"+Inf\"}} {}\n", name, labels, cumulative);
  out += fmt::format("{}_sum{{{}}} {}\n{}_count{{{}}} {}\n", name, labels, h.sum, name, labels,
                     h.count);
}

}  // namespace

std::string FormatPrometheus(const AsyncEngineStats& s, const std::string& model_name,
                             const ProcessStats& process, const EngineConfig& cache) {
  const std::string l = Label(model_name);
  const EngineStats& e = s.engine;
  std::string out;
  // vLLM's info gauge: the cache settings as labels (Python's str() of each, as vLLM writes them:
  // the --kv-cache-dtype as given, True/False, None for an unset override), value 1; the blocks
  // of one engine (a data-parallel replica), as vLLM gives its engine's.
  const std::string cache_labels = fmt::format(
      "block_size=\"{}\",cache_dtype=\"{}\",enable_prefix_caching=\"{}\","
      "gpu_memory_utilization=\"{}\",num_gpu_blocks=\"{}\",num_gpu_blocks_override=\"{}\"",
      cache.block_size, cache.kv_cache_dtype, cache.enable_prefix_caching ? "True" : "False",
      cache.gpu_memory_utilization, s.replicas.empty() ? e.num_blocks : s.replicas[0].num_blocks,
      cache.num_gpu_blocks_override > 0 ? std::to_string(cache.num_gpu_blocks_override) : "None");
  Gauge(out, "vllm:cache_config_info", "Information of the LLMEngine CacheConfig", cache_labels, 1);
  Gauge(out, "vllm:num_requests_running", "Number of requests in model execution batches.", l,
        e.num_running);
  if (cache.enable_lora) {
    // As vLLM writes it: the adapters as comma-separated labels, the time as the value.
    const double now =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    Gauge(out, "vllm:lora_requests_info", "Running stats on lora requests.",
          fmt::format("max_lora=\"{}\",waiting_lora_adapters=\"{}\",running_lora_adapters=\"{}\"",
                      cache.max_loras,
                      Escaped(fmt::format("{}", fmt::join(e.waiting_lora_adapters, ","))),
                      Escaped(fmt::format("{}", fmt::join(e.running_lora_adapters, ",")))),
          now);
  }
  Gauge(out, "vllm:num_requests_waiting", "Number of requests waiting to be processed.", l,
        e.num_waiting + s.num_submitted_pending);
  Gauge(out, "vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", l,
        e.kv_cache_usage);
  Gauge(out, "xinfer:num_kv_blocks", "KV-cache blocks in total.", l, e.num_blocks);
  Gauge(out, "xinfer:num_free_kv_blocks", "KV-cache blocks free (or holding evictable prefixes).",
        l, e.num_free_blocks);
  Gauge(out, "xinfer:num_active_requests", "Requests submitted and not finished.", l,
        s.num_active_requests);
  Counter(out, "vllm:num_preemptions", "Cumulative number of preemptions from the engine.", l,
          static_cast<double>(e.num_preemptions));
  Counter(out, "vllm:prefix_cache_queries",
          "Prefix cache queries, in terms of number of queried tokens.", l,
          static_cast<double>(e.prefix_cache_queries));
  Counter(out, "vllm:prefix_cache_hits", "Prefix cache hits, in terms of number of cached tokens.",
          l, static_cast<double>(e.prefix_cache_hits));
  Counter(out, "vllm:prompt_tokens", "Number of prefill tokens processed.", l,
          static_cast<double>(e.prompt_tokens));
  Counter(out, "vllm:generation_tokens", "Number of generation tokens processed.", l,
          static_cast<double>(e.generation_tokens));
  if (!cache.speculative_config.empty()) {
    // vLLM's spec_decode counters (the acceptance rate is accepted / draft tokens).
    Counter(out, "vllm:spec_decode_num_drafts", "Number of spec decoding drafts.", l,
            static_cast<double>(e.spec_num_drafts));
    Counter(out, "vllm:spec_decode_num_draft_tokens", "Number of draft tokens.", l,
            static_cast<double>(e.spec_num_draft_tokens));
    Counter(out, "vllm:spec_decode_num_accepted_tokens", "Number of accepted tokens.", l,
            static_cast<double>(e.spec_num_accepted_tokens));
    out +=
        "# HELP vllm:spec_decode_num_accepted_tokens_per_pos Accepted tokens per draft position.\n"
        "# TYPE vllm:spec_decode_num_accepted_tokens_per_pos counter\n";
    for (size_t p = 0; p < e.spec_accepted_per_position.size(); ++p)
      out += fmt::format(
          "vllm:spec_decode_num_accepted_tokens_per_pos_total{{{},position=\"{}\"}} {}\n", l, p,
          e.spec_accepted_per_position[p]);
  }
  Counter(out, "xinfer:dropped_slow_clients",
          "Requests dropped because the client read too slowly.", l,
          static_cast<double>(s.metrics.num_dropped_slow_consumers));
  out +=
      "# HELP vllm:request_success Count of successfully processed requests.\n"
      "# TYPE vllm:request_success counter\n";
  for (const char* reason : {"stop", "length", "abort"}) {
    auto it = s.metrics.request_success.find(reason);
    out += fmt::format("vllm:request_success_total{{{},finished_reason=\"{}\"}} {}\n", l, reason,
                       it == s.metrics.request_success.end() ? 0 : it->second);
  }
  Hist(out, "vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", l,
       s.metrics.time_to_first_token);
  Hist(out, "vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", l,
       s.metrics.inter_token_latency);
  Hist(out, "vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", l,
       s.metrics.e2e_request_latency);
  Hist(out, "vllm:request_queue_time_seconds",
       "Histogram of time spent in WAITING phase for request.", l, s.metrics.request_queue_time);
  // fmt prints doubles in the shortest exact form: byte counts below 2^53 stay integers.
  Gauge(out, "process_resident_memory_bytes", "Resident memory size in bytes.", "",
        static_cast<double>(process.resident_bytes));
  Gauge(out, "process_virtual_memory_bytes", "Virtual memory size in bytes.", "",
        static_cast<double>(process.virtual_bytes));
  Gauge(out, "process_open_fds", "Number of open file descriptors.", "",
        static_cast<double>(process.open_fds));
  Gauge(out, "process_max_fds", "Maximum number of open file descriptors.", "",
        static_cast<double>(process.max_fds));
  Counter(out, "process_cpu_seconds", "Total user and system CPU time spent in seconds.", "",
          process.cpu_seconds);
  if (process.heap_in_use_bytes) {
    Gauge(out, "xinfer:heap_in_use_bytes",
          "Bytes in live heap allocations (unlike RSS, without the allocator's free pages).", "",
          static_cast<double>(*process.heap_in_use_bytes));
  }
  return out;
}

}  // namespace xinfer::server
