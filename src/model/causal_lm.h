// The model interface the rest of the engine uses: a batch of tokens from several sequences in,
// logits for the rows that will be sampled out, K/V kept in a paged cache.
//
// Ownership: a CausalLM holds its weights (memory-mapped, shared) and a reference to the Backend,
// which must outlive it. The PagedKvCache belongs to the caller (the runner); which blocks belong
// to which sequence is decided by kv/ and arrives here as block tables and slot mappings.
// Thread-safety: Forward() is called from one thread (the runner's); ops parallelise inside.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "base/status.h"
#include "formats/hf_config.h"

namespace xinfer {

// K/V storage of the whole engine: per layer a [num_blocks * block_size, num_kv_heads, head_dim]
// tensor of `dtype` (F32, or BF16: `--kv-cache-dtype`, half the bytes, K/V rounded to nearest
// even when written); a "slot" is one row (one token of one sequence).
struct PagedKvCache {
  std::vector<Tensor> k;
  std::vector<Tensor> v;
  int32_t num_blocks = 0;
  int32_t block_size = 0;
  DType dtype = DType::kF32;
  int64_t num_slots() const { return static_cast<int64_t>(num_blocks) * block_size; }
};

struct LoraAdapter;  // model/lora.h

// One forward step over several sequences (prefill chunks and decode tokens mixed).
// Rows are grouped by sequence: sequence s owns rows [query_start[s], query_start[s+1]).
struct ForwardBatch {
  std::vector<int32_t> token_ids;     // [T]
  std::vector<int32_t> positions;     // [T] absolute position of each token in its sequence
  std::vector<int32_t> slot_mapping;  // [T] cache slot that receives each token's K/V
  std::vector<int32_t> query_start;   // [S + 1]
  std::vector<int32_t> block_tables;  // [S * max_blocks_per_seq]; pad unused entries with 0
  int32_t max_blocks_per_seq = 0;
  std::vector<int32_t> logits_rows;  // rows whose logits are wanted, in output order
  // Pooling models (embeddings): the output holds those rows' hidden states after the final norm
  // ([logits_rows.size(), hidden_size]) instead of their logits.
  bool hidden_states = false;
  // LoRA (model/lora.h): sequence s runs with adapter loras[s] (null: the base model alone). Empty
  // when no sequence has one. The adapters must stay alive until Forward returns.
  std::vector<const LoraAdapter*> loras;
};

class CausalLM {
 public:
  virtual ~CausalLM() = default;
  virtual const ModelConfig& config() const = 0;
  // Total bytes of weights as held (after ModelLoadOptions' conversions), and their parameter
  // count.
  virtual size_t weight_bytes() const = 0;
  virtual int64_t num_parameters() const = 0;
  // Bytes of K/V one token occupies in a PagedKvCache of `kv_dtype` (all layers, K and V).
  virtual size_t kv_bytes_per_token(DType kv_dtype) const = 0;

  // kv_dtype: F32 or BF16 (IsSupportedKvCacheDType; the caller validates).
  virtual PagedKvCache NewKvCache(int32_t num_blocks, int32_t block_size, DType kv_dtype) = 0;
  // Runs the batch, writing K/V into `cache` and the logits of `batch.logits_rows` into `logits`
  // ([logits_rows.size(), vocab_size] F32; hidden_size wide for batch.hidden_states). Token ids
  // outside the vocabulary and inconsistent batches are reported as Status before anything is
  // written.
  virtual Status Forward(const ForwardBatch& batch, PagedKvCache& cache, Tensor& logits) = 0;
  // LoRA (model/lora.h): the adapter in folder `dir`, ready for this model's Forward (placed on
  // its backend, or under tensor parallelism each rank's slices on that rank's). Errors as
  // LoadLoraAdapter's. Called on the thread that calls Forward, between Forwards.
  virtual StatusOr<std::shared_ptr<const LoraAdapter>> LoadLora(const std::string& dir,
                                                                int max_lora_rank) = 0;
};

// How the loader holds the weights it reads.
struct ModelLoadOptions {
  // `--dtype bfloat16`: vLLM loads every unquantized weight in the model dtype, so an F16 or F32
  // checkpoint (and AWQ's F16 embedding / lm_head) computes in BF16 there. Here likewise: dense
  // F16 and F32 Linear weights (the lm_head included) and the embedding table are converted to
  // BF16, rounded to nearest even, once at load, so they meet BF16 activations on the BF16
  // kernels (vdpbf16ps) instead of F32 FMAs; F32 ones take half the memory. Norms and biases
  // (read as F32 by every op) and quantized weights' codes and scales are kept as stored.
  bool bf16_weights = false;
  // vLLM's --hf-overrides: JSON merged onto config.json (LoadHfConfig); "" for none.
  std::string hf_overrides{};
};

// Reads config.json and the safetensors weights of a Hugging Face folder (or a GGUF file) and
// builds the model for its architecture (Llama, Qwen2, Qwen3). Unsupported architectures, dtypes
// or quantization, and missing or mis-shaped tensors are reported as Status naming the culprit.
StatusOr<std::unique_ptr<CausalLM>> LoadCausalLM(const std::string& model_dir, Backend& backend,
                                                 const ModelLoadOptions& options = {});

// Tensor parallelism (vLLM's --tensor-parallel-size): the same model split over `ranks.size()`
// backends (model/layers/decoder_shard.h: heads, intermediate features and vocabulary sliced),
// rank r computing its shard on ranks[r] from a thread of its own and the ranks' partial sums
// added by `comm` (comm.size() == ranks.size()). One rank is the plain LoadCausalLM. The backends
// and `comm` must outlive the model. A model that cannot be split that way (heads not divisible,
// quantized blocks a slice would cut) is InvalidArgument saying why. The returned model's
// Forward is called from one thread, as any CausalLM's.
class Communicator;
StatusOr<std::unique_ptr<CausalLM>> LoadCausalLM(const std::string& model_dir,
                                                 std::span<Backend* const> ranks,
                                                 Communicator& comm,
                                                 const ModelLoadOptions& options = {});

// The element types a PagedKvCache may hold.
inline bool IsSupportedKvCacheDType(DType dtype) {
  return dtype == DType::kF32 || dtype == DType::kBF16;
}

// The config of a model LoadCausalLM would load (a folder's config.json with `hf_overrides`
// merged, or a GGUF file's metadata, which refuses overrides), without its weights.
StatusOr<ModelConfig> LoadModelConfig(const std::string& model, const std::string& hf_overrides);

// A sequence classification model's own head (ModelConfig::has_score_head): the folder's
// `score.weight` [num_labels, hidden] as an F32 host tensor, checked against `config` (its
// hidden size, its id2label when it has one).
StatusOr<Tensor> LoadScoreHead(const std::string& model_dir, const ModelConfig& config);

// Names of the architectures LoadCausalLM accepts.
std::vector<std::string> SupportedArchitectures();

// One sequence with a private cache of `capacity` tokens: the simplest way to run a model
// (CLI `generate`, golden tests). Not thread-safe.
class SingleSequence {
 public:
  SingleSequence(CausalLM& model, Backend& backend, int64_t capacity, DType kv_dtype = DType::kF32);
  // Appends `tokens` and writes the last token's logits (vocab_size floats).
  Status Append(std::span<const int32_t> tokens, std::span<float> logits);
  int64_t length() const { return length_; }
  int64_t capacity() const { return capacity_; }

 private:
  static constexpr int32_t kBlockSize = 16;
  CausalLM& model_;
  PagedKvCache cache_;
  Tensor logits_;
  int64_t capacity_;
  int64_t length_ = 0;
};

}  // namespace xinfer
