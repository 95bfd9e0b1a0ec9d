#include "model/layers/decoder_shard.h"

#include <numeric>

namespace xinfer {
namespace {

// [total * rank / size, total * (rank + 1) / size) in whole units.
std::pair<int64_t, int64_t> EvenSplit(int64_t units, int rank, int size) {
  return {units * rank / size, units * (rank + 1) / size};
}

Tensor SliceOrEmpty(const Tensor& t, int64_t begin, int64_t end) {
  return t.empty() ? Tensor() : t.Slice0(begin, end);
}

}  // namespace

DecoderShard WholeDecoder(const ModelConfig& config) {
  DecoderShard s;
  s.q_heads = config.num_attention_heads;
  s.kv_heads = config.num_key_value_heads;
  s.intermediate = config.intermediate_size;
  s.vocab_end = config.vocab_size;
  return s;
}

StatusOr<DecoderShard> PlanDecoderShard(const ModelConfig& config, const DecoderWeights& weights,
                                        int rank, int size) {
  XI_CHECK(size >= 1 && rank >= 0 && rank < size);
  DecoderShard s = WholeDecoder(config);
  s.rank = rank;
  s.size = size;
  if (size == 1) return s;
  if (config.is_moe())
    return InvalidArgument(
        "tensor_parallel_size {}: {}'s experts are not split across ranks; serve it with "
        "tensor_parallel_size 1 (replicas: --data-parallel-size)",
        size, config.architecture);
  const int64_t hq = config.num_attention_heads, hkv = config.num_key_value_heads;
  if (hq % size != 0)
    return InvalidArgument("tensor_parallel_size {} must divide the model's {} attention heads",
                           size, hq);
  if (hkv % size != 0 && size % hkv != 0)
    return InvalidArgument(
        "tensor_parallel_size {} must divide the model's {} key-value heads or be a multiple of "
        "them",
        size, hkv);
  s.q_heads = hq / size;
  s.q_head_begin = s.q_heads * rank;
  s.kv_heads = std::max<int64_t>(1, hkv / size);
  s.kv_head_begin = hkv * rank / size;  // with more ranks than kv heads, the one its queries use

  // o_proj and down_proj are cut along their input features: at head boundaries for o_proj,
  // anywhere on the blocks' (or AWQ groups') grid for down_proj.
  const int64_t head_features = s.q_heads * config.head_dim;
  int64_t unit = 1;
  for (size_t l = 0; l < weights.layers.size(); ++l) {
    const DecoderLayerWeights& lw = weights.layers[l];
    const int64_t o_unit = lw.o_proj.ColumnGranularity();
    if (head_features % o_unit != 0)
      return InvalidArgument(
          "tensor_parallel_size {}: layer {}'s o_proj ({}) is quantized in blocks of {} input "
          "features, which slices of {} features ({} heads) per rank would cut",
          size, l, lw.o_proj.TypeName(), o_unit, head_features, s.q_heads);
    unit = std::lcm(unit, lw.down_proj.ColumnGranularity());
  }
  const int64_t units = config.intermediate_size / unit;
  if (config.intermediate_size % unit != 0 || units < size)
    return InvalidArgument(
        "tensor_parallel_size {}: the model's {} intermediate features are quantized in blocks of "
        "{}, fewer blocks than ranks",
        size, config.intermediate_size, unit);
  const auto [i0, i1] = EvenSplit(units, rank, size);
  s.intermediate_begin = i0 * unit;
  s.intermediate = (i1 - i0) * unit;
  if (config.vocab_size < size)
    return InvalidArgument("tensor_parallel_size {} exceeds the vocabulary ({} tokens)", size,
                           config.vocab_size);
  std::tie(s.vocab_begin, s.vocab_end) = EvenSplit(config.vocab_size, rank, size);
  return s;
}

DecoderWeights ShardDecoderWeights(const DecoderWeights& full, const DecoderShard& shard,
                                   const ModelConfig& config) {
  if (shard.whole()) return full;
  const int64_t d = config.head_dim;
  const int64_t q0 = shard.q_head_begin * d, q1 = q0 + shard.q_heads * d;
  const int64_t kv0 = shard.kv_head_begin * d, kv1 = kv0 + shard.kv_heads * d;
  const int64_t i0 = shard.intermediate_begin, i1 = i0 + shard.intermediate;
  DecoderWeights w;
  w.embed_tokens = full.embed_tokens.Rows(shard.vocab_begin, shard.vocab_end);
  w.lm_head = full.lm_head.SameStorage(full.embed_tokens)
                  ? w.embed_tokens
                  : full.lm_head.Rows(shard.vocab_begin, shard.vocab_end);
  w.final_norm = full.final_norm;
  for (const DecoderLayerWeights& f : full.layers) {
    DecoderLayerWeights& l = w.layers.emplace_back();
    l.input_norm = f.input_norm;
    l.post_attention_norm = f.post_attention_norm;
    l.q_norm = f.q_norm;
    l.k_norm = f.k_norm;
    l.q_proj = f.q_proj.Rows(q0, q1);
    l.k_proj = f.k_proj.Rows(kv0, kv1);
    l.v_proj = f.v_proj.Rows(kv0, kv1);
    l.q_bias = SliceOrEmpty(f.q_bias, q0, q1);
    l.k_bias = SliceOrEmpty(f.k_bias, kv0, kv1);
    l.v_bias = SliceOrEmpty(f.v_bias, kv0, kv1);
    l.o_proj = f.o_proj.Columns(q0, q1);
    if (shard.rank == 0) l.o_bias = f.o_bias;
    l.gate_proj = f.gate_proj.Rows(i0, i1);
    l.up_proj = f.up_proj.Rows(i0, i1);
    l.down_proj = f.down_proj.Columns(i0, i1);
  }
  return w;
}

}  // namespace xinfer
