#include "model/layers/decoder.h"

#include <numeric>

namespace xinfer {
namespace {

const Tensor* OrNull(const Tensor& t) { return t.empty() ? nullptr : &t; }

class DecoderLM : public CausalLM {
 public:
  DecoderLM(ModelConfig config, DecoderSpec spec, std::unique_ptr<WeightStore> store,
            DecoderWeights weights, Backend& backend)
      : config_(std::move(config)),
        spec_(spec),
        store_(std::move(store)),
        w_(std::move(weights)),
        backend_(backend) {
    for (const auto& name : store_->Names()) {
      const TensorInfo* info = store_->Find(name);
      weight_bytes_ += info->size;
      num_parameters_ += NumElements(info->shape);
    }
  }

  const ModelConfig& config() const override { return config_; }
  size_t weight_bytes() const override { return weight_bytes_; }
  int64_t num_parameters() const override { return num_parameters_; }

  KvCache NewKvCache(int64_t capacity) override {
    KvCache cache;
    cache.capacity = capacity;
    for (int l = 0; l < config_.num_hidden_layers; ++l) {
      cache.k.push_back(backend_.NewTensor(
          DType::kF32, {capacity, config_.num_key_value_heads, config_.head_dim}));
      cache.v.push_back(backend_.NewTensor(
          DType::kF32, {capacity, config_.num_key_value_heads, config_.head_dim}));
    }
    return cache;
  }

  Status Forward(std::span<const int32_t> tokens, KvCache& cache,
                 std::span<float> logits) override {
    const int64_t t = static_cast<int64_t>(tokens.size());
    if (t == 0) return InvalidArgument("no tokens to run");
    for (int32_t id : tokens)
      if (id < 0 || id >= config_.vocab_size)
        return InvalidArgument("token id {} is outside the vocabulary [0, {})", id,
                               config_.vocab_size);
    if (cache.length + t > cache.capacity)
      return OutOfRange("sequence of {} tokens exceeds the KV cache capacity {}",
                        cache.length + t, cache.capacity);
    if (static_cast<int64_t>(logits.size()) != config_.vocab_size)
      return Internal("logits span has {} entries, vocab is {}", logits.size(),
                      config_.vocab_size);

    Ops& ops = backend_.ops();
    const int64_t h = config_.hidden_size, d = config_.head_dim;
    const int64_t hq = config_.num_attention_heads, hkv = config_.num_key_value_heads;
    const int64_t start = cache.length;
    std::vector<int32_t> positions(t);
    std::iota(positions.begin(), positions.end(), static_cast<int32_t>(start));

    Tensor x = backend_.NewTensor(DType::kF32, {t, h});
    Tensor normed = backend_.NewTensor(DType::kF32, {t, h});
    Tensor q = backend_.NewTensor(DType::kF32, {t, hq, d});
    Tensor k = backend_.NewTensor(DType::kF32, {t, hkv, d});
    Tensor v = backend_.NewTensor(DType::kF32, {t, hkv, d});
    Tensor attn = backend_.NewTensor(DType::kF32, {t, hq, d});
    Tensor proj = backend_.NewTensor(DType::kF32, {t, h});
    Tensor gate = backend_.NewTensor(DType::kF32, {t, config_.intermediate_size});
    Tensor up = backend_.NewTensor(DType::kF32, {t, config_.intermediate_size});
    const float eps = static_cast<float>(config_.rms_norm_eps);

    ops.Embedding(w_.embed_tokens, tokens, x);
    for (int l = 0; l < config_.num_hidden_layers; ++l) {
      const DecoderLayerWeights& lw = w_.layers[l];
      ops.RmsNorm(x, lw.input_norm, eps, normed);
      ops.Linear(normed, lw.q_proj, OrNull(lw.q_bias), q);
      ops.Linear(normed, lw.k_proj, OrNull(lw.k_bias), k);
      ops.Linear(normed, lw.v_proj, OrNull(lw.v_bias), v);
      if (spec_.qk_norm) {
        ops.RmsNorm(q, lw.q_norm, eps, q);
        ops.RmsNorm(k, lw.k_norm, eps, k);
      }
      ops.Rope(q, positions, config_.rope_theta);
      ops.Rope(k, positions, config_.rope_theta);
      ops.CopyRows(k, cache.k[l], start);
      ops.CopyRows(v, cache.v[l], start);
      ops.Attention(q, cache.k[l].Slice0(0, start + t), cache.v[l].Slice0(0, start + t),
                    positions, attn);
      ops.Linear(attn, lw.o_proj, OrNull(lw.o_bias), proj);
      ops.Add(x, proj, x);
      ops.RmsNorm(x, lw.post_attention_norm, eps, normed);
      ops.Linear(normed, lw.gate_proj, nullptr, gate);
      ops.Linear(normed, lw.up_proj, nullptr, up);
      ops.SiluMul(gate, up, gate);
      ops.Linear(gate, lw.down_proj, nullptr, proj);
      ops.Add(x, proj, x);
    }
    // Only the last position is sampled, so only it goes through the final norm and lm_head.
    Tensor last = x.Slice0(t - 1, t);
    Tensor last_normed = normed.Slice0(0, 1);
    ops.RmsNorm(last, w_.final_norm, eps, last_normed);
    Tensor out = backend_.NewTensor(DType::kF32, {1, config_.vocab_size});
    ops.Linear(last_normed, w_.lm_head, nullptr, out);
    std::copy(out.data<float>(), out.data<float>() + config_.vocab_size, logits.begin());
    cache.length += t;
    return Status::Ok();
  }

 private:
  ModelConfig config_;
  DecoderSpec spec_;
  std::unique_ptr<WeightStore> store_;
  DecoderWeights w_;
  Backend& backend_;
  size_t weight_bytes_ = 0;
  int64_t num_parameters_ = 0;
};

}  // namespace

StatusOr<std::unique_ptr<CausalLM>> CreateDecoderLM(ModelConfig config, DecoderSpec spec,
                                                    std::unique_ptr<WeightStore> store,
                                                    Backend& backend) {
  XI_ASSIGN_OR_RETURN(DecoderWeights weights, LoadDecoderWeights(*store, config, spec));
  return std::unique_ptr<CausalLM>(
      new DecoderLM(std::move(config), spec, std::move(store), std::move(weights), backend));
}

}  // namespace xinfer
