#include "engine/async_engine.h"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
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

struct AsyncEngine::Replica {
  std::unique_ptr<LLMEngine> engine;  // its thread only (immutable accessors excepted)
  std::unordered_map<std::string, std::unique_ptr<Active>> active;  // its thread only
  // Guarded by AsyncEngine::mu_.
  std::condition_variable cv;  // wakes its thread
  std::deque<Command> commands;
  int pending_adds = 0;  // submitted here, not yet handed to the engine
  int num_active = 0;    // routed here and not ended
  EngineStats stats;
  std::thread thread;
};

AsyncEngine::AsyncEngine(std::vector<std::unique_ptr<Replica>> replicas,
                         const AsyncEngineOptions& options)
    : replicas_(std::move(replicas)),
      tokenizer_(&replicas_[0]->engine->tokenizer()),
      config_(replicas_[0]->engine->config()),
      model_config_(replicas_[0]->engine->model_config()),
      default_params_(replicas_[0]->engine->default_sampling_params()),
      options_(options) {}

StatusOr<std::unique_ptr<AsyncEngine>> AsyncEngine::Create(std::unique_ptr<LLMEngine> engine,
                                                           const AsyncEngineOptions& options) {
  std::vector<std::unique_ptr<LLMEngine>> replicas;
  replicas.push_back(std::move(engine));
  return Create(std::move(replicas), options);
}

StatusOr<std::unique_ptr<AsyncEngine>> AsyncEngine::Create(
    std::vector<std::unique_ptr<LLMEngine>> engines, const AsyncEngineOptions& options) {
  if (engines.empty() || engines[0] == nullptr)
    return InvalidArgument("AsyncEngine needs an engine");
  const int dp = engines[0]->config().data_parallel_size;
  if (static_cast<int>(engines.size()) != dp)
    return InvalidArgument("data_parallel_size {} needs {} engines, got {}", dp, dp,
                           engines.size());
  std::vector<std::unique_ptr<Replica>> replicas;
  for (size_t i = 0; i < engines.size(); ++i) {
    if (engines[i] == nullptr || engines[i]->data_parallel_rank() != static_cast<int>(i))
      return InvalidArgument("engine {} is not data-parallel replica {}", i, i);
    replicas.push_back(std::make_unique<Replica>());
    replicas.back()->engine = std::move(engines[i]);
  }
  if (options.max_queue_len < 0)
    return InvalidArgument("max_queue_len must be >= 0, got {}", options.max_queue_len);
  if (options.max_buffered_outputs < 1) return InvalidArgument("max_buffered_outputs must be >= 1");
  auto ae = std::unique_ptr<AsyncEngine>(new AsyncEngine(std::move(replicas), options));
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
  for (auto& r : ae->replicas_) {
    r->stats = r->engine->stats();
    r->thread = std::thread([p = ae.get(), r = r.get()] {
      r->engine->BindSteppingThread();
      p->Loop(*r);
    });
  }
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
  Replica* target = nullptr;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (!accepting_) return Status(StatusCode::kUnavailable, "the server is shutting down");
    int waiting = 0;
    for (const auto& r : replicas_) waiting += r->stats.num_waiting + r->pending_adds;
    if (options_.max_queue_len > 0 && waiting >= options_.max_queue_len)
      return Status(StatusCode::kUnavailable,
                    fmt::format("the waiting queue is full ({} requests, --max-queue-len {}); "
                                "retry later",
                                waiting, options_.max_queue_len));
    // Replicas do not see each other's ids, so a duplicate is caught here.
    if (routes_.count(id)) return InvalidArgument("request id '{}' is already in use", id);
    for (size_t k = 0; k < replicas_.size(); ++k) {
      Replica* r = replicas_[(next_replica_ + k) % replicas_.size()].get();
      if (target == nullptr || r->num_active < target->num_active) target = r;
    }
    next_replica_ = (next_replica_ + 1) % replicas_.size();
    target->commands.push_back(
        Command{Command::kAdd, id, std::move(request), stream, Clock::now(), script});
    ++target->pending_adds;
    ++target->num_active;
    ++num_active_;
    routes_[id] = target;
  }
  target->cv.notify_one();
  return stream;
}

void AsyncEngine::Cancel(const std::string& id) {
  Replica* r = nullptr;
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = routes_.find(id);
    if (stop_ || it == routes_.end()) return;
    r = it->second;
    r->commands.push_back(Command{Command::kCancel, id, {}, nullptr, Clock::now(), nullptr});
  }
  r->cv.notify_one();
}

struct AsyncEngine::CallState {
  EngineCall fn;
  std::function<void(Status)> done;
  std::mutex mu;
  int left = 0;
  Status first_error;
};

void AsyncEngine::FinishCall(CallState& call, Status s) {
  bool last;
  Status result;
  {
    std::lock_guard<std::mutex> l(call.mu);
    if (!s.ok() && call.first_error.ok()) call.first_error = s;
    last = --call.left == 0;
    result = call.first_error;
  }
  if (last) call.done(result);
}

void AsyncEngine::RunOnEngines(EngineCall fn, std::function<void(Status)> done) {
  auto call = std::make_shared<CallState>();
  call->fn = std::move(fn);
  call->done = std::move(done);
  call->left = static_cast<int>(replicas_.size());
  {
    std::lock_guard<std::mutex> l(mu_);
    if (!stop_ && accepting_) {
      for (auto& r : replicas_)
        r->commands.push_back(
            Command{Command::kCall, "", {}, nullptr, Clock::now(), nullptr, call});
      call = nullptr;
    }
  }
  if (call != nullptr) {
    call->done(Status(StatusCode::kUnavailable, "the server is shutting down"));
    return;
  }
  for (auto& r : replicas_) r->cv.notify_one();
}

AsyncEngineStats AsyncEngine::Stats() const {
  std::lock_guard<std::mutex> l(mu_);
  AsyncEngineStats s;
  EngineStats& sum = s.engine;
  double used_blocks = 0;
  std::set<std::string> running_loras, waiting_loras;
  for (const auto& r : replicas_) {
    const EngineStats& e = r->stats;
    s.replicas.push_back(e);
    sum.num_running += e.num_running;
    sum.num_waiting += e.num_waiting;
    sum.num_blocks += e.num_blocks;
    sum.num_free_blocks += e.num_free_blocks;
    used_blocks += e.kv_cache_usage * e.num_blocks;
    sum.num_preemptions += e.num_preemptions;
    sum.prefix_cache_queries += e.prefix_cache_queries;
    sum.prefix_cache_hits += e.prefix_cache_hits;
    sum.prompt_tokens += e.prompt_tokens;
    sum.generation_tokens += e.generation_tokens;
    sum.computed_tokens += e.computed_tokens;
    sum.num_requests_finished += e.num_requests_finished;
    sum.spec_num_drafts += e.spec_num_drafts;
    sum.spec_num_draft_tokens += e.spec_num_draft_tokens;
    sum.spec_num_accepted_tokens += e.spec_num_accepted_tokens;
    sum.spec_accepted_per_position.resize(
        std::max(sum.spec_accepted_per_position.size(), e.spec_accepted_per_position.size()));
    for (size_t p = 0; p < e.spec_accepted_per_position.size(); ++p)
      sum.spec_accepted_per_position[p] += e.spec_accepted_per_position[p];
    running_loras.insert(e.running_lora_adapters.begin(), e.running_lora_adapters.end());
    waiting_loras.insert(e.waiting_lora_adapters.begin(), e.waiting_lora_adapters.end());
    s.num_submitted_pending += r->pending_adds;
  }
  sum.kv_cache_usage = sum.num_blocks > 0 ? used_blocks / sum.num_blocks : 0;
  sum.running_lora_adapters.assign(running_loras.begin(), running_loras.end());
  sum.waiting_lora_adapters.assign(waiting_loras.begin(), waiting_loras.end());
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
  for (auto& r : replicas_) r->cv.notify_one();
  for (auto& r : replicas_)
    if (r->thread.joinable()) r->thread.join();
  return drained;
}

void AsyncEngine::EndLocked(Replica& r, const std::string& id) {
  routes_.erase(id);
  --r.num_active;
  if (--num_active_ == 0) idle_cv_.notify_all();
}

void AsyncEngine::Apply(Replica& r, Command& cmd) {
  if (cmd.kind == Command::kCancel) {
    if (r.active.count(cmd.id)) (void)r.engine->Abort(cmd.id);
    return;
  }
  if (cmd.kind == Command::kCall) {
    FinishCall(*cmd.call, cmd.call->fn(*r.engine));
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
  Status s = r.engine->AddRequest(cmd.id, std::move(cmd.request));
  if (!s.ok()) {
    if (cmd.stream->Fail(s) && cmd.stream->notify_) cmd.stream->notify_();
    std::lock_guard<std::mutex> l(mu_);
    EndLocked(r, cmd.id);
    return;
  }
  r.active[cmd.id] = std::move(a);
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

void AsyncEngine::Drop(Replica& r, const std::string& id, Status why) {
  auto it = r.active.find(id);
  if (it == r.active.end()) return;
  (void)r.engine->Abort(id);
  if (it->second->stream->Fail(std::move(why)) && it->second->stream->notify_)
    it->second->stream->notify_();
  r.active.erase(it);
  EngineStats st = r.engine->stats();  // without the aborted request
  std::lock_guard<std::mutex> l(mu_);
  r.stats = st;
  ++metrics_.num_dropped_slow_consumers;
  ++metrics_.request_success["abort"];
  EndLocked(r, id);
}

void AsyncEngine::Dispatch(Replica& r, std::vector<RequestOutput>& outputs,
                           Clock::time_point step_start) {
  const auto now = Clock::now();
  std::vector<std::string> overflowed;
  std::vector<std::shared_ptr<RequestStream>> to_notify;
  std::unique_lock<std::mutex> l(mu_);  // metrics; streams have their own locks
  for (RequestOutput& out : outputs) {
    auto it = r.active.find(out.request_id);
    if (it == r.active.end()) continue;  // dropped earlier
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
      const std::string id = it->first;
      r.active.erase(it);
      EndLocked(r, id);
    }
  }
  l.unlock();
  for (const auto& s : to_notify)
    if (s->notify_) s->notify_();
  for (const std::string& id : overflowed) {
    XI_LOG_WARN("request {}: client too slow ({} outputs unread); dropped", id,
                options_.max_buffered_outputs);
    Drop(r, id,
         ResourceExhausted("the client reads too slowly ({} outputs unread); request dropped",
                           options_.max_buffered_outputs));
  }
}

void AsyncEngine::Loop(Replica& r) {
  LLMEngine& engine = *r.engine;
  for (;;) {
    std::deque<Command> cmds;
    bool stop = false;
    {
      std::unique_lock<std::mutex> l(mu_);
      const bool busy = engine.HasUnfinishedRequests();
      if (!busy) r.cv.wait(l, [&] { return !r.commands.empty() || stop_; });
      cmds.swap(r.commands);
      stop = stop_;
    }
    // Taken adds leave pending_adds only together with the stats that count them as waiting,
    // so the queue cap never sees them in neither place.
    int taken = 0;
    for (const Command& c : cmds) taken += c.kind == Command::kAdd;
    if (stop) {
      // Shutdown's timeout passed: abort whatever is left and end every stream.
      for (Command& c : cmds) {
        if (c.kind == Command::kCall)
          FinishCall(*c.call, Status(StatusCode::kUnavailable, "the server is shutting down"));
        if (c.kind == Command::kAdd &&
            c.stream->Fail(Status(StatusCode::kUnavailable, "the server is shutting down")))
          if (c.stream->notify_) c.stream->notify_();
      }
      std::vector<std::string> ids;
      for (const auto& [id, a] : r.active) ids.push_back(id);
      for (const std::string& id : ids) (void)engine.Abort(id);
      while (engine.HasUnfinishedRequests()) {
        auto outs = engine.Step();
        if (!outs.ok()) break;
        Dispatch(r, *outs, Clock::now());
      }
      for (const std::string& id : ids) {
        auto it = r.active.find(id);
        if (it != r.active.end() &&
            it->second->stream->Fail(Status(StatusCode::kCancelled, "the server shut down")))
          if (it->second->stream->notify_) it->second->stream->notify_();
      }
      r.active.clear();
      std::lock_guard<std::mutex> l(mu_);
      std::erase_if(routes_, [&](const auto& route) { return route.second == &r; });
      num_active_ -= r.num_active;
      r.num_active = 0;
      r.pending_adds = 0;
      r.stats = engine.stats();
      idle_cv_.notify_all();
      return;
    }
    for (Command& c : cmds) Apply(r, c);
    std::vector<RequestOutput> outputs;
    auto step_start = Clock::now();
    if (engine.HasUnfinishedRequests()) {
      auto outs = engine.Step();
      if (!outs.ok()) {
        // The engine aborted that step's requests; they are reported by the next Step().
        XI_LOG_ERROR("engine step failed: {}", outs.status().ToString());
      } else {
        outputs = std::move(*outs);
      }
    }
    {
      // The stats go out before the outputs: a client that reads its last token and then asks
      // for the metrics finds that token counted.
      EngineStats st = engine.stats();
      std::lock_guard<std::mutex> l(mu_);
      r.stats = st;
      r.pending_adds -= taken;
    }
    if (!outputs.empty()) Dispatch(r, outputs, step_start);
  }
}

}  // namespace xinfer
