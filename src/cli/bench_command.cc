// `xinfer bench serve`: a load generator for any OpenAI-compatible server (xinfer, vLLM, ...),
// modelled on `vllm bench serve`. It sends streaming /v1/completions requests (random token-id
// prompts, or a JSONL dataset) at a request rate (Poisson arrivals) with a concurrency cap, and
// reports TTFT, TPOT, ITL and end-to-end latency (mean/median/p90/p99) and throughput.
// Single-threaded: every request is a coroutine on one io_context.
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <utility>

#include "cli/cli_util.h"
#include "cli/commands.h"
#include "server/boost_net.h"

namespace xinfer {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

struct BenchOptions {
  std::string base_url = "http://127.0.0.1:8000";
  std::string model;
  std::string api_key;
  int num_prompts = 100;
  int concurrency = 16;
  double request_rate = std::numeric_limits<double>::infinity();
  int input_len = 128;
  int output_len = 64;
  std::string dataset;
  int shared_prefix_len = 0;
  std::string json_out;
  uint64_t seed = 0;
  // Sent with every request, as `vllm bench serve --temperature/--top-p/--top-k` sends them:
  // temperature always (0, greedy, unless given), top_p and top_k only when given.
  double temperature = 0;
  double top_p = 0;  // 0: not sent
  int top_k = 0;     // 0: not sent
};

struct Prompt {
  json prompt;  // text or token ids
  int output_len = 0;
};

struct Result {
  bool ok = false;
  std::string error;
  double ttft = 0, e2e = 0;
  std::vector<double> itl;
  int prompt_tokens = 0, output_tokens = 0;
};

// Outside the coroutine: GCC 12 mishandles braced JSON initializers inside coroutines.
json RequestBody(const BenchOptions& o, const Prompt& p) {
  json body = {{"model", o.model},
               {"prompt", p.prompt},
               {"max_tokens", p.output_len},
               {"temperature", o.temperature},
               {"ignore_eos", true},
               {"stream", true},
               {"stream_options", {{"include_usage", true}}}};
  if (o.top_p > 0) body["top_p"] = o.top_p;
  if (o.top_k != 0) body["top_k"] = o.top_k;
  return body;
}

Result Failed(std::string error) {
  Result r;
  r.error = std::move(error);
  return r;
}

StatusOr<std::pair<std::string, std::string>> ParseBaseUrl(const std::string& url) {
  const std::string scheme = "http://";
  if (url.rfind(scheme, 0) != 0) return InvalidArgument("--base-url must start with http://");
  std::string rest = url.substr(scheme.size());
  rest = rest.substr(0, rest.find('/'));
  const size_t colon = rest.rfind(':');
  if (colon == std::string::npos) return std::make_pair(rest, std::string("80"));
  return std::make_pair(rest.substr(0, colon), rest.substr(colon + 1));
}

StatusOr<std::vector<Prompt>> MakePrompts(const BenchOptions& o) {
  std::vector<Prompt> prompts;
  if (!o.dataset.empty()) {
    std::ifstream in(o.dataset);
    if (!in) return NotFound("cannot read --dataset {}", o.dataset);
    std::string line;
    while (std::getline(in, line) && static_cast<int>(prompts.size()) < o.num_prompts) {
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      json j = json::parse(line, nullptr, false);
      if (j.is_discarded() || !j.is_object() || !j.contains("prompt"))
        return InvalidArgument("{}: each line must be a JSON object with a 'prompt'", o.dataset);
      prompts.push_back({j["prompt"], j.value("output_len", j.value("max_tokens", o.output_len))});
    }
    if (prompts.empty()) return InvalidArgument("{} holds no prompts", o.dataset);
    // Fewer lines than --num-prompts: cycle through them.
    for (size_t i = 0; static_cast<int>(prompts.size()) < o.num_prompts; ++i)
      prompts.push_back(prompts[i]);
    return prompts;
  }
  // Random token ids from a range every vocabulary has, so no tokenizer is needed client-side.
  std::mt19937_64 rng(o.seed);
  std::uniform_int_distribution<int> tok(10, 999);
  std::vector<int> prefix(std::min(o.shared_prefix_len, o.input_len));
  for (int& t : prefix) t = tok(rng);
  for (int i = 0; i < o.num_prompts; ++i) {
    std::vector<int> ids = prefix;
    while (static_cast<int>(ids.size()) < o.input_len) ids.push_back(tok(rng));
    prompts.push_back({json(ids), o.output_len});
  }
  return prompts;
}

// One streaming request on its own connection. SSE events are timed as chunks arrive.
net::awaitable<Result> RunOne(const BenchOptions& o, const std::string& host,
                              const std::string& port, const Prompt& p) {
  Result r;
  beast::error_code ec;
  auto ex = co_await net::this_coro::executor;
  tcp::resolver resolver(ex);
  auto endpoints =
      co_await resolver.async_resolve(host, port, net::redirect_error(net::use_awaitable, ec));
  if (ec) co_return Failed("resolve: " + ec.message());
  beast::tcp_stream stream(ex);
  stream.expires_after(std::chrono::minutes(10));
  co_await stream.async_connect(endpoints, net::redirect_error(net::use_awaitable, ec));
  if (ec) co_return Failed("connect: " + ec.message());

  const json body = RequestBody(o, p);
  http::request<http::string_body> req{http::verb::post, "/v1/completions", 11};
  req.set(http::field::host, host);
  req.set(http::field::content_type, "application/json");
  if (!o.api_key.empty()) req.set(http::field::authorization, "Bearer " + o.api_key);
  req.body() = body.dump();
  req.prepare_payload();
  const auto start = Clock::now();
  co_await http::async_write(stream, req, net::redirect_error(net::use_awaitable, ec));
  if (ec) co_return Failed("write: " + ec.message());

  http::response_parser<http::string_body> parser;
  parser.body_limit(std::numeric_limits<uint64_t>::max());
  std::string pending;
  std::optional<Clock::time_point> last;
  bool done = false;
  int chunks = 0;
  auto on_event = [&](const std::string& data, Clock::time_point now) {
    if (data == "[DONE]") {
      done = true;
      return;
    }
    json j = json::parse(data, nullptr, false);
    if (j.is_discarded()) return;
    if (j.contains("error")) {
      r.error = j["error"].value("message", "error event");
      return;
    }
    if (j.contains("usage") && j["usage"].is_object()) {
      r.prompt_tokens = j["usage"].value("prompt_tokens", 0);
      r.output_tokens = j["usage"].value("completion_tokens", 0);
    }
    if (!j.contains("choices") || j["choices"].empty()) return;
    const std::string text = j["choices"][0].value("text", "");
    if (text.empty()) return;
    ++chunks;
    const double t = std::chrono::duration<double>(now - start).count();
    if (!last) {
      r.ttft = t;
    } else {
      r.itl.push_back(std::chrono::duration<double>(now - *last).count());
    }
    last = now;
  };
  auto on_chunk = [&](uint64_t, beast::string_view piece, beast::error_code&) -> size_t {
    pending.append(piece.data(), piece.size());
    const auto now = Clock::now();
    for (size_t pos; (pos = pending.find("\n\n")) != std::string::npos;) {
      std::string event = pending.substr(0, pos);
      pending.erase(0, pos + 2);
      if (event.rfind("data: ", 0) == 0) on_event(event.substr(6), now);
    }
    return piece.size();
  };
  parser.on_chunk_body(on_chunk);
  beast::flat_buffer buffer;
  co_await http::async_read_header(stream, buffer, parser,
                                   net::redirect_error(net::use_awaitable, ec));
  if (ec) co_return Failed("read: " + ec.message());
  if (parser.get().result() != http::status::ok) {
    co_await http::async_read(stream, buffer, parser, net::redirect_error(net::use_awaitable, ec));
    co_return Failed(
        fmt::format("HTTP {}: {}", parser.get().result_int(), parser.get().body().substr(0, 200)));
  }
  while (!parser.is_done()) {
    co_await http::async_read_some(stream, buffer, parser,
                                   net::redirect_error(net::use_awaitable, ec));
    if (ec) co_return Failed("read: " + ec.message());
  }
  r.e2e = std::chrono::duration<double>(Clock::now() - start).count();
  if (r.output_tokens == 0) r.output_tokens = chunks;
  r.ok = done && r.error.empty() && chunks > 0;
  if (!r.ok && r.error.empty()) r.error = "stream ended without [DONE] or text";
  stream.socket().shutdown(tcp::socket::shutdown_both, ec);
  co_return r;
}

json Summary(std::vector<double> v, const char* name) {
  json j;
  if (v.empty()) v.push_back(0);
  std::sort(v.begin(), v.end());
  double sum = 0;
  for (double x : v) sum += x;
  auto pct = [&](double p) {
    const double idx = p / 100.0 * (v.size() - 1);
    const size_t lo = static_cast<size_t>(idx);
    const size_t hi = std::min(lo + 1, v.size() - 1);
    return (v[lo] + (v[hi] - v[lo]) * (idx - lo)) * 1000.0;
  };
  j[fmt::format("mean_{}_ms", name)] = sum / v.size() * 1000.0;
  j[fmt::format("median_{}_ms", name)] = pct(50);
  j[fmt::format("p90_{}_ms", name)] = pct(90);
  j[fmt::format("p99_{}_ms", name)] = pct(99);
  return j;
}

int RunBench(const BenchOptions& o) {
  if (o.model.empty()) return ReportError(InvalidArgument("--model is required"));
  if (o.num_prompts < 1) return ReportError(InvalidArgument("--num-prompts must be >= 1"));
  if (o.concurrency < 1) return ReportError(InvalidArgument("--concurrency must be >= 1"));
  if (!(o.request_rate > 0)) return ReportError(InvalidArgument("--request-rate must be > 0"));
  if (o.dataset.empty() && (o.input_len < 1 || o.output_len < 1))
    return ReportError(InvalidArgument("--input-len and --output-len must be >= 1"));
  // The ranges every OpenAI-compatible server takes (a value outside them would fail every
  // request rather than measure anything).
  if (!(o.temperature >= 0) || !(o.top_p >= 0 && o.top_p <= 1) || o.top_k < -1)
    return ReportError(InvalidArgument(
        "--temperature must be >= 0, --top-p in (0, 1] and --top-k -1, 0 (off) or >= 1"));
  auto hp = ParseBaseUrl(o.base_url);
  if (!hp.ok()) return ReportError(hp.status());
  auto prompts = MakePrompts(o);
  if (!prompts.ok()) return ReportError(prompts.status());

  // Poisson arrivals at --request-rate (all at once when infinite), capped by --concurrency.
  std::vector<double> arrival(prompts->size(), 0.0);
  std::mt19937_64 rng(o.seed + 1);
  std::exponential_distribution<double> gap(std::isinf(o.request_rate) ? 1.0 : o.request_rate);
  for (size_t i = 1; i < arrival.size(); ++i)
    arrival[i] = arrival[i - 1] + (std::isinf(o.request_rate) ? 0.0 : gap(rng));

  net::io_context ioc;
  std::vector<Result> results(prompts->size());
  size_t next = 0;
  const auto t0 = Clock::now();
  auto worker = [&]() -> net::awaitable<void> {
    net::steady_timer timer(ioc);
    while (next < prompts->size()) {
      const size_t i = next++;
      timer.expires_at(t0 + std::chrono::duration_cast<Clock::duration>(
                                std::chrono::duration<double>(arrival[i])));
      beast::error_code ec;
      co_await timer.async_wait(net::redirect_error(net::use_awaitable, ec));
      results[i] = co_await RunOne(o, hp->first, hp->second, (*prompts)[i]);
    }
  };
  for (int w = 0; w < std::min<int>(o.concurrency, prompts->size()); ++w)
    net::co_spawn(ioc, worker(), net::detached);
  ioc.run();
  const double duration = std::chrono::duration<double>(Clock::now() - t0).count();

  int ok = 0;
  int64_t in_tokens = 0, out_tokens = 0;
  std::vector<double> ttft, tpot, itl, e2e;
  std::vector<std::string> errors;
  for (const Result& r : results) {
    if (!r.ok) {
      if (errors.size() < 5) errors.push_back(r.error);
      continue;
    }
    ++ok;
    in_tokens += r.prompt_tokens;
    out_tokens += r.output_tokens;
    ttft.push_back(r.ttft);
    e2e.push_back(r.e2e);
    if (r.output_tokens > 1) tpot.push_back((r.e2e - r.ttft) / (r.output_tokens - 1));
    itl.insert(itl.end(), r.itl.begin(), r.itl.end());
  }
  json report = {{"base_url", o.base_url},
                 {"model", o.model},
                 {"num_prompts", o.num_prompts},
                 {"concurrency", o.concurrency},
                 {"request_rate", std::isinf(o.request_rate) ? json("inf") : json(o.request_rate)},
                 {"temperature", o.temperature},
                 {"completed", ok},
                 {"failed", static_cast<int>(results.size()) - ok},
                 {"errors", errors},
                 {"duration_s", duration},
                 {"total_input_tokens", in_tokens},
                 {"total_output_tokens", out_tokens},
                 {"request_throughput", ok / duration},
                 {"output_throughput", out_tokens / duration},
                 {"total_token_throughput", (in_tokens + out_tokens) / duration}};
  for (const auto& part :
       {Summary(ttft, "ttft"), Summary(tpot, "tpot"), Summary(itl, "itl"), Summary(e2e, "e2el")})
    report.update(part);

  auto line = [](const std::string& k, const std::string& v) {
    fmt::print("{:<40}{:>12}\n", k, v);
  };
  auto num = [](double v) { return fmt::format("{:.2f}", v); };
  fmt::print("{:=^52}\n", " Serving Benchmark Result ");
  line("Successful requests:", std::to_string(ok));
  line("Failed requests:", std::to_string(results.size() - ok));
  line("Maximum request concurrency:", std::to_string(o.concurrency));
  line("Benchmark duration (s):", num(duration));
  line("Total input tokens:", std::to_string(in_tokens));
  line("Total generated tokens:", std::to_string(out_tokens));
  line("Request throughput (req/s):", num(ok / duration));
  line("Output token throughput (tok/s):", num(out_tokens / duration));
  line("Total Token throughput (tok/s):", num((in_tokens + out_tokens) / duration));
  for (const auto& [title, key] : std::vector<std::pair<std::string, std::string>>{
           {"Time to First Token", "ttft"},
           {"Time per Output Token (excl. 1st token)", "tpot"},
           {"Inter-token Latency", "itl"},
           {"End-to-end Latency", "e2el"}}) {
    fmt::print("{:-^52}\n", " " + title + " ");
    for (const char* stat : {"mean", "median", "p90", "p99"}) {
      std::string upper = key == "e2el" ? "E2EL" : key;
      std::transform(upper.begin(), upper.end(), upper.begin(), ::toupper);
      std::string label = std::string(stat == std::string("mean")     ? "Mean"
                                      : stat == std::string("median") ? "Median"
                                      : stat == std::string("p90")    ? "P90"
                                                                      : "P99");
      line(fmt::format("{} {} (ms):", label, upper),
           num(report[fmt::format("{}_{}_ms", stat, key)].get<double>()));
    }
  }
  fmt::print("{:=^52}\n", "");
  for (const std::string& e : errors) fmt::print(stderr, "request error: {}\n", e);
  if (!o.json_out.empty()) {
    std::ofstream out(o.json_out);
    if (!out) return ReportError(NotFound("cannot write --json {}", o.json_out));
    out << report.dump(2) << "\n";
  }
  return ok > 0 ? 0 : 1;
}

}  // namespace

void AddBenchServeCommand(CLI::App& bench, int* exit_code) {
  auto o = std::make_shared<BenchOptions>();
  CLI::App* cmd = bench.add_subcommand("serve", "Load-test an OpenAI-compatible server");
  cmd->add_option("--base-url", o->base_url, "Server URL (default http://127.0.0.1:8000)");
  cmd->add_option("--model", o->model, "Model name sent in requests")->required();
  cmd->add_option("--api-key", o->api_key, "Bearer token");
  cmd->add_option("--num-prompts", o->num_prompts, "Requests to send (default 100)");
  cmd->add_option("--concurrency,--max-concurrency", o->concurrency,
                  "Requests in flight at most (default 16)");
  cmd->add_option("--request-rate", o->request_rate,
                  "Requests per second, Poisson arrivals (default inf: all at once)");
  cmd->add_option("--input-len", o->input_len, "Random prompt length in tokens (default 128)");
  cmd->add_option("--output-len", o->output_len, "Tokens to generate (default 64)");
  cmd->add_option("--dataset", o->dataset,
                  "JSONL of {\"prompt\": text or ids, \"output_len\"?: N} instead of random");
  cmd->add_option("--shared-prefix-len", o->shared_prefix_len,
                  "Leading tokens shared by every random prompt (prefix caching)");
  cmd->add_option("--json", o->json_out, "Also write the report as JSON to this file");
  cmd->add_option("--seed", o->seed, "Random seed for prompts and arrivals (default 0)");
  cmd->add_option("--temperature", o->temperature,
                  "Sampling temperature sent with each request (default 0: greedy)");
  cmd->add_option("--top-p", o->top_p, "top_p sent with each request (default: not sent)");
  cmd->add_option("--top-k", o->top_k, "top_k sent with each request (default: not sent)");
  cmd->callback([o, exit_code] { *exit_code = RunBench(*o); });
}

}  // namespace xinfer
