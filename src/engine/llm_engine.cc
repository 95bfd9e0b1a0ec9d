#include "engine/llm_engine.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>
#include <set>

#include "base/cpu_topology.h"
#include "base/logging.h"
#include "base/thread_pool.h"
#include "engine/gguf_tokenizer_loader.h"
#include "engine/kv_cache_sizing.h"
#include "engine/speculative_config.h"
#include "sampling/logits_processors.h"
#include "sampling/logprobs.h"

namespace xinfer {

struct LLMEngine::Choice {
  std::string request_id;
  int index = 0;
  std::vector<int32_t> prompt_ids;
  std::vector<int32_t> output_ids;
  SamplingParams params;
  Sampler sampler;
  StopChecker stop;
  IncrementalDecoder decoder;
  // Prompt logprobs computed so far (prompt tokens 1..), until the first output takes them; the
  // count stays, so that a recomputed prompt (after preemption) does not add them again.
  std::vector<TokenLogprobs> prompt_logprobs;
  int num_prompt_logprobs = 0;
  bool prompt_logprobs_sent = false;
  Choice(const std::string& id, int idx, std::vector<int32_t> prompt, const SamplingParams& p,
         const std::vector<int32_t>& eos, uint64_t seed, const Tokenizer& tok,
         std::shared_ptr<const TokenVocabulary> vocabulary)
      : request_id(id),
        index(idx),
        prompt_ids(std::move(prompt)),
        params(p),
        sampler(p, eos, seed, std::move(vocabulary)),
        stop(p, eos),
        decoder(tok, p.skip_special_tokens) {}
};

namespace {

// --quantization, when given, must name what the model holds (vLLM refuses a mismatch too).
Status CheckQuantization(const EngineConfig& c, const ModelConfig& mc) {
  if (c.quantization.empty()) return Status::Ok();
  const std::string held = IsGgufModelPath(c.model) ? "gguf" : mc.quantization.method;
  if (c.quantization == held) return Status::Ok();
  return InvalidArgument("--quantization {} was given but the model {} is {}", c.quantization,
                         c.model, held.empty() ? "not quantized" : "quantized with " + held);
}

// Requests' sampling defaults, as vLLM's --generation-config / --override-generation-config give
// them: the model's generation_config.json ("auto"), none ("vllm"), or another folder's; then the
// overrides. Refused at startup when they are out of range.
StatusOr<SamplingParams> SamplingDefaults(const EngineConfig& c, int vocab_size) {
  GenerationConfig gen;
  if (c.generation_config == "auto") {
    XI_ASSIGN_OR_RETURN(gen, LoadGenerationConfig(c.model));
  } else if (c.generation_config != "vllm") {
    if (!std::filesystem::exists(c.generation_config + "/generation_config.json"))
      return NotFound(
          "generation_config {}: not auto, vllm or a folder with a "
          "generation_config.json",
          c.generation_config);
    XI_ASSIGN_OR_RETURN(gen, LoadGenerationConfig(c.generation_config));
  }
  if (!c.override_generation_config.empty())
    XI_RETURN_IF_ERROR(OverrideGenerationConfig(c.override_generation_config, gen));
  SamplingParams d;
  if (gen.temperature) d.temperature = *gen.temperature;
  if (gen.top_p) d.top_p = *gen.top_p;
  if (gen.top_k) d.top_k = *gen.top_k;
  if (gen.min_p) d.min_p = *gen.min_p;
  if (gen.repetition_penalty) d.repetition_penalty = *gen.repetition_penalty;
  if (Status s = d.Validate(vocab_size); !s.ok())
    return s.WithContext("the sampling defaults of generation_config " + c.generation_config +
                         (c.override_generation_config.empty() ? "" : " with the overrides"));
  if (gen.temperature || gen.top_p || gen.top_k || gen.min_p || gen.repetition_penalty)
    XI_LOG_INFO(
        "sampling defaults from generation_config {}{}: temperature={} top_p={} top_k={} "
        "min_p={} repetition_penalty={} (--generation-config vllm for none)",
        c.generation_config, c.override_generation_config.empty() ? "" : " and its overrides",
        d.temperature, d.top_p, d.top_k, d.min_p, d.repetition_penalty);
  return d;
}

// Where the ranks of data-parallel replica `data_parallel_rank` run and with how many threads.
struct ReplicaPlacement {
  std::vector<RankPlacement> ranks;  // tensor_parallel_size of them
  std::vector<int> threads;          // per rank
};

StatusOr<ReplicaPlacement> PlaceReplica(const EngineConfig& c, int data_parallel_rank) {
  const int tp = c.tensor_parallel_size;
  const int dp = c.data_parallel_size;
  // Every rank of every replica gets its place; this replica's ranks are tp of them.
  XI_ASSIGN_OR_RETURN(
      std::vector<RankPlacement> all,
      PlanRankPlacement(c.cpu_threads_bind, tp * dp, AllowedCpus(), NumaNodeCpus()));
  if (dp > 1 && data_parallel_rank == 0) {
    std::set<int> nodes;
    for (int d = 0; d < dp; ++d) nodes.insert(all[d * tp].numa_node);
    if (static_cast<int>(nodes.size()) < dp || nodes.count(-1))
      XI_LOG_WARN(
          "the {} data-parallel replicas do not each have a NUMA node of their own: they share "
          "its memory bandwidth, and every replica reads its own copy of the weights each step "
          "(measured on one node: 0.65-0.73x the tokens/s of one engine on the same cores; see "
          "docs/performance.md)",
          dp);
  }
  ReplicaPlacement p;
  p.ranks.assign(all.begin() + data_parallel_rank * tp,
                 all.begin() + (data_parallel_rank + 1) * tp);
  // Threads per rank: an equal share of --threads, else one per CPU of the rank's place; never
  // more than a bound rank has CPUs (two threads on one CPU would each wait for the other).
  const int share = c.threads / (tp * dp);
  for (const RankPlacement& rank : p.ranks) {
    const int cpus = static_cast<int>(rank.cpus.size());
    p.threads.push_back(c.threads > 0 ? (cpus > 0 ? std::min(share, cpus) : share)
                        : cpus > 0    ? cpus
                                      : AvailableCpuCount() / (tp * dp));
  }
  const bool bound = dp > 1 || tp > 1 || c.cpu_threads_bind != "auto";
  if (bound && c.threads > 0 && share > p.threads[0] && !p.ranks[0].cpus.empty())
    XI_LOG_WARN(
        "--threads {} gives each of the {} ranks {} threads, more than the {} CPUs it is bound to "
        "({}); each rank runs one thread per CPU",
        c.threads, tp * dp, share, p.ranks[0].cpus.size(), FormatCpuList(p.ranks[0].cpus));
  if (p.threads[0] < 1)
    return InvalidArgument(
        "{} needs at least one thread per rank, but this process may use {} CPUs", c.RanksName(),
        AvailableCpuCount());
  return p;
}

// vLLM's SamplingParams.update_from_tokenizer: each bad word as written (leading whitespace
// dropped), and with one leading space where that is another word token of the same length (to
// ban it mid-text as well as at the start).
Status TokenizeBadWords(const Tokenizer& tokenizer, SamplingParams& params) {
  params.bad_words_token_ids.clear();
  for (const std::string& word : params.bad_words) {
    const size_t start = word.find_first_not_of(" \t\r\n");
    if (start == std::string::npos) return InvalidArgument("bad_words entries must not be blank");
    const std::string bare = word.substr(start);
    XI_ASSIGN_OR_RETURN(std::vector<int32_t> ids, tokenizer.Encode(bare, false));
    XI_ASSIGN_OR_RETURN(std::vector<int32_t> spaced, tokenizer.Encode(" " + bare, false));
    if (ids.empty()) return InvalidArgument("bad_words: '{}' has no tokens", word);
    const bool other_word = !spaced.empty() && spaced[0] != ids[0] && spaced.size() == ids.size();
    params.bad_words_token_ids.push_back(std::move(ids));
    if (other_word) params.bad_words_token_ids.push_back(std::move(spaced));
  }
  return Status::Ok();
}

// A sequence classification model scores (vLLM runs it as a pooling model whatever the task
// says but generate); its classifier tokens must each be one token of the vocabulary, or its own
// head is read into `head`.
Status ResolveScoring(EngineConfig& c, const ModelConfig& mc, const Tokenizer& tokenizer,
                      std::array<int32_t, 2>& ids, Tensor& head) {
  if (!mc.is_classifier()) {
    if (c.scores())
      return InvalidArgument(
          "task 'score' needs a sequence classification model ({} is not; a reranker kept as a "
          "causal LM runs with --hf-overrides naming its architectures and "
          "classifier_from_token)",
          mc.architecture);
    return Status::Ok();
  }
  if (c.task == "generate")
    return InvalidArgument("{} scores text pairs: task 'generate' is not available for it",
                           mc.architecture);
  c.task = "score";
  if (mc.has_score_head()) {
    XI_ASSIGN_OR_RETURN(head, LoadScoreHead(c.model, mc));
    return Status::Ok();
  }
  for (size_t i = 0; i < 2; ++i) {
    const std::optional<int32_t> id = tokenizer.TokenToId(mc.classifier_from_token[i]);
    if (!id || *id < 0 || *id >= mc.vocab_size)
      return InvalidArgument("classifier_from_token '{}' is not a token of the vocabulary",
                             mc.classifier_from_token[i]);
    ids[i] = *id;
  }
  return Status::Ok();
}

}  // namespace

LLMEngine::~LLMEngine() = default;

StatusOr<std::unique_ptr<LLMEngine>> LLMEngine::Create(const EngineConfig& config,
                                                       int data_parallel_rank) {
  XI_RETURN_IF_ERROR(config.Validate());
  if (data_parallel_rank < 0 || data_parallel_rank >= config.data_parallel_size)
    return InvalidArgument("data_parallel_rank must be in [0, {}), got {}",
                           config.data_parallel_size, data_parallel_rank);
  auto engine = std::unique_ptr<LLMEngine>(new LLMEngine());
  EngineConfig& c = engine->config_;
  c = config;
  engine->data_parallel_rank_ = data_parallel_rank;
  engine->pooler_normalizes_ = c.PoolerNormalizes();
  const int tp = c.tensor_parallel_size;
  const int dp = c.data_parallel_size;
  XI_ASSIGN_OR_RETURN(const ReplicaPlacement place, PlaceReplica(c, data_parallel_rank));
  CpuBackendOptions backend_options{
      .num_threads = c.threads,
      .bf16_activations = c.bf16_activations(),
      .int8_activations = c.Int8ActivationsFor(IsGgufModelPath(c.model)),
      .mmap_weights = c.mmap_weights};
  if (dp > 1) {
    // A replica: its own share of the threads, and with one rank its own cores and node.
    int threads = 0;
    for (int t : place.threads) threads += t;
    backend_options.num_threads = threads;
    if (tp == 1) {
      backend_options.cpus = place.ranks[0].cpus;
      backend_options.numa_node = place.ranks[0].numa_node;
      engine->bind_stepping_thread_ = !place.ranks[0].cpus.empty();
    }
  } else if (tp == 1 && c.cpu_threads_bind != "auto") {
    backend_options.cpus = place.ranks[0].cpus;  // one rank: only an explicit list binds
    if (c.threads > 0) backend_options.num_threads = place.threads[0];
  }
  engine->backend_ = CreateCpuBackend(backend_options);
  const std::string& tokenizer_path = c.TokenizerPath();
  XI_ASSIGN_OR_RETURN(engine->tokenizer_, IsGgufModelPath(tokenizer_path)
                                              ? LoadGgufTokenizer(tokenizer_path)
                                              : Tokenizer::FromDir(tokenizer_path));
  const ModelLoadOptions load_options{.bf16_weights = c.bf16_activations(),
                                      .hf_overrides = c.ConfigOverrides()};
  if (tp == 1) {
    XI_ASSIGN_OR_RETURN(engine->model_, LoadCausalLM(c.model, *engine->backend_, load_options));
  } else {
    // Each rank on its own cores (and NUMA node); engine->backend_ samples between steps.
    std::vector<Backend*> ranks;
    for (int r = 0; r < tp; ++r) {
      CpuBackendOptions rank_options = backend_options;
      rank_options.cpus = place.ranks[r].cpus;
      rank_options.numa_node = place.ranks[r].numa_node;
      rank_options.num_threads = place.threads[r];
      engine->rank_backends_.push_back(CreateCpuBackend(rank_options));
      ranks.push_back(engine->rank_backends_.back().get());
    }
    engine->communicator_ = CreateHostCommunicator(tp);
    XI_ASSIGN_OR_RETURN(engine->model_,
                        LoadCausalLM(c.model, ranks, *engine->communicator_, load_options));
  }
  const ModelConfig& mc = engine->model_->config();
  XI_RETURN_IF_ERROR(CheckQuantization(c, mc));
  XI_RETURN_IF_ERROR(
      ResolveScoring(c, mc, *engine->tokenizer_, engine->classifier_ids_, engine->score_head_));
  // The model's extra EOS ids whatever --generation-config says (they end its turns).
  XI_ASSIGN_OR_RETURN(GenerationConfig gen, LoadGenerationConfig(c.model));
  XI_ASSIGN_OR_RETURN(engine->default_params_, SamplingDefaults(c, mc.vocab_size));

  XI_RETURN_IF_ERROR(c.ResolveModelLimits(DerivedMaxModelLen(mc)));
  XI_ASSIGN_OR_RETURN(
      const KvCacheSizing kv,
      SizeKvCache(c, static_cast<int64_t>(engine->model_->weight_bytes()),
                  static_cast<int64_t>(engine->model_->kv_bytes_per_token(c.KvCacheDType())),
                  PhysicalMemoryBytes()));
  const int32_t num_blocks = kv.num_blocks;

  SchedulerConfig sc;
  sc.max_num_seqs = c.max_num_seqs;
  sc.max_num_batched_tokens = c.max_num_batched_tokens;
  sc.max_model_len = c.max_model_len;
  sc.block_size = c.block_size;
  sc.num_blocks = num_blocks;
  sc.enable_chunked_prefill = c.enable_chunked_prefill;
  sc.enable_prefix_caching = c.enable_prefix_caching;
  sc.max_loras = c.enable_lora ? c.max_loras : 0;
  XI_ASSIGN_OR_RETURN(const SpeculativeConfig spec, ParseSpeculativeConfig(c.speculative_config));
  if (spec.enabled() && (c.embeds() || c.scores()))
    return InvalidArgument("--speculative-config is for text generation, not task {}", c.task);
  sc.num_speculative_tokens = spec.num_speculative_tokens;
  sc.prompt_lookup_min = spec.prompt_lookup_min;
  sc.prompt_lookup_max = spec.prompt_lookup_max;
  sc.speculative_disable_by_batch_size = spec.disable_by_batch_size;
  engine->spec_accepted_per_position_.assign(static_cast<size_t>(spec.num_speculative_tokens), 0);
  XI_ASSIGN_OR_RETURN(sc.policy, ParseSchedulingPolicy(c.scheduling_policy));
  XI_ASSIGN_OR_RETURN(engine->scheduler_, Scheduler::Create(sc));
  // Embeddings and a classifier's own head read the last hidden state; the rest, logits.
  engine->runner_ =
      std::make_unique<ModelRunner>(*engine->model_, *engine->backend_, num_blocks, c.block_size,
                                    c.KvCacheDType(), c.embeds() || !engine->score_head_.empty());
  for (const std::string& text : c.lora_modules) {
    XI_ASSIGN_OR_RETURN(LoraModule module, ParseLoraModule(text));
    XI_RETURN_IF_ERROR(engine->AddLoraAdapter(module));
  }

  std::set<int32_t> eos(mc.eos_token_ids.begin(), mc.eos_token_ids.end());
  eos.insert(gen.eos_token_ids.begin(), gen.eos_token_ids.end());
  if (auto e = engine->tokenizer_->eos_id()) eos.insert(*e);
  engine->eos_token_ids_.assign(eos.begin(), eos.end());
  // Replicas draw different per-request seeds from one --seed (else two replicas would sample
  // alike for alike requests).
  engine->seed_source_.seed(c.seed ? *c.seed + 0x9E3779B97F4A7C15ull * data_parallel_rank
                                   : std::random_device{}());

  const double kv_gib = static_cast<double>(num_blocks) * c.block_size *
                        engine->model_->kv_bytes_per_token(c.KvCacheDType()) / (1 << 30);
  XI_LOG_INFO("engine config: {}", c.ToString());
  XI_LOG_INFO("model {} ({}): {} parameters, {:.1f} MiB of weights", c.model, mc.architecture,
              engine->model_->num_parameters(), engine->model_->weight_bytes() / 1048576.0);
  if (dp > 1)
    XI_LOG_INFO("data parallel replica {} of {}: backend {}", data_parallel_rank, dp,
                engine->backend_->description());
  else
    XI_LOG_INFO("backend {}", engine->backend_->description());
  for (size_t r = 0; r < engine->rank_backends_.size(); ++r)
    XI_LOG_INFO("tensor parallel rank {}: {}", r, engine->rank_backends_[r]->description());
  XI_LOG_INFO("KV cache: {} blocks of {} tokens ({} tokens, {:.3f} GiB, {})", num_blocks,
              c.block_size, static_cast<int64_t>(num_blocks) * c.block_size, kv_gib,
              DTypeName(c.KvCacheDType()));
  XI_LOG_INFO("Maximum concurrency for {} tokens per request: {:.2f}x", c.max_model_len,
              static_cast<double>(num_blocks) * c.block_size / c.max_model_len);
  return engine;
}

Status LLMEngine::AddRequest(const std::string& id, EngineRequest request) {
  if (id.empty()) return InvalidArgument("request id must not be empty");
  if (requests_.count(id)) return InvalidArgument("request id '{}' is already in use", id);
  const int32_t vocab = model_->config().vocab_size;
  XI_RETURN_IF_ERROR(TokenizeBadWords(*tokenizer_, request.params));
  XI_RETURN_IF_ERROR(request.params.Validate(vocab, config_.MaxLogprobs(vocab)));
  if (request.prompt_ids.empty()) return InvalidArgument("prompt must not be empty");
  for (int32_t t : request.prompt_ids)
    if (t < 0 || t >= vocab)
      return InvalidArgument("prompt token id {} is outside the vocabulary [0, {})", t, vocab);
  if (request.params.guided != GuidedDecoding::kNone && token_vocabulary_ == nullptr) {
    // Built on the first guided request (the engine thread), then shared by all.
    std::vector<std::string> bytes(static_cast<size_t>(vocab));
    for (int32_t id = 0; id < vocab; ++id)
      bytes[static_cast<size_t>(id)] = tokenizer_->TokenBytes(id);
    token_vocabulary_ = std::make_shared<const TokenVocabulary>(std::move(bytes));
  }
  if (request.params.guided != GuidedDecoding::kNone &&
      !NewGuide(request.params, token_vocabulary_)->CanBegin())
    return InvalidArgument("{}: the model's vocabulary has no token that can begin the {}",
                           request.params.guided == GuidedDecoding::kRegex     ? "guided_regex"
                           : request.params.guided == GuidedDecoding::kGrammar ? "guided_grammar"
                                                                               : "response_format",
                           request.params.guided == GuidedDecoding::kJsonObject ||
                                   request.params.guided == GuidedDecoding::kJsonSchema
                               ? "JSON value"
                               : "match");
  int32_t lora_id = 0;
  if (!request.lora_name.empty()) {
    auto lora = std::find_if(lora_adapters_.begin(), lora_adapters_.end(),
                             [&](const LoraAdapterInfo& a) { return a.name == request.lora_name; });
    if (lora == lora_adapters_.end())
      return NotFound("LoRA adapter '{}' is not loaded", request.lora_name);
    lora_id = lora->id;
  }
  std::vector<std::string> ids;
  for (int i = 0; i < request.params.n; ++i) {
    std::string sid = request.params.n == 1 ? id : id + "/" + std::to_string(i);
    SamplingParams p = request.params.n == 1 ? request.params : request.params.ForChoice(i);
    NewRequest nr{sid,
                  request.prompt_ids,
                  p.max_tokens,
                  request.priority,
                  /*extra_key=*/static_cast<uint64_t>(lora_id),
                  /*prompt_logits=*/p.prompt_logprobs >= 0,
                  lora_id};
    Status s = scheduler_->AddRequest(std::move(nr));
    if (!s.ok()) {
      for (const auto& added : ids) {
        (void)scheduler_->Abort(added);
        choices_.erase(added);
      }
      return s;
    }
    choices_[sid] = std::make_unique<Choice>(id, i, request.prompt_ids, p, eos_token_ids_,
                                             seed_source_(), *tokenizer_, token_vocabulary_);
    ids.push_back(sid);
  }
  prompt_tokens_ += static_cast<int64_t>(request.prompt_ids.size()) * request.params.n;
  requests_[id] = std::move(ids);
  return Status::Ok();
}

Status LLMEngine::Abort(const std::string& id) {
  auto it = requests_.find(id);
  if (it == requests_.end()) return NotFound("no unfinished request '{}'", id);
  for (const auto& sid : it->second) {
    auto c = choices_.find(sid);
    if (c == choices_.end()) continue;  // that choice already finished
    (void)scheduler_->Abort(sid);
    RequestOutput out;
    FinishChoice(*c->second, out, "abort");
    pending_.push_back(std::move(out));
    choices_.erase(c);
  }
  requests_.erase(it);
  return Status::Ok();
}

void LLMEngine::FinishChoice(Choice& c, RequestOutput& out, const std::string& reason) {
  out.request_id = c.request_id;
  out.index = c.index;
  out.finished = true;
  out.finish_reason = reason;
  out.prompt_tokens = static_cast<int>(c.prompt_ids.size());
  out.completion_tokens = static_cast<int>(c.output_ids.size());
  ++finished_;
}

StatusOr<std::vector<RequestOutput>> LLMEngine::Step() {
  std::vector<RequestOutput> outputs = std::move(pending_);
  pending_.clear();
  if (!retired_lora_ids_.empty()) DropRetiredLoraAdapters();
  SchedulerOutput sched = scheduler_->Schedule();
  if (sched.empty()) return outputs;

  Status run = runner_->Execute(sched);
  if (!run.ok()) {
    // Nothing was computed: discard the step, then drop its requests so the engine stays
    // consistent and keeps serving everyone else.
    scheduler_->DiscardStep(sched);
    for (const ScheduledSequence& s : sched.scheduled) {
      auto c = choices_.find(s.request_id);
      if (c != choices_.end()) (void)Abort(c->second->request_id);
    }
    return run;
  }
  const size_t num_scheduled = sched.scheduled.size();
  if (config_.embeds() || config_.scores()) return Pool(sched, std::move(outputs));
  std::vector<SequenceResult> results(num_scheduled);
  const int64_t vocab = model_->config().vocab_size;
  // Every sampled sequence's next token, on the backend's host threads: each sequence has its own
  // Sampler and logits row, and a random draw over a 152K vocabulary costs ~0.1-1 ms, serial
  // across 16-64 sequences a large part of a decode step. The rest of the step stays in order.
  std::vector<Choice*> sampled(num_scheduled, nullptr);
  for (size_t i = 0; i < num_scheduled; ++i) {
    auto it = choices_.find(sched.scheduled[i].request_id);
    if (runner_->sampling_index()[i] >= 0 && it != choices_.end()) sampled[i] = it->second.get();
  }
  CollectPromptLogprobs(sched);
  // Speculative decoding: a sequence with draft tokens samples at its last real position, and
  // while the token drawn equals the draft there, at the draft's position too (its logits row
  // follows), each draw with the tokens kept before it as its output so far. Each token is thus
  // the one plain decoding would draw (the same logits, penalties, guide state and counter-based
  // random draw), so the drafts change the speed, never the text.
  std::vector<Draws> samples(num_scheduled);
  backend_->ParallelForHost(static_cast<int64_t>(num_scheduled), [&](int64_t i) {
    Choice* c = sampled[static_cast<size_t>(i)];
    if (c == nullptr) return;
    const std::vector<int32_t>& drafts = sched.scheduled[static_cast<size_t>(i)].spec_token_ids;
    Draws& d = samples[static_cast<size_t>(i)];
    const size_t num_output = c->output_ids.size();
    for (size_t j = 0; j <= drafts.size(); ++j) {
      std::span<float> logits(
          runner_->logits().data<float>() + (runner_->sampling_index()[i] + j) * vocab,
          static_cast<size_t>(vocab));
      StatusOr<SampleResult> sample = c->sampler.Sample(logits, c->prompt_ids, c->output_ids);
      if (!sample.ok()) {
        d.status = sample.status();
        break;
      }
      d.tokens.push_back(std::move(*sample));
      if (j == drafts.size() || d.tokens.back().token != drafts[j]) break;
      c->output_ids.push_back(drafts[j]);  // kept: the next draw follows it
    }
    c->output_ids.resize(num_output);  // the tokens are appended in order below
  });
  std::unordered_map<std::string, size_t> out_index;  // scheduler id → index in outputs
  for (size_t i = 0; i < num_scheduled; ++i) {
    const ScheduledSequence& s = sched.scheduled[i];
    if (sampled[i] == nullptr) continue;
    Choice& c = *sampled[i];
    RequestOutput out;
    out.request_id = c.request_id;
    out.index = c.index;
    out.prompt_tokens = static_cast<int>(c.prompt_ids.size());
    Draws& draws = samples[i];
    if (!draws.status.ok()) {
      // E.g. a model that produced only NaNs: end this choice, keep serving the others.
      XI_LOG_WARN("request {}: sampling failed: {}", c.request_id, draws.status.ToString());
      results[i].sampled_token = eos_token_ids_.empty() ? 0 : eos_token_ids_[0];
      results[i].stop = true;
      out.finished = true;
      out.finish_reason = "abort";
      out.completion_tokens = static_cast<int>(c.output_ids.size());
      out_index[s.request_id] = outputs.size();
      outputs.push_back(std::move(out));
      continue;
    }
    if (!s.spec_token_ids.empty()) CountDrafts(s.spec_token_ids.size(), draws.tokens.size() - 1);
    // The kept drafts and the token drawn after them, in order, until one ends the choice.
    StopChecker::Update u;
    size_t kept = 0;
    for (SampleResult& sample : draws.tokens) {
      const int32_t token = sample.token;
      c.output_ids.push_back(token);
      ++generation_tokens_;
      ++kept;
      u = c.stop.Append(token, c.decoder.Append(token));
      out.token_ids.push_back(token);
      out.text += u.text;
      if (c.params.logprobs >= 0)
        out.logprobs.push_back({token, sample.logprob, std::move(sample.top_logprobs)});
      if (u.finish != FinishReason::kNone) break;
    }
    results[i].sampled_token = out.token_ids.back();
    results[i].num_accepted_drafts = static_cast<int>(kept) - 1;
    results[i].stop = u.finish == FinishReason::kStop;
    if (c.params.prompt_logprobs >= 0 && !c.prompt_logprobs_sent) {
      out.prompt_logprobs = std::move(c.prompt_logprobs);
      c.prompt_logprobs_sent = true;
    }
    out.completion_tokens = static_cast<int>(c.output_ids.size());
    if (u.finish != FinishReason::kNone) {
      out.finished = true;
      out.finish_reason = ToString(u.finish);
      out.stop_reason = u.stop_reason;
      // The last token may end inside a UTF-8 character: the decoder's held bytes go out as
      // U+FFFD, as a full decode of the ids gives them (and as the logprobs' token strings show
      // them) — unless a stop string cut the text there.
      const bool cut_by_stop_string = u.finish == FinishReason::kStop && !u.stop_reason.empty() &&
                                      !u.matched_stop_token.has_value();
      if (!cut_by_stop_string) out.text += c.decoder.Flush();
    }
    out_index[s.request_id] = outputs.size();
    outputs.push_back(std::move(out));
  }
  for (const FinishedRequest& f : scheduler_->Update(sched, results)) {
    auto it = choices_.find(f.request_id);
    if (it == choices_.end()) continue;
    auto oi = out_index.find(f.request_id);
    if (oi != out_index.end()) {
      RequestOutput& out = outputs[oi->second];
      if (!out.finished) {  // the scheduler ended it (max_tokens reached its cap first)
        out.finished = true;
        out.finish_reason = f.status == RequestStatus::kFinishedLength ? "length" : "stop";
        out.text += it->second->decoder.Flush();
      }
      out.cached_tokens = std::max(f.num_cached_tokens, 0);
    }
    ForgetFinished(it);
  }
  return outputs;
}

void LLMEngine::CountDrafts(size_t num_drafts, size_t num_accepted) {
  ++spec_num_drafts_;
  spec_num_draft_tokens_ += static_cast<int64_t>(num_drafts);
  spec_num_accepted_tokens_ += static_cast<int64_t>(num_accepted);
  for (size_t j = 0; j < num_accepted && j < spec_accepted_per_position_.size(); ++j)
    ++spec_accepted_per_position_[j];
}

void LLMEngine::ForgetFinished(ChoiceMap::iterator choice) {
  ++finished_;
  const std::string id = choice->first, parent = choice->second->request_id;
  choices_.erase(choice);
  auto& siblings = requests_[parent];
  siblings.erase(std::remove(siblings.begin(), siblings.end(), id), siblings.end());
  if (siblings.empty()) requests_.erase(parent);
}

void NormalizeL2(std::span<float> v) {
  double sum = 0;
  for (float x : v) sum += static_cast<double>(x) * x;
  const double scale = 1.0 / std::max(std::sqrt(sum), 1e-12);
  for (float& x : v) x = static_cast<float>(x * scale);
}

void LLMEngine::ApplyScoreHead(std::span<const float> hidden, RequestOutput& out) const {
  // A few dot products of the hidden size per prompt: on the host, in double.
  const int64_t labels = score_head_.dim(0), width = score_head_.dim(1);
  XI_CHECK(static_cast<int64_t>(hidden.size()) == width);
  std::vector<double> logits(static_cast<size_t>(labels));
  for (int64_t l = 0; l < labels; ++l) {
    const float* w = score_head_.data<float>() + l * width;
    double sum = 0;
    for (int64_t j = 0; j < width; ++j) sum += static_cast<double>(w[j]) * hidden[j];
    logits[l] = sum;
  }
  // As vLLM's classifier pooler: one label's sigmoid (also the score), several labels' softmax.
  if (labels == 1) {
    out.score = static_cast<float>(1 / (1 + std::exp(-logits[0])));
    out.probs = {*out.score};
    return;
  }
  const double max = *std::max_element(logits.begin(), logits.end());
  double total = 0;
  for (double& x : logits) total += (x = std::exp(x - max));
  for (double x : logits) out.probs.push_back(static_cast<float>(x / total));
}

std::vector<RequestOutput> LLMEngine::Pool(const SchedulerOutput& sched,
                                           std::vector<RequestOutput> outputs) {
  // A pooling model's request ends with its prompt: the last position's hidden state (after the
  // final norm) is its embedding, or (a scoring model) its logits give the score; the scheduler
  // sees a stop in place of a sampled token.
  const size_t num_scheduled = sched.scheduled.size();
  std::vector<SequenceResult> results(num_scheduled);
  const bool scores = config_.scores();
  const bool hidden = config_.embeds() || !score_head_.empty();
  const int64_t width = hidden ? model_->config().hidden_size : model_->config().vocab_size;
  std::unordered_map<std::string, size_t> out_index;
  for (size_t i = 0; i < num_scheduled; ++i) {
    const int row = runner_->sampling_index()[i];
    auto it = choices_.find(sched.scheduled[i].request_id);
    if (row < 0 || it == choices_.end()) continue;
    Choice& c = *it->second;
    const float* h = runner_->logits().data<float>() + row * width;
    RequestOutput out;
    out.request_id = c.request_id;
    out.index = c.index;
    out.prompt_tokens = static_cast<int>(c.prompt_ids.size());
    if (!score_head_.empty()) {
      ApplyScoreHead({h, static_cast<size_t>(width)}, out);
    } else if (scores) {
      // softmax over (false, true), the true token's share, as vLLM's from_2_way_softmax.
      const double margin = static_cast<double>(h[classifier_ids_[1]]) - h[classifier_ids_[0]];
      out.score = static_cast<float>(1 / (1 + std::exp(-margin)));
    } else {
      out.embedding.assign(h, h + width);
      if (pooler_normalizes_) NormalizeL2(out.embedding);
    }
    out.finished = true;
    out.finish_reason = "stop";
    results[i].sampled_token = eos_token_ids_.empty() ? 0 : eos_token_ids_[0];
    results[i].stop = true;
    out_index[sched.scheduled[i].request_id] = outputs.size();
    outputs.push_back(std::move(out));
  }
  for (const FinishedRequest& f : scheduler_->Update(sched, results)) {
    auto it = choices_.find(f.request_id);
    if (it == choices_.end()) continue;
    auto oi = out_index.find(f.request_id);
    if (oi != out_index.end()) outputs[oi->second].cached_tokens = std::max(f.num_cached_tokens, 0);
    ForgetFinished(it);
  }
  return outputs;
}

void LLMEngine::CollectPromptLogprobs(const SchedulerOutput& sched) {
  // Every prompt position's logits row (a prompt token's logprob, rank and top alternatives),
  // on the host threads: each row is a vocabulary-sized pass, and a step holds up to
  // SchedulerConfig::max_prompt_logits_per_step of them.
  struct Row {
    Choice* choice;
    int32_t position;  // the row's; it gives the logprob of prompt token position + 1
    int64_t row;
  };
  std::vector<Row> rows;
  for (size_t i = 0; i < sched.scheduled.size(); ++i) {
    const ScheduledSequence& s = sched.scheduled[i];
    if (s.num_prompt_logits == 0) continue;
    auto it = choices_.find(s.request_id);
    if (it == choices_.end()) continue;
    Choice& c = *it->second;
    for (int j = 0; j < s.num_prompt_logits; ++j) {
      const int32_t position = s.start_position + j;
      if (position < c.num_prompt_logprobs) continue;  // recomputed after a preemption
      rows.push_back({&c, position, runner_->prompt_logits_index()[i] + j});
    }
  }
  if (rows.empty()) return;
  const int64_t vocab = model_->config().vocab_size;
  std::vector<TokenLogprobs> computed(rows.size());
  backend_->ParallelForHost(static_cast<int64_t>(rows.size()), [&](int64_t r) {
    const Row& row = rows[static_cast<size_t>(r)];
    std::span<float> logits(runner_->logits().data<float>() + row.row * vocab,
                            static_cast<size_t>(vocab));
    SanitizeLogits(logits);
    const LogSoftmax log_softmax(logits);
    const int32_t token = row.choice->prompt_ids[static_cast<size_t>(row.position) + 1];
    TokenLogprobs& t = computed[static_cast<size_t>(r)];
    t.token = token;
    t.logprob = log_softmax.LogProb(logits[static_cast<size_t>(token)]);
    t.rank = 1 + static_cast<int32_t>(std::count_if(logits.begin(), logits.end(), [&](float x) {
               return x > logits[static_cast<size_t>(token)];
             }));
    t.top = TopLogprobs(logits, row.choice->params.prompt_logprobs, log_softmax);
  });
  for (size_t r = 0; r < rows.size(); ++r) {
    Choice& c = *rows[r].choice;
    XI_CHECK(rows[r].position == c.num_prompt_logprobs);  // in order, none skipped
    c.prompt_logprobs.push_back(std::move(computed[r]));
    ++c.num_prompt_logprobs;
  }
}

bool LLMEngine::HasUnfinishedRequests() const {
  return scheduler_->HasUnfinishedRequests() || !pending_.empty();
}

EngineStats LLMEngine::stats() const {
  SchedulerStats s = scheduler_->stats();
  EngineStats e;
  e.num_running = s.num_running;
  e.num_waiting = s.num_waiting;
  e.num_blocks = s.num_blocks;
  e.num_free_blocks = s.num_free_blocks;
  e.kv_cache_usage = s.kv_cache_usage;
  e.num_preemptions = s.num_preemptions;
  e.prefix_cache_queries = s.prefix_cache_queries;
  e.prefix_cache_hits = s.prefix_cache_hits;
  e.prompt_tokens = prompt_tokens_;
  e.generation_tokens = generation_tokens_;
  e.computed_tokens = runner_->num_computed_tokens();
  e.num_requests_finished = finished_;
  e.spec_num_drafts = spec_num_drafts_;
  e.spec_num_draft_tokens = spec_num_draft_tokens_;
  e.spec_num_accepted_tokens = spec_num_accepted_tokens_;
  e.spec_accepted_per_position = spec_accepted_per_position_;
  auto names = [&](const std::vector<int32_t>& ids) {
    std::vector<std::string> out;
    for (const LoraAdapterInfo& a : lora_adapters_)
      if (std::find(ids.begin(), ids.end(), a.id) != ids.end()) out.push_back(a.name);
    std::sort(out.begin(), out.end());
    return out;
  };
  e.running_lora_adapters = names(s.running_loras);
  e.waiting_lora_adapters = names(s.waiting_loras);
  return e;
}

}  // namespace xinfer
