// EngineConfig: every engine setting with its default, in one place. Flag names follow vLLM
// (`--max-model-len` ↔ max_model_len, ...). Validate() before use; ToString() is logged at
// startup.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "tensor/dtype.h"

namespace xinfer {

// --override-pooler-config's JSON: whether embeddings are normalized (true for ""); other
// pooling than LAST, or unknown keys, refused.
StatusOr<bool> ParsePoolerConfig(const std::string& text);

// One of vLLM's --lora-modules: `name=path`, or JSON {"name", "path", "base_model_name"}.
struct LoraModule {
  std::string name;
  std::string path;
  std::string base_model_name;  // empty: the served model's name
};
StatusOr<LoraModule> ParseLoraModule(const std::string& text);

struct EngineConfig {
  std::string model;  // Hugging Face model folder

  // KV cache sizing, first match wins: num_gpu_blocks_override; kv_cache_memory bytes; else
  // gpu_memory_utilization x (cpu_memory_budget, or the machine's memory) minus the weights.
  int block_size = 16;
  int num_gpu_blocks_override = 0;
  int64_t kv_cache_memory = 0;
  double gpu_memory_utilization = 0.9;
  int64_t cpu_memory_budget = 0;

  int max_model_len = 0;  // 0: the model's max_position_embeddings
  int max_num_seqs = 256;
  int max_num_batched_tokens = 0;  // 0: 2048 with chunked prefill, else max_model_len
  bool enable_chunked_prefill = true;
  bool enable_prefix_caching = true;
  std::string scheduling_policy = "fcfs";  // or "priority"
  int threads = 0;                         // CPU threads per op; 0: AvailableCpuCount()
  // Keep the weights in the model file's mapped pages instead of copying them into huge-page
  // memory at load (CpuBackendOptions::mmap_weights): less memory when several processes serve
  // one file, slower decode.
  bool mmap_weights = false;
  // Quantized weights (GGUF Q4_0/Q5_0/Q8_0/Q4_1/Q5_1/Q4_K/Q5_K/Q6_K, AWQ g128) meet activations
  // quantized to int8 per block of 32 (CpuBackendOptions::int8_activations): faster, logits move
  // by ~1e-2. Unset: on for GGUF files — llama.cpp, and vLLM's GGUF kernels, compute them so —
  // and off for AWQ checkpoints (vLLM's GPU kernels keep 16-bit activations). `--int8-activations`
  // / `--no-int8-activations` set it.
  std::optional<bool> int8_activations;
  bool Int8ActivationsFor(bool gguf_model) const { return int8_activations.value_or(gguf_model); }

  // vLLM's --dtype: "auto" (= "float32" on CPU: weights used as stored, F32 activations, logits
  // match an F32 reference to ~1e-5 of their magnitude), "float32"/"float", or "bfloat16" (as
  // vLLM loads unquantized weights in the model dtype, dense F16 / F32 weights are converted to
  // BF16 at load (ModelLoadOptions::bf16_weights); BF16 weights, and the 4-bit AWQ/Q4_0 ones,
  // meet activations rounded to BF16, as vLLM and llama.cpp compute them: ~1.7x faster prefill
  // and batched decode; logits move by ~0.5 % of the largest one). Quantized weights are kept.
  std::string dtype = "auto";
  // vLLM's --quantization: empty (taken from the model), "awq" or "gguf"; it must match the model.
  std::string quantization;

  // vLLM's --kv-cache-dtype: "auto" (the activations' dtype, as vLLM's auto is the model's compute
  // dtype: float32, or bfloat16 under --dtype bfloat16), "float32"/"float", or "bfloat16" (half
  // the bytes per token, so twice the tokens in the same memory and half the bytes decode
  // attention reads; K/V rounded to BF16 when written). vLLM's fp8 variants are refused.
  std::string kv_cache_dtype = "auto";

  // vLLM's --tensor-parallel-size: the model's heads, MLP features and vocabulary split over this
  // many ranks (model/layers/decoder_shard.h), each a backend of its own (threads / size threads
  // when `threads` is set, else one per CPU of its placement below) driven by a thread of its
  // own, their partial sums added in shared memory; at most `threads` ranks.
  int tensor_parallel_size = 1;
  // Where the ranks' threads run (base/cpu_topology.h PlanRankPlacement), as vLLM's CPU backend
  // reads VLLM_CPU_OMP_THREADS_BIND: "auto" (a NUMA node per rank when there are enough, else
  // the CPUs cut into equal runs; each rank's buffers prefer its node's memory), "nobind", or
  // CPU lists per rank separated by '|' ("0-31|32-63"). With one rank only a list binds, and
  // only the pool's workers (the thread that calls Step, which also runs ops, is the caller's:
  // binding it would also bind whatever else that thread does). `--cpu-threads-bind`, by default
  // that environment variable.
  std::string cpu_threads_bind = "auto";
  // vLLM's --data-parallel-size: this many replicas of the whole engine (model, KV cache,
  // scheduler), each with 1/size of the threads, CPUs (placement as above, over size x
  // tensor_parallel_size ranks) and memory budget, and each stepped by a thread of its own; the
  // server sends each request to the replica with the fewest unfinished ones (AsyncEngine).
  // max_num_seqs, num_gpu_blocks_override and kv_cache_memory are per replica, as vLLM takes
  // them per engine. Only `xinfer serve` runs more than one.
  int data_parallel_size = 1;
  // vLLM's --pipeline-parallel-size and --device, so that a vLLM command line runs unchanged: 1
  // and "auto"/"cpu" are what this build has; anything else is refused by Validate() with a
  // clear message rather than silently run another way.
  int pipeline_parallel_size = 1;
  std::string device = "auto";
  // vLLM's --seed: seeds the source of the per-request seeds of requests that give none, so a
  // server restarted with the same seed samples the same tokens for the same requests in the same
  // order. Unset: a random seed per process.
  std::optional<uint64_t> seed;

  // vLLM's --tokenizer: a folder (tokenizer.json, tokenizer_config.json with the chat template)
  // or .gguf file whose tokenizer replaces the model's; empty: the model's own.
  std::string tokenizer;
  // vLLM's --generation-config: where the sampling defaults of requests come from: "auto" (the
  // model folder's generation_config.json: temperature, top_p, top_k, min_p,
  // repetition_penalty, extra EOS ids), "vllm" (none: temperature 1, no top-p / top-k, no
  // penalty), or a folder holding a generation_config.json.
  std::string generation_config = "auto";
  // vLLM's --override-generation-config: a JSON object of those sampling fields laid over what
  // generation_config gives, e.g. {"temperature": 0.5}; empty: none.
  std::string override_generation_config;
  // vLLM's --max-logprobs: the most logprobs (completions) / top_logprobs (chat) a request may
  // ask for; -1: the vocabulary size.
  int max_logprobs = 20;

  // vLLM's --task (and --runner pooling / --convert embed): "generate" (text), or "embed": a
  // pooling model, each request's last-position hidden state after the final norm is its
  // embedding (Qwen3-Embedding, gte-Qwen2: last-token pooling), served on /v1/embeddings.
  // "auto": generate.
  std::string task = "auto";
  // vLLM's --override-pooler-config: JSON {"pooling_type": "LAST", "normalize": true|false};
  // empty: LAST, normalized (vLLM's default for causal LMs run as embedding models).
  std::string pooler_config;

  // vLLM's --hf-overrides: a JSON object merged onto the model's config.json (e.g.
  // {"max_position_embeddings": 65536}, {"is_matryoshka": true}); empty: none.
  std::string hf_overrides;
  // vLLM's --rope-scaling (a JSON object, e.g. {"rope_type": "yarn", "factor": 4.0,
  // "original_max_position_embeddings": 32768}) and --rope-theta: shorthands for those keys of
  // hf_overrides. Empty / 0: the model's.
  std::string rope_scaling;
  double rope_theta = 0;
  // hf_overrides with rope_scaling / rope_theta laid over it: what the loader merges onto
  // config.json ("" when none). A malformed hf_overrides comes back as is, for the loader to
  // refuse with its message.
  std::string ConfigOverrides() const;

  // vLLM's --load-format: "auto", "safetensors" (a Hugging Face folder) or "gguf" (a .gguf file);
  // it must match the model.
  std::string load_format = "auto";
  // vLLM settings for machinery this engine does not have, kept so that Validate() can refuse
  // the values that would ask for something else: --distributed-executor-backend ("mp" / "uni":
  // ranks are threads of this process; "ray", "external_launcher" refused), --tokenizer-mode
  // ("auto", "hf", "slow": tokenizer.json either way; "mistral", "custom" refused). (Flags whose
  // every value changes nothing are only accepted: AddAcceptedVllmFlag.)
  std::string distributed_executor_backend = "mp";
  // vLLM's LoRA settings: --enable-lora turns adapters on; --lora-modules are served from the
  // start, each under its own name (requests pick one by `model`); --max-lora-rank refuses larger
  // adapters; --max-loras caps the distinct adapters running at once (SchedulerConfig). Under
  // tensor parallelism each rank holds its slices of an adapter (model/lora.h ShardLoraLayers).
  bool enable_lora = false;
  std::vector<std::string> lora_modules;
  int max_lora_rank = 16;
  int max_loras = 1;
  std::string tokenizer_mode = "auto";
  // vLLM's --speculative-config: a JSON object, e.g. {"method": "ngram",
  // "num_speculative_tokens": 4, "prompt_lookup_max": 4} (engine/speculative_config.h); empty:
  // none. Text generation only.
  std::string speculative_config;

  bool bf16_activations() const { return dtype == "bfloat16"; }
  bool embeds() const { return task == "embed"; }
  // "score": a sequence classification model (a reranker), each prompt's score from its last
  // position's logits (ModelConfig::classifier_from_token), served on /score and /rerank. The
  // engine resolves "auto" (and --runner pooling's "embed") to it for such a model.
  bool scores() const { return task == "score"; }
  // pooler_config's "normalize" (true when absent); valid after Validate().
  bool PoolerNormalizes() const;
  // Where the tokenizer (and the chat template) come from.
  const std::string& TokenizerPath() const { return tokenizer.empty() ? model : tokenizer; }
  // max_logprobs for a model of `vocab_size` tokens (-1 resolved).
  int MaxLogprobs(int vocab_size) const { return max_logprobs < 0 ? vocab_size : max_logprobs; }
  // The cache's element type kv_cache_dtype resolves to (F32 or BF16); valid after Validate().
  DType KvCacheDType() const;

  Status Validate() const;  // dtype through ValidateDtype
  // Fills the settings that default from the model (max_model_len: the model's length as
  // DerivedMaxModelLen gives it, or 4096 when it has none; max_num_batched_tokens from it) and
  // refuses a max_model_len over the model's. Shared by LLMEngine::Create and `xinfer plan`.
  Status ResolveModelLimits(int derived_max_model_len);
  std::string ToString() const;
  // "tensor_parallel_size T" or "tensor_parallel_size T x data_parallel_size D", for messages
  // about the ranks.
  std::string RanksName() const;
};

// The --dtype values EngineConfig accepts (shared with `xinfer doctor --dtype`).
Status ValidateDtype(const std::string& dtype);
// The --kv-cache-dtype values EngineConfig accepts (shared with `xinfer bench offline`).
Status ValidateKvCacheDtype(const std::string& kv_cache_dtype);

}  // namespace xinfer
