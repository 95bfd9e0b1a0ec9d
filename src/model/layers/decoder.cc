#include "model/layers/decoder.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/logging.h"
#include "model/layers/decoder_shard.h"
#include "model/layers/moe.h"
#include "model/layers/rope_scaling.h"
#include "model/lora.h"

namespace xinfer {
namespace {

const Tensor* OrNull(const Tensor& t) { return t.empty() ? nullptr : &t; }

class DecoderLM : public CausalLM {
 public:
  // The weights' Tensors keep their memory (mapped files or repacked copies) alive.
  // `shard`: the part of the model this object computes (WholeDecoder: all of it).
  DecoderLM(ModelConfig config, DecoderSpec spec, DecoderWeights weights, DecoderShard shard,
            Backend& backend)
      : config_(std::move(config)),
        spec_(spec),
        rope_(MakeRopeSpec(config_)),
        shard_(shard),
        w_(std::move(weights)),
        backend_(backend),
        weight_bytes_(DecoderWeightBytes(w_)),
        num_parameters_(DecoderParameterCount(w_)) {
    EnsureArena(kInitialArenaTokens);
  }

  const ModelConfig& config() const override { return config_; }
  size_t weight_bytes() const override { return weight_bytes_; }
  int64_t num_parameters() const override { return num_parameters_; }

  size_t kv_bytes_per_token(DType kv_dtype) const override {
    return static_cast<size_t>(config_.num_hidden_layers) * 2 * shard_.kv_heads * config_.head_dim *
           DTypeSize(kv_dtype);
  }

  StatusOr<std::shared_ptr<const LoraAdapter>> LoadLora(const std::string& dir,
                                                        int max_lora_rank) override {
    XI_CHECK_MSG(shard_.whole(), "a tensor-parallel rank's adapters come from its model");
    return LoadLoraAdapter(dir, config_, max_lora_rank, backend_);
  }

  PagedKvCache NewKvCache(int32_t num_blocks, int32_t block_size, DType kv_dtype) override {
    XI_CHECK_MSG(IsSupportedKvCacheDType(kv_dtype), "unsupported KV cache dtype");
    PagedKvCache cache;
    cache.num_blocks = num_blocks;
    cache.block_size = block_size;
    cache.dtype = kv_dtype;
    const int64_t slots = cache.num_slots();
    for (int l = 0; l < config_.num_hidden_layers; ++l) {
      cache.k.push_back(backend_.NewTensor(kv_dtype, {slots, shard_.kv_heads, config_.head_dim}));
      cache.v.push_back(backend_.NewTensor(kv_dtype, {slots, shard_.kv_heads, config_.head_dim}));
    }
    return cache;
  }

  Status Forward(const ForwardBatch& batch, PagedKvCache& cache, Tensor& logits) override {
    XI_RETURN_IF_ERROR(Validate(batch, cache, logits));
    const int64_t t = static_cast<int64_t>(batch.token_ids.size());
    Ops& ops = backend_.ops();
    EnsureArena(t);
    Tensor x = arena_.x.Slice0(0, t);
    Tensor normed = arena_.normed.Slice0(0, t);
    Tensor q = arena_.q.Slice0(0, t);
    Tensor k = arena_.k.Slice0(0, t);
    Tensor v = arena_.v.Slice0(0, t);
    Tensor attn = arena_.attn.Slice0(0, t);
    Tensor proj = arena_.proj.Slice0(0, t);
    Tensor gate = arena_.gate.Slice0(0, t);
    Tensor up = arena_.up.Slice0(0, t);
    const float eps = static_cast<float>(config_.rms_norm_eps);
    const Ops::PagedAttentionBatch paged{batch.query_start, batch.positions, batch.block_tables,
                                         batch.max_blocks_per_seq, cache.block_size};
    GroupLoraRows(batch);

    Embed(batch.token_ids, x);
    for (int l = 0; l < config_.num_hidden_layers; ++l) {
      const DecoderLayerWeights& lw = w_.layers[l];
      ops.RmsNorm(x, lw.input_norm, eps, normed);
      const Ops::LinearOut qkv[] = {{&lw.q_proj, OrNull(lw.q_bias), &q},
                                    {&lw.k_proj, OrNull(lw.k_bias), &k},
                                    {&lw.v_proj, OrNull(lw.v_bias), &v}};
      ops.LinearMany(normed, qkv);
      if (num_lora_groups_ > 0) {
        // 2-D views of q / k / v (no copy; made only on a LoRA step: a Shape allocates).
        Tensor q2 = q.Reshaped({t, q.dim(1) * q.dim(2)}), k2 = k.Reshaped({t, k.dim(1) * k.dim(2)}),
               v2 = v.Reshaped({t, v.dim(1) * v.dim(2)});
        const LoraOut outs[] = {{kLoraQ, &q2}, {kLoraK, &k2}, {kLoraV, &v2}};
        ApplyLora(ops, normed, l, outs);
      }
      if (spec_.qk_norm) {
        ops.RmsNorm(q, lw.q_norm, eps, q);
        ops.RmsNorm(k, lw.k_norm, eps, k);
      }
      ops.Rope(q, batch.positions, rope_);
      ops.Rope(k, batch.positions, rope_);
      ops.WriteKvSlots(k, v, batch.slot_mapping, cache.k[l], cache.v[l]);
      ops.PagedAttention(q, cache.k[l], cache.v[l], paged, attn);
      ops.Linear(attn, lw.o_proj, OrNull(lw.o_bias), proj);
      if (num_lora_groups_ > 0) {
        const LoraOut outs[] = {{kLoraO, &proj}};
        ApplyLora(ops, attn.Reshaped({t, attn.dim(1) * attn.dim(2)}), l, outs);
      }
      AllReduce(proj);
      ops.Add(x, proj, x);
      ops.RmsNorm(x, lw.post_attention_norm, eps, normed);
      if (lw.sparse()) {
        Experts(ops, normed, lw, proj);
      } else {
        const Ops::LinearOut gate_up[] = {{&lw.gate_proj, nullptr, &gate},
                                          {&lw.up_proj, nullptr, &up}};
        ops.LinearMany(normed, gate_up);
        if (num_lora_groups_ > 0) {
          const LoraOut outs[] = {{kLoraGate, &gate}, {kLoraUp, &up}};
          ApplyLora(ops, normed, l, outs);
        }
        ops.SiluMul(gate, up, gate);
        ops.Linear(gate, lw.down_proj, nullptr, proj);
        if (num_lora_groups_ > 0) {
          const LoraOut outs[] = {{kLoraDown, &proj}};
          ApplyLora(ops, gate, l, outs);
        }
      }
      AllReduce(proj);
      ops.Add(x, proj, x);
    }
    // Only the rows that will be sampled go through the final norm and the lm_head.
    const int64_t n_out = static_cast<int64_t>(batch.logits_rows.size());
    if (n_out == 0) return Status::Ok();
    Tensor picked = arena_.picked.Slice0(0, n_out);
    for (int64_t i = 0; i < n_out; ++i)
      ops.CopyRows(x.Slice0(batch.logits_rows[i], batch.logits_rows[i] + 1), picked, i);
    Tensor picked_normed = normed.Slice0(0, n_out);
    ops.RmsNorm(picked, w_.final_norm, eps, picked_normed);
    if (batch.hidden_states) {
      // Every rank holds the whole hidden state: the first writes it.
      if (shard_.rank == 0) ops.CopyRows(picked_normed, logits, 0);
      return Status::Ok();
    }
    if (shard_.whole()) {
      ops.Linear(picked_normed, w_.lm_head, nullptr, logits);
    } else {  // this rank's vocabulary columns, through rows grown to the most ever sampled
      if (local_logits_.empty() || local_logits_.dim(0) < n_out)
        local_logits_ =
            backend_.NewTensor(DType::kF32, {n_out, shard_.vocab_end - shard_.vocab_begin});
      Tensor local = local_logits_.Slice0(0, n_out);
      ops.Linear(picked_normed, w_.lm_head, nullptr, local);
      ops.CopyColumns(local, logits, shard_.vocab_begin);
    }
    return Status::Ok();
  }

 private:
  // LoRA: this step's sequences grouped by adapter, each group the token rows of its sequences
  // (in batch order). Vectors reused across steps; the first num_lora_groups_ are live.
  struct LoraGroup {
    const LoraAdapter* adapter = nullptr;
    std::vector<int32_t> rows;
    std::vector<float> ones;  // ScatterAddRows' weights
    bool all_rows = false;    // every row of the batch: no gather / scatter needed
  };
  struct LoraOut {
    int target;
    Tensor* out;  // 2-D [T, out features]
  };

  void GroupLoraRows(const ForwardBatch& b) {
    num_lora_groups_ = 0;
    int rank = 0;
    for (size_t s = 0; s < b.loras.size(); ++s) {
      const LoraAdapter* a = b.loras[s];
      if (a == nullptr) continue;
      size_t g = 0;
      while (g < num_lora_groups_ && lora_groups_[g].adapter != a) ++g;
      if (g == num_lora_groups_) {
        if (lora_groups_.size() == g) lora_groups_.emplace_back();
        lora_groups_[g].adapter = a;
        lora_groups_[g].rows.clear();
        ++num_lora_groups_;
        rank = std::max(rank, a->rank);
      }
      for (int32_t r = b.query_start[s]; r < b.query_start[s + 1]; ++r)
        lora_groups_[g].rows.push_back(r);
    }
    if (num_lora_groups_ == 0) return;
    const auto t = static_cast<int64_t>(b.token_ids.size());
    for (size_t g = 0; g < num_lora_groups_; ++g) {
      LoraGroup& grp = lora_groups_[g];
      grp.ones.assign(grp.rows.size(), 1.f);
      grp.all_rows = static_cast<int64_t>(grp.rows.size()) == t;
    }
    // Scratch for a group's gathered input, its [rows, r] middle and its delta: grown only when
    // a step needs more than any before.
    const int64_t widest = std::max<int64_t>(
        {config_.hidden_size, shard_.q_heads * config_.head_dim, shard_.intermediate});
    auto grow = [&](Tensor& buf, int64_t n) {
      if (buf.empty() || buf.numel() < n) buf = backend_.NewTensor(DType::kF32, {n});
    };
    grow(lora_x_, t * widest);
    grow(lora_mid_, t * rank);
    grow(lora_delta_, t * widest);
  }

  // A view of the first rows x cols floats of a scratch buffer.
  static Tensor Scratch(const Tensor& buf, int64_t rows, int64_t cols) {
    return Tensor(buf.buffer(), 0, DType::kF32, {rows, cols});
  }

  // outs[i].out += each group's delta (x A^T) B^T of outs[i].target on its rows; x is the
  // projections' input (2-D [T, in]).
  void ApplyLora(Ops& ops, const Tensor& x, int layer, std::span<const LoraOut> outs) {
    for (size_t g = 0; g < num_lora_groups_; ++g) {
      const LoraGroup& grp = lora_groups_[g];
      const auto& pairs = grp.adapter->LayersFor(shard_.rank)[layer];
      if (std::none_of(outs.begin(), outs.end(),
                       [&](const LoraOut& o) { return !pairs[o.target].empty(); }))
        continue;
      const auto n = static_cast<int64_t>(grp.rows.size());
      Tensor xg = x;
      if (!grp.all_rows) {
        xg = Scratch(lora_x_, n, x.dim(1));
        ops.GatherRows(x, grp.rows, xg);
      }
      for (const LoraOut& o : outs) {
        const LoraPair& p = pairs[o.target];
        if (p.empty()) continue;
        Tensor mid = Scratch(lora_mid_, n, p.a.dim(0));
        Tensor delta = Scratch(lora_delta_, n, o.out->dim(1));
        ops.Linear(xg, p.a, nullptr, mid);
        ops.Linear(mid, p.b, nullptr, delta);
        if (grp.all_rows) {
          ops.Add(*o.out, delta, *o.out);
        } else {
          ops.ScatterAddRows(delta, grp.rows, grp.ones, *o.out);
        }
      }
    }
  }

  // A sparse layer's MLP: the router picks each token's experts (on the host, as the sampler reads
  // logits); every (token, expert) pick is a row, grouped by expert, so that one gather, one job
  // for all the experts' gate and up, one SiLU·mul, one job for their down and one scatter-add do
  // the layer (a few ops, not five per expert); `out` sums each token's expert outputs by the
  // routing weights in expert order (so a token's result does not depend on its batch).
  void Experts(Ops& ops, const Tensor& normed, const DecoderLayerWeights& lw, Tensor& out) {
    const int64_t t = normed.dim(0);
    Tensor logits = arena_.router.Slice0(0, t);
    ops.Linear(normed, lw.router, nullptr, logits);
    RouteTokens({logits.data<float>(), static_cast<size_t>(logits.numel())}, config_.num_experts,
                config_.num_experts_per_tok, config_.norm_topk_prob, routing_);
    const auto picks = static_cast<int64_t>(routing_.tokens.size());
    Tensor xe = arena_.expert_x.Slice0(0, picks);
    Tensor gate = arena_.expert_gate.Slice0(0, picks);
    Tensor up = arena_.expert_up.Slice0(0, picks);
    Tensor ye = arena_.expert_out.Slice0(0, picks);
    ops.GatherRows(normed, routing_.tokens, xe);
    gate_up_groups_.clear();
    down_groups_.clear();
    for (int e = 0; e < config_.num_experts; ++e) {
      const int64_t b = routing_.begin[e], end = routing_.begin[e + 1];
      if (b == end) continue;
      const ExpertWeights& ew = lw.experts[e];
      gate_up_groups_.push_back({&ew.gate_proj, &gate, b, end});
      gate_up_groups_.push_back({&ew.up_proj, &up, b, end});
      down_groups_.push_back({&ew.down_proj, &ye, b, end});
    }
    ops.LinearRowGroups(xe, gate_up_groups_);
    ops.SiluMul(gate, up, gate);
    ops.LinearRowGroups(gate, down_groups_);
    std::memset(out.raw(), 0, out.size_bytes());
    ops.ScatterAddRows(ye, routing_.tokens, routing_.weights, out);
    if (!lw.shared_expert_gate.empty()) SharedExpert(ops, normed, lw, out);
  }

  // Qwen2-MoE's shared expert: every token's SwiGLU of the shared weights, scaled by the sigmoid
  // of its gate logit (read on the host, as the router's), added after the routed experts' sum.
  void SharedExpert(Ops& ops, const Tensor& normed, const DecoderLayerWeights& lw, Tensor& out) {
    const int64_t t = normed.dim(0);
    Tensor gate = arena_.shared_gate.Slice0(0, t), up = arena_.shared_up.Slice0(0, t);
    Tensor y = arena_.expert_out.Slice0(0, t), logit = arena_.shared_logit.Slice0(0, t);
    const ExpertWeights& se = lw.shared_expert;
    const Ops::LinearOut gate_up[] = {{&se.gate_proj, nullptr, &gate}, {&se.up_proj, nullptr, &up}};
    ops.LinearMany(normed, gate_up);
    ops.SiluMul(gate, up, gate);
    ops.Linear(gate, se.down_proj, nullptr, y);
    ops.Linear(normed, lw.shared_expert_gate, nullptr, logit);
    shared_rows_.resize(static_cast<size_t>(t));
    shared_scale_.resize(static_cast<size_t>(t));
    for (int64_t i = 0; i < t; ++i) {
      shared_rows_[i] = static_cast<int32_t>(i);
      shared_scale_[i] = 1.f / (1.f + std::exp(-logit.data<float>()[i]));
    }
    ops.ScatterAddRows(y, shared_rows_, shared_scale_, out);
  }

  // Activations of one step, sized for `capacity` tokens. Allocated when the model is built and
  // regrown only when a step has more tokens than any before (the first long prefill), so the
  // steady state allocates no activation memory: Forward only takes views of these.
  struct Arena {
    int64_t capacity = 0;
    Tensor x, normed, q, k, v, attn, proj, gate, up, picked;
    Tensor router, expert_x, expert_gate, expert_up, expert_out;  // mixture-of-experts models
    Tensor shared_gate, shared_up, shared_logit;                  // their shared expert
  };
  static constexpr int64_t kInitialArenaTokens = 256;

  void EnsureArena(int64_t tokens) {
    if (tokens <= arena_.capacity) return;
    const int64_t cap =
        std::max<int64_t>({tokens, kInitialArenaTokens, (tokens + 255) / 256 * 256});
    const int64_t h = config_.hidden_size, d = config_.head_dim;
    const int64_t hq = shard_.q_heads, hkv = shard_.kv_heads;
    arena_ = Arena{};  // free the old buffers before allocating the larger ones
    arena_.capacity = cap;
    arena_.x = backend_.NewTensor(DType::kF32, {cap, h});
    arena_.normed = backend_.NewTensor(DType::kF32, {cap, h});
    arena_.q = backend_.NewTensor(DType::kF32, {cap, hq, d});
    arena_.k = backend_.NewTensor(DType::kF32, {cap, hkv, d});
    arena_.v = backend_.NewTensor(DType::kF32, {cap, hkv, d});
    arena_.attn = backend_.NewTensor(DType::kF32, {cap, hq, d});
    arena_.proj = backend_.NewTensor(DType::kF32, {cap, h});
    arena_.gate = backend_.NewTensor(DType::kF32, {cap, shard_.intermediate});
    arena_.up = backend_.NewTensor(DType::kF32, {cap, shard_.intermediate});
    arena_.picked = backend_.NewTensor(DType::kF32, {cap, h});
    if (config_.is_moe()) {
      const int64_t e = config_.moe_intermediate_size;
      const int64_t picks = cap * config_.num_experts_per_tok;  // a row per (token, expert)
      arena_.router = backend_.NewTensor(DType::kF32, {cap, config_.num_experts});
      arena_.expert_x = backend_.NewTensor(DType::kF32, {picks, h});
      arena_.expert_gate = backend_.NewTensor(DType::kF32, {picks, e});
      arena_.expert_up = backend_.NewTensor(DType::kF32, {picks, e});
      arena_.expert_out = backend_.NewTensor(DType::kF32, {picks, h});
      if (const int64_t s = config_.shared_expert_intermediate_size; s > 0) {
        arena_.shared_gate = backend_.NewTensor(DType::kF32, {cap, s});
        arena_.shared_up = backend_.NewTensor(DType::kF32, {cap, s});
        arena_.shared_logit = backend_.NewTensor(DType::kF32, {cap, 1});
      }
    }
    if (!shard_.whole() && zero_row_.empty()) zero_row_ = backend_.NewTensor(DType::kF32, {1, h});
  }

  // x = the embedding of `ids`. A shard holds the rows of its vocabulary slice: it looks up the
  // ids in it, zeroes the other rows, and the all-reduce adds the ranks' rows (exactly: one is
  // the row, the others zero).
  void Embed(std::span<const int32_t> ids, Tensor& x) {
    Ops& ops = backend_.ops();
    if (shard_.whole()) {
      ops.Embedding(w_.embed_tokens, ids, x);
      return;
    }
    local_ids_.resize(ids.size());
    auto mine = [&](int32_t id) { return id >= shard_.vocab_begin && id < shard_.vocab_end; };
    for (size_t t = 0; t < ids.size(); ++t)
      local_ids_[t] = mine(ids[t]) ? static_cast<int32_t>(ids[t] - shard_.vocab_begin) : 0;
    ops.Embedding(w_.embed_tokens, local_ids_, x);
    for (size_t t = 0; t < ids.size(); ++t)
      if (!mine(ids[t])) ops.CopyRows(zero_row_, x, static_cast<int64_t>(t));
    AllReduce(x);
  }

  // Adds up the ranks' partial sums of a row-parallel result (no-op for the whole model).
  void AllReduce(Tensor& partial) {
    if (!shard_.whole()) shard_.comm->AllReduceSum(shard_.rank, partial);
  }

  // Everything in a batch comes from the runner; ids come from clients, so they are checked.
  Status Validate(const ForwardBatch& b, const PagedKvCache& cache, const Tensor& logits) const {
    const size_t t = b.token_ids.size();
    if (t == 0) return InvalidArgument("empty batch");
    if (b.positions.size() != t || b.slot_mapping.size() != t)
      return Internal("batch arrays disagree in length");
    if (b.query_start.size() < 2 || b.query_start.front() != 0 ||
        b.query_start.back() != static_cast<int32_t>(t))
      return Internal("query_start does not cover the batch");
    const size_t seqs = b.query_start.size() - 1;
    if (b.max_blocks_per_seq <= 0 || b.block_tables.size() != seqs * b.max_blocks_per_seq)
      return Internal("block_tables has the wrong size");
    for (size_t s = 0; s < seqs; ++s)
      if (b.query_start[s] > b.query_start[s + 1]) return Internal("query_start not sorted");
    for (size_t i = 0; i < t; ++i) {
      if (b.token_ids[i] < 0 || b.token_ids[i] >= config_.vocab_size)
        return InvalidArgument("token id {} is outside the vocabulary [0, {})", b.token_ids[i],
                               config_.vocab_size);
      if (b.positions[i] < 0 ||
          b.positions[i] >= static_cast<int64_t>(b.max_blocks_per_seq) * cache.block_size)
        return Internal("position {} beyond the block table", b.positions[i]);
      if (b.slot_mapping[i] < 0 || b.slot_mapping[i] >= cache.num_slots())
        return Internal("slot {} outside the cache", b.slot_mapping[i]);
    }
    for (int32_t blk : b.block_tables)
      if (blk < 0 || blk >= cache.num_blocks) return Internal("block id {} outside the cache", blk);
    for (int32_t r : b.logits_rows)
      if (r < 0 || r >= static_cast<int32_t>(t)) return Internal("logits row {} out of range", r);
    if (!b.loras.empty()) {
      if (b.loras.size() != seqs) return Internal("loras has the wrong size");
      for (const LoraAdapter* a : b.loras) {
        if (a == nullptr) continue;
        if (a->shards.size() != (shard_.whole() ? 0u : static_cast<size_t>(shard_.size)))
          return Internal("a LoRA adapter not split for this model's ranks");
        if (a->LayersFor(shard_.rank).size() != static_cast<size_t>(config_.num_hidden_layers))
          return Internal("a LoRA adapter for another model");
      }
    }
    const int64_t width = b.hidden_states ? config_.hidden_size : config_.vocab_size;
    if (logits.dtype() != DType::kF32 ||
        logits.numel() != static_cast<int64_t>(b.logits_rows.size()) * width)
      return Internal("logits tensor has the wrong size");
    return Status::Ok();
  }

  ModelConfig config_;
  DecoderSpec spec_;
  RopeSpec rope_;
  DecoderShard shard_;
  DecoderWeights w_;
  Backend& backend_;
  size_t weight_bytes_ = 0;
  int64_t num_parameters_ = 0;
  MoeRouting routing_;  // the sparse layers' scratch, reused
  std::vector<Ops::RowGroupLinear> gate_up_groups_, down_groups_;  // likewise
  std::vector<int32_t> shared_rows_;                               // likewise: 0, 1, ..., T - 1
  std::vector<float> shared_scale_;                                // the shared expert's gates
  std::vector<LoraGroup> lora_groups_;
  size_t num_lora_groups_ = 0;
  Tensor lora_x_, lora_mid_, lora_delta_;  // LoRA scratch (flat F32), see GroupLoraRows
  Arena arena_;
  Tensor zero_row_;                 // [1, hidden] zeros (shards only)
  Tensor local_logits_;             // a shard's vocabulary slice of the sampled rows' logits
  std::vector<int32_t> local_ids_;  // ids within this shard's vocabulary slice
};

}  // namespace

std::unique_ptr<CausalLM> CreateDecoderLM(ModelConfig config, DecoderSpec spec,
                                          DecoderWeights weights, Backend& backend,
                                          const ModelLoadOptions& options) {
  const DecoderShard whole = WholeDecoder(config);
  return CreateDecoderLM(std::move(config), spec, std::move(weights), whole, backend, options);
}

std::unique_ptr<CausalLM> CreateDecoderLM(ModelConfig config, DecoderSpec spec,
                                          DecoderWeights weights, const DecoderShard& shard,
                                          Backend& backend, const ModelLoadOptions& options) {
  if (options.bf16_weights) {
    const size_t converted = ConvertDenseWeightsToBf16(weights, backend);
    if (converted > 0)
      XI_LOG_INFO("--dtype bfloat16: {:.1f} MB of F16/F32 weights converted to BF16",
                  converted / 1e6);
  }
  WidenVectorsToF32(weights);
  PlaceDecoderWeights(weights, backend);
  return std::make_unique<DecoderLM>(std::move(config), spec, std::move(weights), shard, backend);
}

}  // namespace xinfer
