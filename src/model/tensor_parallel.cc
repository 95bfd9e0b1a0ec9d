// Tensor parallelism (causal_lm.h's LoadCausalLM over several backends): the ranks' DecoderLMs
// (decoder_shard.h) behind one CausalLM. Forward runs every rank's Forward at once, each on its
// own thread — the ranks meet in the communicator's all-reduces, so they must run concurrently —
// and each writes its vocabulary columns of the caller's logits.
#include <atomic>
#include <thread>
#include <type_traits>

#include "backend/communicator.h"
#include "base/logging.h"
#include "base/spin_wait.h"
#include "model/causal_lm.h"
#include "model/layers/decoder_shard.h"
#include "model/lora.h"

namespace xinfer {
namespace {

// One thread per rank: Run(fn) calls fn(r) on rank r's thread for every r and returns when all
// have returned. Unlike ThreadPool, whose caller runs the chunks a sleeping worker has not
// claimed, every rank gets its own thread (ranks wait for each other inside fn), bound to its
// rank's cores (Backend::BindCallerThread) for as long as it lives; the caller only waits. Idle
// rank threads spin briefly (steps follow each other within a sampling pass), then sleep on a
// futex. Run is called from one thread at a time.
class RankThreads {
 public:
  explicit RankThreads(std::span<Backend* const> ranks) {
    for (int r = 0; r < static_cast<int>(ranks.size()); ++r)
      threads_.emplace_back([this, r, backend = ranks[r]] {
        backend->BindCallerThread();
        Loop(r);
      });
  }
  ~RankThreads() {
    stop_.store(true, std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_seq_cst);
    generation_.notify_all();
    for (std::thread& t : threads_) t.join();
  }

  // Calls fn(rank) on every rank's thread; no allocation per call.
  template <class Fn>
  void Run(Fn&& fn) {
    job_ = &fn;
    job_call_ = [](void* f, int rank) { (*static_cast<std::remove_reference_t<Fn>*>(f))(rank); };
    pending_.store(static_cast<int>(threads_.size()), std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_seq_cst);
    generation_.notify_all();
    // The caller's core belongs to a rank: it sleeps rather than spin beside it.
    for (int left; (left = pending_.load(std::memory_order_acquire)) != 0;)
      SpinThenWait(pending_, left, 0);
    job_ = nullptr;
  }

 private:
  void Loop(int rank) {
    uint32_t seen = 0;
    for (;;) {
      SpinThenWait(generation_, seen, kSpins);
      seen = generation_.load(std::memory_order_acquire);
      if (stop_.load(std::memory_order_relaxed)) return;
      job_call_(job_, rank);
      pending_.fetch_sub(1, std::memory_order_acq_rel);
      pending_.notify_one();  // the caller may sleep on any count it saw
    }
  }

  static constexpr int kSpins = 1 << 14;
  std::vector<std::thread> threads_;
  void* job_ = nullptr;
  void (*job_call_)(void*, int) = nullptr;
  std::atomic<uint32_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> stop_{false};
};

class TensorParallelLM : public CausalLM {
 public:
  TensorParallelLM(std::vector<std::unique_ptr<CausalLM>> ranks, std::span<Backend* const> backends,
                   std::vector<DecoderShard> shards, int64_t num_parameters)
      : ranks_(std::move(ranks)),
        backends_(backends.begin(), backends.end()),
        shards_(std::move(shards)),
        num_parameters_(num_parameters),
        threads_(backends),
        rank_caches_(ranks_.size()),
        statuses_(ranks_.size()) {
    for (const auto& r : ranks_) weight_bytes_ += r->weight_bytes();
  }

  const ModelConfig& config() const override { return ranks_[0]->config(); }
  size_t weight_bytes() const override { return weight_bytes_; }
  int64_t num_parameters() const override { return num_parameters_; }
  size_t kv_bytes_per_token(DType kv_dtype) const override {
    size_t bytes = 0;
    for (const auto& r : ranks_) bytes += r->kv_bytes_per_token(kv_dtype);
    return bytes;
  }

  // The whole adapter read once, each rank's slices placed on its backend.
  StatusOr<std::shared_ptr<const LoraAdapter>> LoadLora(const std::string& dir,
                                                        int max_lora_rank) override {
    XI_ASSIGN_OR_RETURN(std::shared_ptr<LoraAdapter> whole,
                        ReadLoraAdapter(dir, config(), max_lora_rank));
    auto adapter = std::make_shared<LoraAdapter>();
    adapter->path = whole->path;
    adapter->rank = whole->rank;
    for (size_t r = 0; r < ranks_.size(); ++r) {
      LoraAdapter part;
      part.layers = ShardLoraLayers(*whole, shards_[r], config());
      PlaceLoraAdapter(part, *backends_[r]);
      adapter->bytes += part.bytes;
      adapter->shards.push_back(std::move(part.layers));
    }
    return std::shared_ptr<const LoraAdapter>(std::move(adapter));
  }

  // The ranks' per-layer tensors one after another: rank r's layers at [r * L, (r + 1) * L).
  PagedKvCache NewKvCache(int32_t num_blocks, int32_t block_size, DType kv_dtype) override {
    PagedKvCache cache;
    for (const auto& r : ranks_) {
      PagedKvCache part = r->NewKvCache(num_blocks, block_size, kv_dtype);
      cache.k.insert(cache.k.end(), part.k.begin(), part.k.end());
      cache.v.insert(cache.v.end(), part.v.begin(), part.v.end());
      cache.num_blocks = part.num_blocks;
      cache.block_size = part.block_size;
      cache.dtype = part.dtype;
    }
    return cache;
  }

  Status Forward(const ForwardBatch& batch, PagedKvCache& cache, Tensor& logits) override {
    const size_t layers = static_cast<size_t>(config().num_hidden_layers);
    if (cache.k.size() != layers * ranks_.size() || cache.v.size() != cache.k.size())
      return Internal("the KV cache was not made by this tensor-parallel model");
    // Each rank's view of its layers, rebuilt only when the runner hands in another cache (the
    // views keep the last one's buffers alive, so a new cache never takes its address).
    if (views_of_ != cache.k.front().raw()) {
      for (size_t r = 0; r < ranks_.size(); ++r) {
        PagedKvCache& view = rank_caches_[r];
        view = PagedKvCache{};
        view.k.assign(cache.k.begin() + r * layers, cache.k.begin() + (r + 1) * layers);
        view.v.assign(cache.v.begin() + r * layers, cache.v.begin() + (r + 1) * layers);
        view.num_blocks = cache.num_blocks;
        view.block_size = cache.block_size;
        view.dtype = cache.dtype;
      }
      views_of_ = cache.k.front().raw();
    }
    // Every rank validates the same batch first, so all of them fail (before any collective) or
    // none does.
    threads_.Run([&](int r) { statuses_[r] = ranks_[r]->Forward(batch, rank_caches_[r], logits); });
    for (const Status& s : statuses_) XI_RETURN_IF_ERROR(s);
    return Status::Ok();
  }

 private:
  std::vector<std::unique_ptr<CausalLM>> ranks_;
  std::vector<Backend*> backends_;
  std::vector<DecoderShard> shards_;
  int64_t num_parameters_ = 0;
  size_t weight_bytes_ = 0;
  RankThreads threads_;
  std::vector<PagedKvCache> rank_caches_;
  const void* views_of_ = nullptr;
  std::vector<Status> statuses_;
};

}  // namespace

StatusOr<std::unique_ptr<CausalLM>> LoadCausalLM(const std::string& model_dir,
                                                 std::span<Backend* const> ranks,
                                                 Communicator& comm,
                                                 const ModelLoadOptions& options) {
  XI_CHECK_MSG(!ranks.empty() && static_cast<int>(ranks.size()) == comm.size(),
               "one backend per rank of the communicator");
  if (ranks.size() == 1) return LoadCausalLM(model_dir, *ranks[0], options);
  XI_ASSIGN_OR_RETURN(DecoderModelParts parts, LoadDecoderParts(model_dir, options.hf_overrides));
  const int size = static_cast<int>(ranks.size());
  std::vector<DecoderShard> shards;
  for (int r = 0; r < size; ++r) {
    auto shard = PlanDecoderShard(parts.config, parts.weights, r, size);
    if (!shard.ok()) return shard.status().WithContext(model_dir);
    shards.push_back(*shard);
    shards.back().comm = &comm;
  }
  const int64_t num_parameters = DecoderParameterCount(parts.weights);
  std::vector<std::unique_ptr<CausalLM>> models;
  for (int r = 0; r < size; ++r) {
    const DecoderShard& s = shards[r];
    XI_LOG_INFO(
        "tensor parallel rank {}/{}: query heads [{}, {}), key-value heads [{}, {}), "
        "intermediate [{}, {}), vocabulary [{}, {})",
        r, size, s.q_head_begin, s.q_head_begin + s.q_heads, s.kv_head_begin,
        s.kv_head_begin + s.kv_heads, s.intermediate_begin, s.intermediate_begin + s.intermediate,
        s.vocab_begin, s.vocab_end);
    models.push_back(CreateDecoderLM(parts.config, parts.spec,
                                     ShardDecoderWeights(parts.weights, s, parts.config), s,
                                     *ranks[r], options));
  }
  return std::unique_ptr<CausalLM>(
      std::make_unique<TensorParallelLM>(std::move(models), ranks, std::move(shards),
                                         num_parameters));
}

}  // namespace xinfer
