// OpenAI request bodies (/v1/chat/completions, /v1/completions) → what the engine runs.
// Every problem a client can cause is a Status (InvalidArgument names the field first, so the
// error's `param` is filled in; NotFound for an unknown model; Unimplemented for options xinfer
// does not support). Pure functions of their inputs; thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "engine/prompt_builder.h"
#include "formats/hf_config.h"
#include "sampling/sampling_params.h"
#include "server/reasoning_parser.h"
#include "tokenizer/tokenizer.h"

namespace xinfer::server {

// Server-wide settings the protocol needs (from `xinfer serve` flags).
// The LoRA adapters a request may name as its model (--lora-modules, and those loaded at run time
// through /v1/load_lora_adapter). Thread-safe: the I/O threads read it while an admin request
// changes it.
class LoraNames {
 public:
  struct Entry {
    std::string name, path;
    std::string parent;  // the base model's name /v1/models gives
  };
  bool Contains(const std::string& name) const;
  std::vector<Entry> List() const;  // in the order added
  bool Add(Entry entry);            // false when the name is taken (or reserved)
  bool Remove(const std::string& name);
  // A name held while its adapter loads: Contains() is false for it and Add() of it fails until
  // Commit() adds the entry or Release() gives the name back. False when taken or reserved.
  bool Reserve(const std::string& name);
  void Commit(Entry entry);
  void Release(const std::string& name);

 private:
  bool TakenLocked(const std::string& name) const;
  mutable std::mutex mu_;
  std::vector<Entry> entries_;
  std::vector<std::string> reserved_;
};

struct ServerConfig {
  std::string served_model_name;  // the first of served_model_names: metrics, logs
  // vLLM's --served-model-name takes several: a request may name any of them (its answer echoes
  // the one named), and /v1/models lists each. Empty: served_model_name alone.
  std::vector<std::string> served_model_aliases;
  std::string model_path;
  std::string api_key;  // empty: no authentication
  std::string version;
  bool enable_auto_tool_choice = false;
  std::string tool_call_parser;  // "" or "hermes"
  std::string reasoning_parser;  // "" or "qwen3"
  // LoRA adapters served beside the model: a request names one as its model. Shared by copies.
  std::shared_ptr<LoraNames> loras = std::make_shared<LoraNames>();
  // VLLM_ALLOW_RUNTIME_LORA_UPDATING: /v1/load_lora_adapter and /v1/unload_lora_adapter exist.
  bool allow_runtime_lora_updating = false;
  // vLLM's --response-role: the role of a chat answer to a prompt that ends with the generation
  // prompt (add_generation_prompt, the default); otherwise the final message's role.
  std::string response_role = "assistant";
  // vLLM's --return-tokens-as-token-ids: logprobs name each token "token_id:<id>" instead of its
  // text (tokens that are not valid UTF-8 alone stay identifiable).
  bool return_tokens_as_token_ids = false;
  // vLLM's --enable-force-include-usage: every streamed answer ends with a usage chunk, as if
  // stream_options.include_usage were set.
  bool enable_force_include_usage = false;
};

// What parsing needs besides the body.
struct ProtocolContext {
  const ServerConfig& config;
  const PromptBuilder* prompts;  // null: the model has no chat template
  const Tokenizer& tokenizer;
  const SamplingParams& defaults;
  int max_model_len = 0;
  int vocab_size = 0;
  int max_logprobs = 20;  // EngineConfig::MaxLogprobs
  // Embeddings: the model's matryoshka dimensions (ModelConfig) and whether they are normalized.
  const ModelConfig* model_config = nullptr;
  bool normalize_embeddings = true;
};

enum class Endpoint { kChat, kCompletion, kResponses, kEmbeddings, kScore, kRerank, kClassify };

struct GenerationRequest {
  Endpoint endpoint = Endpoint::kChat;
  std::string id;  // "chatcmpl-..." / "cmpl-..."
  int64_t created = 0;
  std::string model;
  // Chat: one prompt. Completions: one per entry of a batched `prompt`; choice i*n+j of the
  // response is choice j of prompt i.
  std::vector<std::vector<int32_t>> prompts;
  SamplingParams params;
  int priority = 0;
  bool stream = false;
  bool include_usage = false;           // stream_options.include_usage
  bool continuous_usage_stats = false;  // stream_options.continuous_usage_stats (vLLM)
  std::string role = "assistant";       // chat: the answer's role (ServerConfig::response_role)
  bool tokens_as_ids = false;           // ServerConfig::return_tokens_as_token_ids
  bool parse_tool_calls = false;        // tools given, tool_choice auto, hermes parser on
  // tool_choice naming a function: the output is its arguments (guided by its parameters
  // schema), returned as one call of it with content "" (as vLLM does).
  std::string forced_tool;
  // tool_choice "required": the output is a JSON list of {"name", "parameters"} (guided), returned
  // as those tool calls (as vLLM does).
  bool tools_required = false;
  // parallel_tool_calls false: at most one call ("required" guides a list of one; parsed calls
  // after the first are dropped).
  bool parallel_tool_calls = true;
  // --reasoning-parser qwen3 / deepseek_r1: how reasoning_content is split off.
  std::optional<ReasoningFormat> reasoning;
  bool echo = false;  // completions: prepend the prompt text
  // /v1/responses: the request fields its response object repeats (responses_api.cc).
  nlohmann::ordered_json responses_echo;
  // /v1/embeddings: "float" or "base64".
  std::string encoding_format = "float";
  int embedding_dimensions = 0;      // > 0: the first ones (matryoshka), renormalized
  bool normalize_embeddings = true;  // the engine's pooler normalizes
  // /rerank: the documents (prompt i pairs the query with document i), and how many results
  // (0: all).
  std::vector<std::string> documents;
  int top_n = 0;
  // /classify: the model's label names, by index (ModelConfig::id2label).
  std::vector<std::string> labels;
  // `model` named a LoRA adapter (ServerConfig::loras): its name; "" for the base model.
  std::string lora_name;
};

// The error chat requests get when the model has no chat template.
Status NoChatTemplate();

// A completions `prompt` or embeddings `input`: a string, a list of strings, a list of token ids
// or a list of such lists, as token ids per entry (strings tokenized with special tokens); errors
// name `field`.
StatusOr<std::vector<std::vector<int32_t>>> BatchedPromptIds(const nlohmann::ordered_json& value,
                                                             const ProtocolContext& ctx,
                                                             const char* field, size_t max_items);

StatusOr<GenerationRequest> ParseChatRequest(const nlohmann::ordered_json& body,
                                             const ProtocolContext& ctx);
StatusOr<GenerationRequest> ParseCompletionRequest(const nlohmann::ordered_json& body,
                                                   const ProtocolContext& ctx);

// OpenAI chat messages as chat templates take them, as vLLM passes them for text-only models:
// content parts ([{"type": "text", "text": ...}]) joined into one string, an absent or null
// content as "". InvalidArgument for anything else but a string content.
StatusOr<nlohmann::ordered_json> NormalizeMessages(const nlohmann::ordered_json& messages);

// NotFound unless `body.model` is absent or names the served model or one of its LoRA adapters
// (then *lora_name is set to it, when given; else "").
Status CheckModel(const nlohmann::ordered_json& body, const ServerConfig& config,
                  std::string* lora_name = nullptr);

// "<prefix><32 hex digits>".
std::string NewRequestId(const std::string& prefix);

// vLLM's truncate_prompt_tokens: nullopt when absent or null, k for k >= 1, max_model_len for -1;
// InvalidArgument for other values or k > max_model_len.
StatusOr<std::optional<size_t>> TruncationLimit(const nlohmann::ordered_json& body,
                                                const ProtocolContext& ctx);

// Which end of a prompt truncate_prompt_tokens keeps, as vLLM sets its tokenizer's
// truncation_side by runner: generation keeps the end (the text nearest what comes next),
// pooling models (embeddings, scores) the beginning.
enum class KeepEnd { kLast, kFirst };

// Cuts `ids` in place to the request's truncate_prompt_tokens (TruncationLimit), keeping `keep`.
Status TruncatePrompt(const nlohmann::ordered_json& body, const ProtocolContext& ctx,
                      std::vector<int32_t>& ids, KeepEnd keep);

// The start of a pooling request (/v1/embeddings, /score, /rerank): the model checked, id,
// created, the model name the body used, and parameters under which the engine's one step ends
// each prompt. Its prompts are the caller's to add.
StatusOr<GenerationRequest> NewPoolingRequest(const nlohmann::ordered_json& body,
                                              const ProtocolContext& ctx, Endpoint endpoint,
                                              const std::string& id_prefix);

// A pooling request's `input` (/v1/embeddings, /classify: a string, strings, token ids or lists
// of them) as its prompts, each cut to truncate_prompt_tokens (its beginning kept) and checked
// against max_model_len; `what` names the request in that error ("embedding generation").
Status AddPoolingInputs(const nlohmann::ordered_json& body, const ProtocolContext& ctx,
                        const char* what, GenerationRequest& r);

}  // namespace xinfer::server
