#include "cli/engine_flags.h"

#include <algorithm>
#include <cstdlib>
#include <string_view>
#include <utility>

namespace xinfer {

void AddEngineFlags(CLI::App* cmd, EngineConfig* c) {
  cmd->add_option("--block-size", c->block_size, "Tokens per KV-cache block (default 16)");
  cmd->add_option("--num-gpu-blocks-override", c->num_gpu_blocks_override,
                  "Fix the number of KV blocks");
  cmd->add_option("--kv-cache-memory", c->kv_cache_memory, "KV cache size in bytes");
  cmd->add_option("--gpu-memory-utilization", c->gpu_memory_utilization,
                  "Fraction of the memory budget for weights + KV cache (default 0.9)");
  cmd->add_option("--cpu-memory-budget", c->cpu_memory_budget,
                  "Memory budget in bytes on CPU (default: the machine's memory)");
  cmd->add_option("--max-model-len", c->max_model_len, "Context length (default: the model's)");
  cmd->add_option("--max-num-seqs", c->max_num_seqs, "Running sequences at most (default 256)");
  cmd->add_option("--max-num-batched-tokens", c->max_num_batched_tokens, "Tokens per engine step");
  cmd->add_flag("--enable-chunked-prefill,!--no-enable-chunked-prefill", c->enable_chunked_prefill,
                "Split long prompts across steps (default on)");
  cmd->add_flag("--enable-prefix-caching,!--no-enable-prefix-caching", c->enable_prefix_caching,
                "Reuse KV blocks of shared prefixes (default on)");
  cmd->add_option("--scheduling-policy", c->scheduling_policy, "fcfs (default) or priority");
  cmd->add_option("--threads", c->threads,
                  "CPU threads per op, the engine thread included (default: the CPUs this "
                  "process may use: affinity mask, cgroup CPU quota)");
  cmd->add_flag("--mmap-weights", c->mmap_weights,
                "Read the weights from the mapped model file (page cache shared between "
                "processes) instead of copying them into huge-page memory at load: less memory, "
                "slower decode");
  cmd->add_flag_function(
      "--int8-activations,!--no-int8-activations",
      [c](int64_t count) { c->int8_activations = count > 0; },
      "Quantized weights (GGUF, AWQ g128) meet activations quantized to int8 per block of 32 "
      "(AVX512-VNNI CPUs): faster, logits move by ~1e-2. Default: on for GGUF files (as "
      "llama.cpp computes them), off for AWQ");
  cmd->add_option("--dtype", c->dtype,
                  "auto (default; = float32 on CPU), bfloat16 (BF16 activations on BF16 weights: "
                  "faster, logits move by ~0.5 %) or float32");
  cmd->add_option("--kv-cache-dtype", c->kv_cache_dtype,
                  "auto (default: the activations' dtype, float32 or with --dtype bfloat16 "
                  "bfloat16), bfloat16 (half the KV memory per token, K/V rounded to BF16) or "
                  "float32");
  cmd->add_option("-q,--quantization", c->quantization,
                  "awq or gguf; must match the model (default: taken from the model)");
  // vLLM's names, so that its command lines run unchanged (its -tp / -pp / -dp through
  // ExpandVllmShortFlags); EngineConfig::Validate refuses what this build cannot do.
  cmd->add_option("--tensor-parallel-size", c->tensor_parallel_size,
                  "ranks the model's heads, MLP and vocabulary are split over, each with "
                  "--threads / N threads (default 1; at most --threads)");
  // vLLM's CPU backend reads the binding from VLLM_CPU_OMP_THREADS_BIND; so does the default.
  if (const char* bind = std::getenv("VLLM_CPU_OMP_THREADS_BIND"); bind != nullptr && *bind)
    c->cpu_threads_bind = bind;
  cmd->add_option("--cpu-threads-bind", c->cpu_threads_bind,
                  "where tensor- and data-parallel ranks run: auto (a NUMA node per rank, or equal "
                  "runs of CPUs), nobind, or CPU lists per rank such as 0-31|32-63 (default: "
                  "$VLLM_CPU_OMP_THREADS_BIND, else auto)")
      ->capture_default_str();
  cmd->add_option("--pipeline-parallel-size", c->pipeline_parallel_size,
                  "1 (default); more is not implemented yet");
  cmd->add_option("--data-parallel-size", c->data_parallel_size,
                  "replicas of the whole engine (serve only), each with 1/N of the threads, "
                  "CPUs and memory; requests go to the least busy (default 1)");
  cmd->add_option("--device", c->device, "auto (default) or cpu: the backends this build has");
  cmd->add_option("--tokenizer", c->tokenizer,
                  "Folder (tokenizer.json, tokenizer_config.json with the chat template) or .gguf "
                  "file whose tokenizer to use instead of the model's");
  cmd->add_option("--generation-config", c->generation_config,
                  "Sampling defaults of requests: auto (default: the model's "
                  "generation_config.json), vllm (none), or a folder holding one");
  cmd->add_option("--override-generation-config", c->override_generation_config,
                  "JSON object of sampling defaults over --generation-config's, e.g. "
                  "'{\"temperature\": 0.5}' (temperature, top_p, top_k, min_p, "
                  "repetition_penalty)");
  cmd->add_option("--max-logprobs", c->max_logprobs,
                  "Most logprobs / top_logprobs a request may ask for (default 20; -1: the "
                  "vocabulary)");
  cmd->add_option("--load-format", c->load_format,
                  "auto (default), safetensors or gguf: must match the model");
  cmd->add_option("--hf-overrides", c->hf_overrides,
                  "JSON object merged onto the model's config.json, e.g. "
                  "'{\"is_matryoshka\": true}'");
  cmd->add_option("--rope-scaling", c->rope_scaling,
                  "JSON object replacing config.json's rope_scaling, e.g. '{\"rope_type\": "
                  "\"yarn\", \"factor\": 4.0, \"original_max_position_embeddings\": 32768}' "
                  "(linear, dynamic, yarn, llama3)");
  cmd->add_option("--rope-theta", c->rope_theta, "RoPE base replacing config.json's rope_theta");
  cmd->add_option("--task", c->task,
                  "auto (default: generate, or score for a sequence classification model), "
                  "generate, embed: serve embeddings on /v1/embeddings (last-token pooling, as "
                  "Qwen3-Embedding), or score: a reranker's /score and /rerank");
  // vLLM's newer spelling of --task embed.
  cmd->add_option_function<std::string>(
         "--runner",
         [c](const std::string& runner) {
           if (runner == "pooling") c->task = "embed";
           if (runner == "generate") c->task = "generate";
         },
         "auto (default), generate, or pooling (= --task embed)")
      ->check(CLI::IsMember({"auto", "generate", "pooling"}));
  cmd->add_option_function<std::string>(
         "--convert",
         [c](const std::string& convert) {
           if (convert == "embed") c->task = "embed";
         },
         "auto (default), none, or embed (= --task embed)")
      ->check(CLI::IsMember({"auto", "none", "embed"}));
  cmd->add_option("--override-pooler-config,--pooler-config", c->pooler_config,
                  "JSON {\"pooling_type\": \"LAST\", \"normalize\": true|false} for --task embed "
                  "(default: LAST, normalized)");
  cmd->add_flag("--enable-lora", c->enable_lora,
                "Serve LoRA adapters (PEFT folders) beside the base model");
  cmd->add_option("--lora-modules", c->lora_modules,
                  "Adapters to serve, each name=path or JSON {\"name\", \"path\", "
                  "\"base_model_name\"}; a request names one as its model");
  cmd->add_option("--max-lora-rank", c->max_lora_rank,
                  "Largest adapter rank accepted (default 16)");
  cmd->add_option("--max-loras", c->max_loras,
                  "Distinct adapters running at once (default 1); requests of others wait");
  AddAcceptedVllmFlag(cmd, "--max-cpu-loras",
                      "every adapter is held in host memory, so there is no cache of them to size",
                      true);
  AddAcceptedVllmFlag(cmd, "--lora-dtype", "adapters are computed in F32 whatever the setting",
                      true);
  AddAcceptedVllmFlag(cmd, "--fully-sharded-loras",
                      "adapters run on one rank (LoRA with tensor parallelism is refused)");
  cmd->add_option("--speculative-config", c->speculative_config,
                  "Speculative decoding, JSON {\"method\": \"ngram\", \"num_speculative_tokens\": "
                  "K, \"prompt_lookup_max\": N, \"prompt_lookup_min\": M}: decodes also run up to "
                  "K tokens copied from where the last N..M tokens occurred before; the text is "
                  "what plain decoding gives");
  AddAcceptedVllmFlag(cmd, "--async-scheduling",
                      "each step is scheduled once the previous one's tokens are sampled");
  AddAcceptedVllmFlag(cmd, "-O,--compilation-config",
                      "there is no graph compilation: the CPU kernels run as they are", true);
  AddAcceptedVllmFlag(cmd, "--download-dir,--revision,--tokenizer-revision,--code-revision",
                      "the model and tokenizer are local folders or files, read as they are", true);
  AddAcceptedVllmFlag(cmd, "--enable-sleep-mode",
                      "there are no sleep / wake-up endpoints; the memory stays held");
  AddAcceptedVllmFlag(
      cmd, "--max-num-partial-prefills,--max-long-partial-prefills,--long-prefill-token-threshold",
      "prefill chunks share the step's budget (--max-num-batched-tokens) in arrival order", true);
  AddAcceptedVllmFlag(cmd, "--guided-decoding-backend,--structured-outputs-config",
                      "guides are compiled and applied by this engine's own matcher", true);
  AddAcceptedVllmFlag(cmd, "--limit-mm-per-prompt", "the models served take text only", true);
  AddAcceptedVllmFlag(cmd, "--enable-expert-parallel",
                      "a mixture-of-experts model runs all its experts on one rank");
  AddRefusedVllmFlag(cmd, "--kv-transfer-config",
                     "there is no KV transfer between instances (disaggregated prefill)", true);
  AddRefusedVllmFlag(cmd, "--logits-processors",
                     "logits processors are Python classes; the sampling parameters (logit_bias, "
                     "bad_words, allowed_token_ids, min_tokens, guides) are built in",
                     true);
  // vLLM flags that configure what this engine does not have; accepted so that a vLLM command
  // line runs unchanged, each saying why it changes nothing.
  AddAcceptedVllmFlag(cmd, "--swap-space",
                      "its GiB of CPU swap for preempted sequences: the KV cache already lives in "
                      "host memory and preemption recomputes, so nothing is swapped",
                      true)
      ->check(CLI::NonNegativeNumber);
  AddAcceptedVllmFlag(cmd, "--max-seq-len-to-capture", "the CPU backend captures no graphs", true)
      ->check(CLI::NonNegativeNumber);
  AddAcceptedVllmFlag(cmd, "--disable-custom-all-reduce",
                      "tensor-parallel ranks always add their sums in shared memory");
  cmd->add_option("--distributed-executor-backend", c->distributed_executor_backend,
                  "mp or uni, as vLLM takes them: the ranks are threads of this process either "
                  "way; ray and external_launcher are refused");
  cmd->add_option("--tokenizer-mode", c->tokenizer_mode,
                  "auto (default), hf or slow: the model's tokenizer.json either way; mistral and "
                  "custom are refused");
  AddAcceptedVllmFlag(cmd, "--trust-remote-code",
                      "xinfer never runs code from the model folder, so there is nothing to trust");
  AddAcceptedVllmFlag(cmd, "--enforce-eager",
                      "the CPU backend has no graphs to capture, so it always runs eagerly");
}

CLI::Option* AddAcceptedVllmFlag(CLI::App* cmd, const std::string& names, const std::string& why,
                                 bool takes_value) {
  const std::string help = "Accepted as vLLM takes it; " + why;
  if (takes_value)
    return cmd->add_option_function<std::string>(
        names, [](const std::string&) {}, help);
  return cmd->add_flag(names)->description(help);
}

void AddRefusedVllmFlag(CLI::App* cmd, const std::string& names, const std::string& why,
                        bool takes_value) {
  // One option per name, so that the message names the one given.
  for (size_t begin = 0; begin < names.size();) {
    const size_t end = std::min(names.find(',', begin), names.size());
    const std::string name = names.substr(begin, end - begin);
    begin = end + 1;
    const std::string message = name + " is not available: " + why;
    const std::string help = "Refused (vLLM's): " + why;
    if (takes_value) {
      cmd->add_option_function<std::string>(
          name, [message](const std::string&) { throw CLI::ValidationError(message); }, help);
    } else {
      cmd->add_flag_callback(
          name, [message] { throw CLI::ValidationError(message); }, help);
    }
  }
}

std::vector<std::string> ExpandVllmShortFlags(std::vector<std::string> args) {
  static constexpr std::pair<std::string_view, std::string_view> kShort[] = {
      {"-tp", "--tensor-parallel-size"},
      {"-pp", "--pipeline-parallel-size"},
      {"-dp", "--data-parallel-size"}};
  for (std::string& arg : args) {
    for (auto [short_name, long_name] : kShort) {
      if (arg == short_name) {
        arg = long_name;
      } else if (arg.size() > short_name.size() &&
                 arg.compare(0, short_name.size() + 1, std::string(short_name) + "=") == 0) {
        arg = std::string(long_name) + arg.substr(short_name.size());
      }
    }
  }
  return args;
}

}  // namespace xinfer
