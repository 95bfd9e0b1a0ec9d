// LLMEngine: the synchronous engine core. It owns the backend, model, tokenizer, scheduler and
// runner, and turns requests (prompt ids + sampling parameters) into streams of new tokens/text.
// Each Step() schedules, runs the model once, samples, detokenizes, checks stop conditions and
// returns what every affected request produced.
//
// Thread-safety: none; one thread drives it (the offline batch CLI directly, the server through
// AsyncEngine, which serializes everything onto its own engine thread).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "backend/backend.h"
#include "backend/communicator.h"
#include "engine/engine_config.h"
#include "model/causal_lm.h"
#include "runner/model_runner.h"
#include "sampling/sampler.h"
#include "sampling/stop_checker.h"
#include "sched/scheduler.h"
#include "tokenizer/tokenizer.h"

namespace xinfer {

struct EngineRequest {
  std::vector<int32_t> prompt_ids;
  SamplingParams params;    // validated by AddRequest; n > 1 runs n choices
  int priority = 0;         // lower runs first under the priority policy
  std::string lora_name{};  // a loaded LoRA adapter's name (LLMEngine::lora_adapters); "": none
};

// A LoRA adapter the engine serves (EngineConfig::lora_modules, or added later).
struct LoraAdapterInfo {
  std::string name;
  std::string path;
  std::string base_model_name;  // empty: the served model's name
  int32_t id = 0;               // the scheduler's lora_id (also its prefix-cache namespace)
  int rank = 0;
};

struct TokenLogprobs {
  int32_t token = 0;
  float logprob = 0;
  std::vector<TokenLogprob> top;
  int32_t rank = 0;  // prompt logprobs: 1 + the tokens more likely than `token`; 0 elsewhere
};

// What one step produced for one choice of one request.
struct RequestOutput {
  std::string request_id;
  int index = 0;                        // choice index, 0 <= index < n
  std::vector<int32_t> token_ids;       // tokens generated this step
  std::string text;                     // text that became final this step
  std::vector<TokenLogprobs> logprobs;  // one per new token when params.logprobs >= 0
  // params.prompt_logprobs >= 0, in a choice's first output: prompt tokens 1, 2, ... (the first
  // has no logprob: nothing precedes it).
  std::vector<TokenLogprobs> prompt_logprobs;
  // A pooling model's (EngineConfig::embeds): the request's embedding, in its one output.
  std::vector<float> embedding;
  // A scoring model's (EngineConfig::scores): the prompt's score in [0, 1], in its one output
  // (a model with its own head of several labels has none: see probs).
  std::optional<float> score;
  // A scoring model with its own head (ModelConfig::has_score_head): each label's probability
  // (softmax over its labels; one label's sigmoid), in its one output.
  std::vector<float> probs;
  bool finished = false;
  std::string finish_reason;  // when finished: "stop", "length" or "abort"
  std::string stop_reason;    // the matched stop string or stop token id, if any
  int prompt_tokens = 0;
  int completion_tokens = 0;  // total so far
  int cached_tokens = 0;      // prompt tokens served by the prefix cache (when finished)
};

// An embedding scaled to unit length, as torch.nn.functional.normalize (a zero vector stays
// zero): the pooler's normalize, and the server's again after a matryoshka cut.
void NormalizeL2(std::span<float> v);

struct EngineStats {
  int num_running = 0;
  int num_waiting = 0;
  int num_blocks = 0;
  int num_free_blocks = 0;
  double kv_cache_usage = 0;
  int64_t num_preemptions = 0;
  int64_t prefix_cache_queries = 0;  // tokens
  int64_t prefix_cache_hits = 0;     // tokens
  int64_t prompt_tokens = 0;         // of admitted requests
  int64_t generation_tokens = 0;     // sampled
  int64_t computed_tokens = 0;       // run through the model (prompt chunks, recompute, decode)
  int64_t num_requests_finished = 0;
  // Speculative decoding (EngineConfig::speculative_config), as vLLM's spec_decode metrics:
  // sequences run with drafts, their draft tokens, the drafts kept, and the drafts kept at each
  // draft position (num_speculative_tokens entries; empty when off).
  int64_t spec_num_drafts = 0;
  int64_t spec_num_draft_tokens = 0;
  int64_t spec_num_accepted_tokens = 0;
  std::vector<int64_t> spec_accepted_per_position;
  // The LoRA adapters (their names) some running / waiting request uses (vLLM's
  // vllm:lora_requests_info), sorted.
  std::vector<std::string> running_lora_adapters, waiting_lora_adapters;
};

class LLMEngine {
 public:
  // The engine of data-parallel replica `data_parallel_rank` (0 <= rank < data_parallel_size):
  // its share of the threads, CPUs and memory (EngineConfig::data_parallel_size).
  static StatusOr<std::unique_ptr<LLMEngine>> Create(const EngineConfig& config,
                                                     int data_parallel_rank = 0);
  ~LLMEngine();

  // Queues a request under `id` (unique among unfinished requests). Errors (nothing queued):
  // InvalidArgument for bad parameters or prompt ids, OutOfRange when prompt + max_tokens exceeds
  // max_model_len or the whole KV cache.
  Status AddRequest(const std::string& id, EngineRequest request);
  // Cancels a request in any state; its blocks are free at once and the next Step() reports it
  // finished with reason "abort". NotFound for unknown ids.
  Status Abort(const std::string& id);
  // Runs one engine step. An error means the model failed; the requests in that step are aborted.
  StatusOr<std::vector<RequestOutput>> Step();
  bool HasUnfinishedRequests() const;

  EngineStats stats() const;
  // Binds the calling thread to this replica's first CPU when its placement binds it (a
  // data-parallel replica of one rank, whose caller runs the ops as its pool's thread 0); a no-op
  // otherwise. Call it from the thread that will call Step().
  void BindSteppingThread() {
    if (bind_stepping_thread_) backend_->BindCallerThread();
  }
  int data_parallel_rank() const { return data_parallel_rank_; }
  const EngineConfig& config() const { return config_; }  // resolved (defaults filled in)
  const ModelConfig& model_config() const { return model_->config(); }
  // The bytes of weights the model holds (all tensor-parallel ranks together).
  size_t weight_bytes() const { return model_->weight_bytes(); }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  const std::vector<int32_t>& eos_token_ids() const { return eos_token_ids_; }
  // SamplingParams defaults from the model's generation_config.json.
  const SamplingParams& default_sampling_params() const { return default_params_; }
  // The LoRA adapters requests may name (EngineRequest::lora_name), in the order loaded.
  const std::vector<LoraAdapterInfo>& lora_adapters() const { return lora_adapters_; }
  // Loads an adapter (model/lora.h) under module.name, which must be new (EngineConfig::
  // enable_lora); errors name the adapter and change nothing.
  Status AddLoraAdapter(const LoraModule& module);
  // Unloads the adapter `name` (NotFound when none): new requests can no longer name it; those
  // already queued or running finish with it, and its weights go once the last has.
  Status RemoveLoraAdapter(const std::string& name);

 private:
  struct Choice;
  LLMEngine() = default;
  void FinishChoice(Choice& c, RequestOutput& out, const std::string& reason);
  // One sequence's tokens drawn in a step: one, or under speculative decoding each kept draft and
  // the token drawn after them (Step); `status` is a failed draw's, which ends the choice.
  struct Draws {
    Status status;
    std::vector<SampleResult> tokens;
  };
  // A sequence ran num_drafts draft tokens and kept the first num_accepted (EngineStats).
  void CountDrafts(size_t num_drafts, size_t num_accepted);
  // Prompt logprobs: the step's prompt positions' logits rows, added to their choices.
  void CollectPromptLogprobs(const SchedulerOutput& sched);
  // A choice the scheduler finished: counted, and dropped with its request once the last goes.
  using ChoiceMap = std::unordered_map<std::string, std::unique_ptr<Choice>>;
  void ForgetFinished(ChoiceMap::iterator choice);
  // A pooling model's step after the run: each finished prompt's embedding (Step's tail).
  std::vector<RequestOutput> Pool(const SchedulerOutput& sched, std::vector<RequestOutput> outputs);
  // score_head_ on one prompt's last hidden state: out.probs (and out.score for one label).
  void ApplyScoreHead(std::span<const float> hidden, RequestOutput& out) const;

  EngineConfig config_;
  int data_parallel_rank_ = 0;
  bool bind_stepping_thread_ = false;
  std::unique_ptr<Backend> backend_;
  // --tensor-parallel-size > 1: one backend per rank and the communicator the ranks add their
  // partial sums through; declared before model_, which uses them until it is destroyed.
  std::vector<std::unique_ptr<Backend>> rank_backends_;
  std::unique_ptr<Communicator> communicator_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::unique_ptr<CausalLM> model_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<ModelRunner> runner_;
  std::vector<int32_t> eos_token_ids_;
  SamplingParams default_params_;
  std::mt19937_64 seed_source_;
  // Each token's bytes, for guided decoding: built on the first request that asks for it.
  std::shared_ptr<const TokenVocabulary> token_vocabulary_;
  // Scheduler request id ("<id>" or "<id>/<index>") → choice state.
  ChoiceMap choices_;
  bool pooler_normalizes_ = true;  // EngineConfig::PoolerNormalizes, read once
  // A scoring model's classifier tokens (ModelConfig::classifier_from_token): false, then true.
  std::array<int32_t, 2> classifier_ids_{};
  // A scoring model's own head (ModelConfig::has_score_head): F32 [num_labels, hidden] on the
  // host, applied to each prompt's last hidden state; empty otherwise.
  Tensor score_head_;
  // User id → its scheduler ids.
  std::unordered_map<std::string, std::vector<std::string>> requests_;
  std::vector<RequestOutput> pending_;  // aborted outputs to report at the next Step()
  int64_t prompt_tokens_ = 0;
  int64_t generation_tokens_ = 0;
  int64_t finished_ = 0;
  int64_t spec_num_drafts_ = 0, spec_num_draft_tokens_ = 0, spec_num_accepted_tokens_ = 0;
  std::vector<int64_t> spec_accepted_per_position_;
  std::vector<LoraAdapterInfo> lora_adapters_;
  int32_t next_lora_id_ = 1;
  // Removed adapters some request may still run with; dropped from the runner once none does.
  std::vector<int32_t> retired_lora_ids_;
  void DropRetiredLoraAdapters();
};

}  // namespace xinfer
