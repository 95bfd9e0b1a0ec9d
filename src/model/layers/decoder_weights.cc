#include <fmt/core.h>

#include <map>
#include <memory>

#include "model/awq.h"
#include "model/layers/decoder.h"

namespace xinfer {
namespace {

Status CheckFloatDType(const std::string& name, const Tensor& t) {
  if (t.dtype() == DType::kF32 || t.dtype() == DType::kBF16 || t.dtype() == DType::kF16)
    return Status::Ok();
  return Unimplemented("tensor '{}' has dtype {}; only F32, BF16 and F16 weights are supported",
                       name, DTypeName(t.dtype()));
}

Status Load(const WeightStore& store, const std::string& name, const Shape& shape, Tensor* out) {
  XI_ASSIGN_OR_RETURN(*out, store.GetWithShape(name, shape));
  return CheckFloatDType(name, *out);
}

// A projection "<prefix>.weight" [rows, cols]: dense, or AWQ's qweight/qzeros/scales when the
// checkpoint is AWQ-quantized (group_size > 0).
Status LoadProj(const WeightStore& store, const std::string& prefix, const Shape& shape,
                int awq_group_size, Weight* out) {
  if (awq_group_size > 0) {
    XI_ASSIGN_OR_RETURN(QuantTensor q,
                        LoadAwqLinear(store, prefix, shape[0], shape[1], awq_group_size));
    *out = Weight(std::move(q));
    return Status::Ok();
  }
  Tensor t;
  XI_RETURN_IF_ERROR(Load(store, prefix + ".weight", shape, &t));
  *out = Weight(std::move(t));
  return Status::Ok();
}

Status LoadDense(const WeightStore& store, const std::string& name, const Shape& shape,
                 Weight* out) {
  Tensor t;
  XI_RETURN_IF_ERROR(Load(store, name, shape, &t));
  *out = Weight(std::move(t));
  return Status::Ok();
}

// Calls f(Tensor&, linear, quant_of) on every non-empty tensor of `w` in a fixed order
// (`linear`: the tensor is a dense Linear weight; `quant_of`: the quantized Linear weight it is a
// part of, else null — valid during the call only, and f may already have replaced its earlier
// parts), rebuilding each Weight from the (possibly replaced) tensors afterwards.
template <typename F>
void ForEachWeightTensor(DecoderWeights& w, F&& f) {
  auto weight = [&](Weight& wt, bool linear) {
    if (wt.empty()) return;
    if (wt.quantized()) {
      QuantTensor q = wt.quant();
      for (Tensor* t : {&q.data, &q.scales, &q.zeros})
        if (!t->empty()) f(*t, false, linear ? &q : nullptr);
      wt = Weight(std::move(q));
    } else {
      Tensor t = wt.dense();
      f(t, linear, nullptr);
      wt = Weight(std::move(t));
    }
  };
  auto tensor = [&](Tensor& t) {
    if (!t.empty()) f(t, false, nullptr);
  };
  weight(w.embed_tokens, /*linear=*/false);
  weight(w.lm_head, /*linear=*/true);
  tensor(w.final_norm);
  for (auto& l : w.layers) {
    for (Weight* p : l.projections()) weight(*p, /*linear=*/true);
    for (Tensor* t : l.vectors()) tensor(*t);
  }
}

size_t TensorBytes(const Tensor& t) { return t.empty() ? 0 : t.size_bytes(); }
int64_t TensorParams(const Tensor& t) { return t.empty() ? 0 : t.numel(); }

}  // namespace

size_t DecoderWeightBytes(const DecoderWeights& w) {
  size_t bytes = w.embed_tokens.size_bytes() + TensorBytes(w.final_norm);
  if (!w.lm_head.SameStorage(w.embed_tokens)) bytes += w.lm_head.size_bytes();
  for (const auto& l : w.layers) {
    for (const Weight* p : l.projections()) bytes += p->size_bytes();
    for (const Tensor* t : l.vectors()) bytes += TensorBytes(*t);
  }
  return bytes;
}

int64_t DecoderParameterCount(const DecoderWeights& w) {
  auto weight_params = [](const Weight& p) { return p.empty() ? 0 : p.rows() * p.cols(); };
  int64_t n = weight_params(w.embed_tokens) + TensorParams(w.final_norm);
  if (!w.lm_head.SameStorage(w.embed_tokens)) n += weight_params(w.lm_head);
  for (const auto& l : w.layers) {
    for (const Weight* p : l.projections()) n += weight_params(*p);
    for (const Tensor* t : l.vectors()) n += TensorParams(*t);
  }
  return n;
}

size_t WidenVectorsToF32(DecoderWeights& w) {
  size_t widened = 0;
  auto widen = [&](Tensor& t) {
    if (t.empty() || t.dtype() == DType::kF32) return;
    XI_CHECK(t.dtype() == DType::kF16 || t.dtype() == DType::kBF16);
    Tensor f32 = NewHostTensor(DType::kF32, t.shape());
    const uint16_t* src = t.data<uint16_t>();
    float* dst = f32.data<float>();
    const bool f16 = t.dtype() == DType::kF16;
    for (int64_t i = 0; i < t.numel(); ++i) dst[i] = f16 ? F16ToF32(src[i]) : Bf16ToF32(src[i]);
    widened += static_cast<size_t>(t.numel());
    t = std::move(f32);
  };
  widen(w.final_norm);
  for (auto& l : w.layers)
    for (Tensor* t : l.vectors()) widen(*t);
  return widened;
}

size_t ConvertDenseWeightsToBf16(DecoderWeights& w, Backend& backend) {
  // Tensors by their bytes, so a tied lm_head is converted once and stays tied to the table.
  std::map<std::pair<const void*, size_t>, Tensor> converted;
  size_t from_bytes = 0;
  auto convert = [&](Weight& wt) {
    if (wt.empty() || wt.quantized()) return;
    const Tensor& t = wt.dense();
    if (t.dtype() != DType::kF16 && t.dtype() != DType::kF32) return;
    XI_CHECK(t.layout() == Layout::kRowMajor);
    auto [it, inserted] = converted.try_emplace({t.raw(), t.size_bytes()});
    if (inserted) {
      from_bytes += t.size_bytes();
      it->second = NewHostTensor(DType::kBF16, t.shape());
      const int64_t n = t.numel();
      constexpr int64_t kChunk = int64_t{1} << 20;
      uint16_t* dst = it->second.data<uint16_t>();
      const bool f16 = t.dtype() == DType::kF16;
      const auto* src16 = f16 ? t.data<uint16_t>() : nullptr;
      const auto* src32 = f16 ? nullptr : t.data<float>();
      backend.ParallelForHost((n + kChunk - 1) / kChunk, [&](int64_t c) {
        const int64_t e = std::min(n, (c + 1) * kChunk);
        for (int64_t i = c * kChunk; i < e; ++i)
          dst[i] = F32ToBf16(f16 ? F16ToF32(src16[i]) : src32[i]);
      });
    }
    wt = Weight(it->second);
  };
  convert(w.embed_tokens);
  convert(w.lm_head);
  for (auto& l : w.layers)
    for (Weight* p : l.projections()) convert(*p);
  return from_bytes;
}

void PlaceDecoderWeights(DecoderWeights& w, Backend& backend) {
  std::vector<Backend::WeightToPlace> host;
  // The QuantTensors host's quant_of point to must outlive PlaceWeights: keep copies here.
  std::vector<std::unique_ptr<QuantTensor>> quant_parts;
  ForEachWeightTensor(w, [&](Tensor& t, bool linear, const QuantTensor* quant_of) {
    const QuantTensor* owner = nullptr;
    if (quant_of != nullptr) {
      if (quant_parts.empty() || quant_parts.back()->data.raw() != quant_of->data.raw())
        quant_parts.push_back(std::make_unique<QuantTensor>(*quant_of));
      owner = quant_parts.back().get();
    }
    host.push_back({t, linear, owner});
  });
  std::vector<Tensor> placed = backend.PlaceWeights(host);
  XI_CHECK(placed.size() == host.size());
  size_t next = 0;
  ForEachWeightTensor(w, [&](Tensor& t, bool, const QuantTensor*) { t = placed[next++]; });
}

StatusOr<DecoderWeights> LoadDecoderWeights(const WeightStore& store, const ModelConfig& c,
                                            const DecoderSpec& spec) {
  const int64_t h = c.hidden_size, d = c.head_dim, i_size = c.intermediate_size;
  const int64_t q_out = static_cast<int64_t>(c.num_attention_heads) * d;
  const int64_t kv_out = static_cast<int64_t>(c.num_key_value_heads) * d;
  // AWQ quantizes the seven projections; embeddings, norms, biases and lm_head stay dense.
  const int awq = c.quantization.method == "awq" ? c.quantization.group_size : 0;
  DecoderWeights w;
  // Tied checkpoints saved by transformers keep only one copy of the shared tensor, under either
  // name (the other is recorded in the safetensors metadata).
  const char* embed_name = "model.embed_tokens.weight";
  if (c.tie_word_embeddings && !store.Has(embed_name) && store.Has("lm_head.weight"))
    embed_name = "lm_head.weight";
  XI_RETURN_IF_ERROR(LoadDense(store, embed_name, {c.vocab_size, h}, &w.embed_tokens));
  XI_RETURN_IF_ERROR(Load(store, "model.norm.weight", {h}, &w.final_norm));
  // A classifier with its own head (score.weight, read by the engine) never computes logits over
  // the vocabulary; its checkpoint has no lm_head, and the table stands in for it.
  if (c.tie_word_embeddings || (c.has_score_head() && !store.Has("lm_head.weight"))) {
    w.lm_head = w.embed_tokens;
  } else {
    XI_RETURN_IF_ERROR(LoadDense(store, "lm_head.weight", {c.vocab_size, h}, &w.lm_head));
  }
  // Grown one layer at a time, not resized up front: a config that claims 2^30 layers then fails
  // on the first missing tensor instead of aborting on the allocation.
  for (int l = 0; l < c.num_hidden_layers; ++l) {
    const std::string p = fmt::format("model.layers.{}.", l);
    DecoderLayerWeights& lw = w.layers.emplace_back();
    XI_RETURN_IF_ERROR(Load(store, p + "input_layernorm.weight", {h}, &lw.input_norm));
    XI_RETURN_IF_ERROR(
        Load(store, p + "post_attention_layernorm.weight", {h}, &lw.post_attention_norm));
    XI_RETURN_IF_ERROR(LoadProj(store, p + "self_attn.q_proj", {q_out, h}, awq, &lw.q_proj));
    XI_RETURN_IF_ERROR(LoadProj(store, p + "self_attn.k_proj", {kv_out, h}, awq, &lw.k_proj));
    XI_RETURN_IF_ERROR(LoadProj(store, p + "self_attn.v_proj", {kv_out, h}, awq, &lw.v_proj));
    XI_RETURN_IF_ERROR(LoadProj(store, p + "self_attn.o_proj", {h, q_out}, awq, &lw.o_proj));
    if (spec.qkv_bias) {
      XI_RETURN_IF_ERROR(Load(store, p + "self_attn.q_proj.bias", {q_out}, &lw.q_bias));
      XI_RETURN_IF_ERROR(Load(store, p + "self_attn.k_proj.bias", {kv_out}, &lw.k_bias));
      XI_RETURN_IF_ERROR(Load(store, p + "self_attn.v_proj.bias", {kv_out}, &lw.v_bias));
    }
    if (spec.o_bias) XI_RETURN_IF_ERROR(Load(store, p + "self_attn.o_proj.bias", {h}, &lw.o_bias));
    if (spec.qk_norm) {
      XI_RETURN_IF_ERROR(Load(store, p + "self_attn.q_norm.weight", {d}, &lw.q_norm));
      XI_RETURN_IF_ERROR(Load(store, p + "self_attn.k_norm.weight", {d}, &lw.k_norm));
    }
    if (!c.IsSparseLayer(l)) {
      XI_RETURN_IF_ERROR(LoadProj(store, p + "mlp.gate_proj", {i_size, h}, awq, &lw.gate_proj));
      XI_RETURN_IF_ERROR(LoadProj(store, p + "mlp.up_proj", {i_size, h}, awq, &lw.up_proj));
      XI_RETURN_IF_ERROR(LoadProj(store, p + "mlp.down_proj", {h, i_size}, awq, &lw.down_proj));
      continue;
    }
    // A sparse layer: the router (kept dense by AWQ, as its modules_to_not_convert lists it) and
    // the experts, mlp.experts.E.{gate,up,down}_proj.
    const int64_t e_size = c.moe_intermediate_size;
    XI_RETURN_IF_ERROR(LoadDense(store, p + "mlp.gate.weight", {c.num_experts, h}, &lw.router));
    if (const int64_t s = c.shared_expert_intermediate_size; s > 0) {
      ExpertWeights& se = lw.shared_expert;
      XI_RETURN_IF_ERROR(
          LoadProj(store, p + "mlp.shared_expert.gate_proj", {s, h}, awq, &se.gate_proj));
      XI_RETURN_IF_ERROR(
          LoadProj(store, p + "mlp.shared_expert.up_proj", {s, h}, awq, &se.up_proj));
      XI_RETURN_IF_ERROR(
          LoadProj(store, p + "mlp.shared_expert.down_proj", {h, s}, awq, &se.down_proj));
      XI_RETURN_IF_ERROR(
          LoadDense(store, p + "mlp.shared_expert_gate.weight", {1, h}, &lw.shared_expert_gate));
    }
    for (int e = 0; e < c.num_experts; ++e) {
      const std::string x = fmt::format("{}mlp.experts.{}.", p, e);
      ExpertWeights& ew = lw.experts.emplace_back();
      XI_RETURN_IF_ERROR(LoadProj(store, x + "gate_proj", {e_size, h}, awq, &ew.gate_proj));
      XI_RETURN_IF_ERROR(LoadProj(store, x + "up_proj", {e_size, h}, awq, &ew.up_proj));
      XI_RETURN_IF_ERROR(LoadProj(store, x + "down_proj", {h, e_size}, awq, &ew.down_proj));
    }
  }
  return w;
}

}  // namespace xinfer
