// AsyncEngine: the LLMEngine (one per data-parallel replica) behind a thread-safe front, for the
// HTTP server.
//
// Each replica has an engine thread that owns its LLMEngine and runs the step loop; nothing else
// touches it. Other threads talk to it through a command queue (Submit, Cancel) drained between
// steps, so a Cancel frees the request's KV blocks before the next Step() runs. Submit sends a
// request to the replica with the fewest unfinished requests (ties: the next in turn), where it
// stays until it finishes. The engine threads never block on a consumer: each request's outputs
// go to its own bounded RequestStream buffer, and a consumer that lets that buffer fill up is
// dropped (its request aborted, the stream failed with ResourceExhausted).
//
// Ownership: AsyncEngine owns the LLMEngines. RequestStreams are shared between an engine thread
// and the consumer (shared_ptr); a stream stays valid after its request finished or the engine
// shut down.
// Thread-safety: every public method of AsyncEngine and RequestStream is thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "engine/llm_engine.h"

namespace xinfer {

struct AsyncEngineOptions {
  // Submit fails with Unavailable ("retry later") once this many requests wait for admission
  // (engine waiting queue + submitted but not yet handed to the engine). 0: no cap.
  int max_queue_len = 0;
  // Outputs a consumer may leave undrained, per request, before it is dropped as too slow.
  size_t max_buffered_outputs = 4096;
  // Test-only (hidden `--debug-scripted-output FILE`): a JSON list of {"trigger": text,
  // "output": text}. A request whose decoded prompt contains a trigger emits exactly the tokens
  // of that output (then finishes with "stop") instead of what the model samples, so tests can
  // drive the tool-call and reasoning parsers through the real serving path. Empty: off.
  std::string scripted_output_file;
};

// A Prometheus-style histogram: counts[i] observations <= bounds[i]; counts.back() is +Inf.
struct Histogram {
  std::vector<double> bounds;
  std::vector<uint64_t> counts;  // bounds.size() + 1, not cumulative
  double sum = 0;
  uint64_t count = 0;

  explicit Histogram(std::vector<double> b = {})
      : bounds(std::move(b)), counts(bounds.size() + 1, 0) {}
  void Observe(double value);
};

// Per-request latency metrics, named after vLLM's.
struct ServingMetrics {
  Histogram time_to_first_token;  // arrival → first token, seconds
  Histogram inter_token_latency;  // between successive tokens of one sequence
  Histogram e2e_request_latency;  // arrival → last choice finished
  // Arrival → start of the engine step that produced the first token: the time spent waiting
  // for admission (plus prefill steps of long chunked prompts, which the engine does not report
  // separately).
  Histogram request_queue_time;
  std::map<std::string, int64_t> request_success;  // finish reason → finished sequences
  int64_t num_dropped_slow_consumers = 0;
  ServingMetrics();
};

struct AsyncEngineStats {
  EngineStats engine;                 // the replicas' sums (kv_cache_usage: over all their blocks)
  std::vector<EngineStats> replicas;  // each as of the end of its last engine step
  int num_submitted_pending = 0;      // submitted, not yet handed to the engine
  int num_active_requests = 0;        // submitted and not finished
  ServingMetrics metrics;
};

// The consumer side of one request: outputs in engine order, then the end.
class RequestStream {
 public:
  struct Batch {
    std::vector<RequestOutput> outputs;
    bool done = false;  // nothing more will come (all choices finished, or error)
    Status error;       // non-OK when the request failed or was dropped
  };

  RequestStream(std::string id, int n) : id_(std::move(id)), n_(n) {}
  const std::string& id() const { return id_; }
  // Takes everything buffered so far and re-arms the notification.
  Batch Drain();

 private:
  friend class AsyncEngine;
  // Engine thread side; return true when the consumer must be notified (call outside the lock).
  bool Push(RequestOutput out, size_t max_buffered, bool* overflow);
  bool Fail(Status status);

  const std::string id_;
  const int n_;
  std::function<void()> notify_;
  std::mutex mu_;
  std::vector<RequestOutput> buffer_;
  int finished_choices_ = 0;
  bool done_ = false;
  bool delivered_done_ = false;
  bool armed_ = true;  // the consumer is waiting for a notification
  Status error_;
};

class AsyncEngine {
 public:
  // Loads the script (if any) and starts one engine thread per replica. `replicas`: the
  // engines of data-parallel ranks 0, 1, ... of one configuration (LLMEngine::Create's
  // data_parallel_rank), or one engine.
  static StatusOr<std::unique_ptr<AsyncEngine>> Create(
      std::vector<std::unique_ptr<LLMEngine>> replicas, const AsyncEngineOptions& options);
  static StatusOr<std::unique_ptr<AsyncEngine>> Create(std::unique_ptr<LLMEngine> engine,
                                                       const AsyncEngineOptions& options);
  ~AsyncEngine();  // Shutdown(0) if not done yet
  AsyncEngine(const AsyncEngine&) = delete;
  AsyncEngine& operator=(const AsyncEngine&) = delete;

  // Queues a request under `id` (must be unique among active requests). `notify` is called on
  // the engine thread whenever the stream gets something new after the consumer's last Drain();
  // it must be cheap and must not block (e.g. post to an event loop). Errors: Unavailable when
  // the waiting queue is over max_queue_len or the engine is shutting down; parameter errors
  // from the engine arrive on the stream.
  StatusOr<std::shared_ptr<RequestStream>> Submit(const std::string& id, EngineRequest request,
                                                  std::function<void()> notify);
  // Aborts a request (no-op for unknown or finished ids). Its blocks are freed before the next
  // engine step; its stream ends with finish_reason "abort".
  void Cancel(const std::string& id);

  AsyncEngineStats Stats() const;

  // Runs fn on every replica's engine (on its engine thread, between steps), e.g. to load a LoRA
  // adapter; `done` gets the first error (or OK) once all have run, on the last engine thread
  // to finish (Unavailable when shutting down). It must be cheap and must not block.
  using EngineCall = std::function<Status(LLMEngine&)>;
  void RunOnEngines(EngineCall fn, std::function<void(Status)> done);

  // Stops accepting requests, lets active ones finish for up to `timeout`, aborts the rest and
  // stops the engine thread. Returns true when everything finished in time. Idempotent.
  bool Shutdown(std::chrono::milliseconds timeout);
  bool accepting() const;

  // Immutable after Create; safe from any thread (replica 0's, which all replicas share but for
  // their own KV caches).
  const EngineConfig& config() const { return config_; }
  const ModelConfig& model_config() const { return model_config_; }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  const SamplingParams& default_sampling_params() const { return default_params_; }
  int num_replicas() const { return static_cast<int>(replicas_.size()); }

 private:
  using Clock = std::chrono::steady_clock;
  struct Script {
    std::string trigger;
    std::vector<int32_t> ids;
  };
  struct Active;     // engine-thread state of one request
  struct Replica;    // one LLMEngine, its thread and its queue
  struct CallState;  // one RunOnEngines call across the replicas
  struct Command {
    enum Kind { kAdd, kCancel, kCall } kind;
    std::string id;
    EngineRequest request;
    std::shared_ptr<RequestStream> stream;
    Clock::time_point arrival;
    const Script* script = nullptr;
    std::shared_ptr<CallState> call = nullptr;  // kCall
  };
  static void FinishCall(CallState& call, Status s);

  AsyncEngine(std::vector<std::unique_ptr<Replica>> replicas, const AsyncEngineOptions& options);
  void Loop(Replica& r);
  void Apply(Replica& r, Command& cmd);
  void Dispatch(Replica& r, std::vector<RequestOutput>& outputs, Clock::time_point step_start);
  void ApplyScript(Active& a, RequestOutput& out);
  void Drop(Replica& r, const std::string& id, Status why);
  // A request routed to `r` has ended (finished, failed or dropped). Caller holds mu_.
  void EndLocked(Replica& r, const std::string& id);
  const Script* MatchScript(const std::vector<int32_t>& prompt) const;

  std::vector<std::unique_ptr<Replica>> replicas_;
  const Tokenizer* tokenizer_;
  EngineConfig config_;
  ModelConfig model_config_;
  SamplingParams default_params_;
  AsyncEngineOptions options_;
  std::vector<Script> scripts_;

  mutable std::mutex mu_;            // guards everything below and the replicas' queues
  std::condition_variable idle_cv_;  // signalled when active requests reach 0
  std::unordered_map<std::string, Replica*> routes_;  // active request id → its replica
  size_t next_replica_ = 0;                           // where ties go next
  int num_active_ = 0;
  bool accepting_ = true;
  bool stop_ = false;
  ServingMetrics metrics_;

  std::mutex shutdown_mu_;  // serializes Shutdown()
};

}  // namespace xinfer
