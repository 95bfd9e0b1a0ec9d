#include "engine/async_engine.h"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/logging.h"

namespace xinfer {

// ---------------------------------------------------------------------------------------------
// Metrics

void Histogram::Observe(double value) {
  size_t i = std::lower_bound(bounds.begin(), bounds.end(), value) - bounds.begin();
  ++counts[i];
  sum += value;
  ++count;
}

// Buckets as vLLM's (vllm/v1/metrics/loggers.py), so dashboards built for it read ours.
ServingMetrics::ServingMetrics()
    : time_to_first_token({0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,  0.25,  0.5,   0.75,
                           1.0,   2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}),
      inter_token_latency({0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5,
                           5.0, 7.5, 10.0, 20.0, 40.0, 80.0}),
      e2e_request_latency({0.3,  0.5,  0.8,  1.0,  1.5,   2.0,   2.5,   5.0,   10.0,   15.0,  20.0,
                           30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}),
      request_queue_time(e2e_request_latency.bounds) {}

// ---------------------------------------------------------------------------------------------
// RequestStream

RequestStream::Batch RequestStream::Drain() {
  std::lock_guard<std::mutex> l(mu_);
  Batch b;
  b.outputs.swap(buffer_);
  if (done_ && !delivered_done_) delivered_done_ = true;
  b.done = done_;
  b.error = error_;
  armed_ = true;
  return b;
}

bool RequestStream::Push(RequestOutput out, size_t max_buffered, bool* overflow) {
  std::lock_guard<std::mutex> l(mu_);
  *overflow = false;
  if (done_) return false;
  if (buffer_.size() >= max_buffered) {
    *overflow = true;
    return false;
  }
  if (out.finished && ++finished_choices_ >= n_) done_ = true;
  buffer_.push_back(std::move(out));
  const bool notify = armed_;
  armed_ = false;
  return notify;
}

bool RequestStream::Fail(Status status) {
  std::lock_guard<std::mutex> l(mu_);
  if (done_) return false;
  done_ = true;
  error_ = std::move(status);
  const bool notify = armed_;
  armed_ = false;
  return notify;
}

// ---------------------------------------------------------------------------------------------
// AsyncEngine

struct AsyncEngine::Active {
  std::shared_ptr<RequestStream> stream;
  Clock::time_point arrival;
  bool first_token_seen = false;
  std::vector<Clock::time_point> last_token;  // per choice, for inter-token latency
  int finished = 0;
  int n = 1;
  // Scripted output (tests): the ids to emit and, per choice, a decoder for their text.
  const Script* script = nullptr;
  int script_max_tokens = 0;  // the request's own max_tokens
  std::vector<IncrementalDecoder> decoders;
};

AsyncEngine::AsyncEngine(std::unique_ptr<LLMEngine> engine, const AsyncEngineOptions& options)
    : engine_(std::move(engine)),
      tokenizer_(&engine_->tokenizer()),
      config_(engine_->config()),
      model_config_(engine_->model_config()),
      default_params_(engine_->default_sampling_params()),
      options_(options) {}

StatusOr<std::unique_ptr<AsyncEngine>> AsyncEngine::Create(std::unique_ptr<LLMEngine> engine,
                                                           const AsyncEngineOptions& options) {
  if (engine == nullptr) return InvalidArgument("AsyncEngine needs an engine");
  if (options.max_queue_len < 0)
    return InvalidArgument("max_queue_len must be >= 0, got {}", options.max_queue_len);
  if (options.max_buffered_outputs < 1) return InvalidArgument("max_buffered_outputs must be >= 1");
  auto ae = std::unique_ptr<AsyncEngine>(new AsyncEngine(std::move(engine), options));
  if (!options.scripted_output_file.empty()) {
    std::ifstream f(options.scripted_output_file);
    if (!f) return NotFound("cannot read scripted output file {}", options.scripted_output_file);
    std::stringstream ss;
    ss << f.rdbuf();
    auto j = nlohmann::json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
    if (!j.is_array())
      return InvalidArgument("{}: expected a JSON list of {{trigger, output}}",
                             options.scripted_output_file);
    for (const auto& e : j) {
      if (!e.is_object() || !e.contains("trigger") || !e["trigger"].is_string() ||
          !e.contains("output") || !e["output"].is_string())
        return InvalidArgument("{}: each entry needs string 'trigger' and 'output'",
                               options.scripted_output_file);
      Script s;
      s.trigger = e["trigger"].get<std::string>();
      XI_ASSIGN_OR_RETURN(s.ids, ae->tokenizer_->Encode(e["output"].get<std::string>(), false));
      if (s.ids.empty()) return InvalidArgument("scripted output must not be empty");
      ae->scripts_.push_back(std::move(s));
    }
    XI_LOG_WARN("test-only scripted output is on ({} scripts)", ae->scripts_.size());
  }
  ae->stats_ = ae->engine_->stats();
  ae->thread_ = std::thread([p = ae.get()] { p->Loop(); });
  return ae;
}

AsyncEngine::~AsyncEngine() { Shutdown(std::chrono::milliseconds(0)); }

const AsyncEngine::Script* AsyncEngine::MatchScript(const std::vector<int32_t>& prompt) const {
  if (scripts_.empty()) return nullptr;
  const std::string text = tokenizer_->Decode(prompt);
  for (const Script& s : scripts_)
    if (text.find(s.trigger) != std::string::npos) return &s;
  return nullptr;
}

StatusOr<std::shared_ptr<RequestStream>> AsyncEngine::Submit(const std::string& id,
                                                             EngineRequest request,
                                                             std::function<void()> notify) {
  const int n = std::max(request.params.n, 1);
  auto stream = std::make_shared<RequestStream>(id, n);
  stream->notify_ = std::move(notify);
  // Decoding the prompt for the script lookup happens here, off the engine thread.
  const Script* script = MatchScript(request.prompt_ids);
  {
    std::lock_guard<std::mutex> l(mu_);
    if (!accepting_) return Status(StatusCode::kUnavailable, "the server is shutting down");
    const int waiting = stats_.num_waiting + pending_adds_;
    if (options_.max_queue_len > 0 && waiting >= options_.max_queue_len)
      return Status(StatusCode::kUnavailable,
                    fmt::format("the waiting queue is full ({} requests, --max-queue-len {}); "
                                "retry later",
                                waiting, options_.max_queue_len));
    commands_.push_back(
        Command{Command::kAdd, id, std::move(request), stream, Clock::now(), script});
    ++pending_adds_;
    ++num_active_;
  }
  cv_.notify_one();
  return stream;
}

void AsyncEngine::Cancel(const std::string& id) {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (stop_) return;
    commands_.push_back(Command{Command::kCancel, id, {}, nullptr, Clock::now(), nullptr});
  }
  cv_.notify_one();
}

AsyncEngineStats AsyncEngine::Stats() const {
  std::lock_guard<std::mutex> l(mu_);
  AsyncEngineStats s;
  s.engine = stats_;
  s.num_submitted_pending = pending_adds_;
  s.num_active_requests = num_active_;
  s.metrics = metrics_;
  return s;
}

bool AsyncEngine::accepting() const {
  std::lock_guard<std::mutex> l(mu_);
  return accepting_;
}

bool AsyncEngine::Shutdown(std::chrono::milliseconds timeout) {
  std::lock_guard<std::mutex> sl(shutdown_mu_);
  bool drained;
  {
    std::unique_lock<std::mutex> l(mu_);
    accepting_ = false;
    drained = idle_cv_.wait_for(l, timeout, [&] { return num_active_ == 0; });
    stop_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable()) thread_.join();
  return drained;
}

void AsyncEngine::Apply(Command& cmd) {
  if (cmd.kind == Command::kCancel) {
    if (active_.count(cmd.id)) (void)engine_->Abort(cmd.id);
    return;
  }
  auto a = std::make_unique<Active>();
  a->stream = cmd.stream;
  a->arrival = cmd.arrival;
  a->n = std::max(cmd.request.params.n, 1);
  a->last_token.resize(a->n);
  if (cmd.script != nullptr) {
    // Let the model run exactly as many steps as the script has tokens; ApplyScript swaps them.
    SamplingParams& p = cmd.request.params;
    a->script = cmd.script;
    a->script_max_tokens = p.max_tokens;
    p.max_tokens = std::min<int32_t>(p.max_tokens, static_cast<int32_t>(cmd.script->ids.size()));
    p.ignore_eos = true;
    p.stop.clear();
    p.stop_token_ids.clear();
    p.min_tokens = 0;
    for (int i = 0; i < a->n; ++i) a->decoders.emplace_back(*tokenizer_, true);
  }
  Status s = engine_->AddRequest(cmd.id, std::move(cmd.request));
  if (!s.ok()) {
    if (cmd.stream->Fail(s) && cmd.stream->notify_) cmd.stream->notify_();
    std::lock_guard<std::mutex> l(mu_);
    if (--num_active_ == 0) idle_cv_.notify_all();
    return;
  }
  active_[cmd.id] = std::move(a);
}

void AsyncEngine::ApplyScript(Active& a, RequestOutput& out) {
  const std::vector<int32_t>& ids = a.script->ids;
  IncrementalDecoder& dec = a.decoders[out.index];
  out.text.clear();
  int pos = out.completion_tokens - static_cast<int>(out.token_ids.size());
  for (size_t k = 0; k < out.token_ids.size(); ++k, ++pos) {
    const int32_t id = ids[std::min<size_t>(pos, ids.size() - 1)];
    out.token_ids[k] = id;
    if (k < out.logprobs.size()) out.logprobs[k].token = id;
    out.text += dec.Append(id);
  }
  if (out.finished) {
    out.text += dec.Flush();
    if (out.finish_reason == "length" && out.completion_tokens >= static_cast<int>(ids.size()) &&
        a.script_max_tokens >= static_cast<int>(ids.size())) {
      out.finish_reason = "stop";  // the script ran out, as a model emitting EOS
      out.stop_reason.clear();
    }
  }
}

void AsyncEngine::Drop(const std::string& id, Status why) {
  auto it = active_.find(id);
  if (it == active_.end()) return;
  (void)engine_->Abort(id);
  if (it->second->stream->Fail(std::move(why)) && it->second->stream->notify_)
    it->second->stream->notify_();
  active_.erase(it);
  std::lock_guard<std::mutex> l(mu_);
  ++metrics_.num_dropped_slow_consumers;
  ++metrics_.request_success["abort"];
  if (--num_active_ == 0) idle_cv_.notify_all();
}

void AsyncEngine::Dispatch(std::vector<RequestOutput>& outputs, Clock::time_point step_start) {
  const auto now = Clock::now();
  std::vector<std::string> overflowed;
  std::vector<std::shared_ptr<RequestStream>> to_notify;
  std::unique_lock<std::mutex> l(mu_);  // metrics; streams have their own locks
  for (RequestOutput& out : outputs) {
    auto it = active_.find(out.request_id);
    if (it == active_.end()) continue;  // dropped earlier
    Active& a = *it->second;
    if (a.script != nullptr) ApplyScript(a, out);
    if (!out.token_ids.empty()) {
      if (!a.first_token_seen) {
        a.first_token_seen = true;
        metrics_.time_to_first_token.Observe(
            std::chrono::duration<double>(now - a.arrival).count());
        metrics_.request_queue_time.Observe(
            std::chrono::duration<double>(std::max(step_start, a.arrival) - a.arrival).count());
      } else if (a.last_token[out.index] != Clock::time_point{}) {
        metrics_.inter_token_latency.Observe(
            std::chrono::duration<double>(now - a.last_token[out.index]).count());
      }
      a.last_token[out.index] = now;
    }
    const bool finished = out.finished;
    if (finished) ++metrics_.request_success[out.finish_reason];
    bool overflow = false;
    if (a.stream->Push(std::move(out), options_.max_buffered_outputs, &overflow))
      to_notify.push_back(a.stream);
    if (overflow) {
      overflowed.push_back(it->first);
      continue;
    }
    if (finished && ++a.finished >= a.n) {
      metrics_.e2e_request_latency.Observe(std::chrono::duration<double>(now - a.arrival).count());
      active_.erase(it);
      if (--num_active_ == 0) idle_cv_.notify_all();
    }
  }
  l.unlock();
  for (const auto& s : to_notify)
    if (s->notify_) s->notify_();
  for (const std::string& id : overflowed) {
    XI_LOG_WARN("request {}: client too slow ({} outputs unread); dropped", id,
                options_.max_buffered_outputs);
    Drop(id, ResourceExhausted("the client reads too slowly ({} outputs unread); request dropped",
                               options_.max_buffered_outputs));
  }
}

void AsyncEngine::Loop() {
  for (;;) {
    std::deque<Command> cmds;
    bool stop = false;
    {
      std::unique_lock<std::mutex> l(mu_);
      const bool busy = engine_->HasUnfinishedRequests();
      if (!busy) cv_.wait(l, [&] { return !commands_.empty() || stop_; });
      cmds.swap(commands_);
      stop = stop_;
    }
    // Taken adds leave pending_adds_ only together with the stats that count them as waiting,
    // so the queue cap never sees them in neither place.
    int taken = 0;
    for (const Command& c : cmds) taken += c.kind == Command::kAdd;
    if (stop) {
      // Shutdown's timeout passed: abort whatever is left and end every stream.
      for (Command& c : cmds)
        if (c.kind == Command::kAdd &&
            c.stream->Fail(Status(StatusCode::kUnavailable, "the server is shutting down")))
          if (c.stream->notify_) c.stream->notify_();
      std::vector<std::string> ids;
      for (const auto& [id, a] : active_) ids.push_back(id);
      for (const std::string& id : ids) (void)engine_->Abort(id);
      while (engine_->HasUnfinishedRequests()) {
        auto outs = engine_->Step();
        if (!outs.ok()) break;
        Dispatch(*outs, Clock::now());
      }
      for (const std::string& id : ids) {
        auto it = active_.find(id);
        if (it != active_.end() &&
            it->second->stream->Fail(Status(StatusCode::kCancelled, "the server shut down")))
          if (it->second->stream->notify_) it->second->stream->notify_();
      }
      active_.clear();
      std::lock_guard<std::mutex> l(mu_);
      num_active_ = 0;
      pending_adds_ = 0;
      stats_ = engine_->stats();
      idle_cv_.notify_all();
      return;
    }
    for (Command& c : cmds) Apply(c);
    if (engine_->HasUnfinishedRequests()) {
      const auto step_start = Clock::now();
      auto outs = engine_->Step();
      if (!outs.ok()) {
        // The engine aborted that step's requests; they are reported by the next Step().
        XI_LOG_ERROR("engine step failed: {}", outs.status().ToString());
      } else {
        Dispatch(*outs, step_start);
      }
    }
    EngineStats st = engine_->stats();
    std::lock_guard<std::mutex> l(mu_);
    stats_ = st;
    pending_adds_ -= taken;
  }
}

}  // namespace xinfer
