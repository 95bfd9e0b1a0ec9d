#include "cli/gguf_export.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "base/logging.h"
#include "base/mapped_file.h"
#include "cli/gguf_export_vocab.h"
#include "formats/gguf.h"
#include "formats/gguf_writer.h"
#include "formats/hf_config.h"
#include "formats/safetensors.h"
#include "tensor/dtype.h"
#include "tensor/quant_blocks.h"

namespace xinfer {
namespace {

namespace fs = std::filesystem;

// llama.cpp's llama_ftype values for general.file_type.
constexpr uint32_t kFileTypeF32 = 0, kFileTypeF16 = 1, kFileTypeQ4_0 = 2, kFileTypeQ8_0 = 7,
                   kFileTypeBF16 = 32;
// GGML_QNT_VERSION: the block layouts of Q4_0/Q8_0 as llama.cpp has written them since 2023;
// the converter records it in every file, quantized or not.
constexpr uint32_t kQuantizationVersion = 2;

struct ExportTypeInfo {
  GgufExportType type;
  const char* name;
  uint32_t ggml_type;
  uint32_t file_type;
};
constexpr ExportTypeInfo kTypes[] = {
    {GgufExportType::kF32, "f32", ggml::kF32, kFileTypeF32},
    {GgufExportType::kF16, "f16", ggml::kF16, kFileTypeF16},
    {GgufExportType::kBF16, "bf16", ggml::kBF16, kFileTypeBF16},
    {GgufExportType::kQ8_0, "q8_0", ggml::kQ8_0, kFileTypeQ8_0},
    {GgufExportType::kQ4_0, "q4_0", ggml::kQ4_0, kFileTypeQ4_0},
};

const ExportTypeInfo& InfoOf(GgufExportType type) {
  for (const auto& t : kTypes)
    if (t.type == type) return t;
  return kTypes[0];
}

struct ArchInfo {
  const char* hf;
  const char* gguf;
};
constexpr ArchInfo kArchitectures[] = {{"LlamaForCausalLM", "llama"},
                                       {"Qwen2ForCausalLM", "qwen2"},
                                       {"Qwen2MoeForCausalLM", "qwen2moe"},
                                       {"Qwen3ForCausalLM", "qwen3"},
                                       {"Qwen3MoeForCausalLM", "qwen3moe"}};

// When a Hugging Face tensor of a decoder layer has a GGUF counterpart.
enum class Need { kRequired, kIfPresent, kQwen3Only, kDenseMlpOnly };

struct LayerTensor {
  const char* hf;    // after "model.layers.N."
  const char* gguf;  // after "blk.N."
  Need need;
};
// In the order the converter writes them (the shared llama.cpp files have it).
constexpr LayerTensor kLayerTensors[] = {
    {"input_layernorm.weight", "attn_norm.weight", Need::kRequired},
    {"self_attn.q_proj.weight", "attn_q.weight", Need::kRequired},
    {"self_attn.q_proj.bias", "attn_q.bias", Need::kIfPresent},
    {"self_attn.k_proj.weight", "attn_k.weight", Need::kRequired},
    {"self_attn.k_proj.bias", "attn_k.bias", Need::kIfPresent},
    {"self_attn.v_proj.weight", "attn_v.weight", Need::kRequired},
    {"self_attn.v_proj.bias", "attn_v.bias", Need::kIfPresent},
    {"self_attn.q_norm.weight", "attn_q_norm.weight", Need::kQwen3Only},
    {"self_attn.k_norm.weight", "attn_k_norm.weight", Need::kQwen3Only},
    {"self_attn.o_proj.weight", "attn_output.weight", Need::kRequired},
    {"self_attn.o_proj.bias", "attn_output.bias", Need::kIfPresent},
    {"post_attention_layernorm.weight", "ffn_norm.weight", Need::kRequired},
    {"mlp.gate_proj.weight", "ffn_gate.weight", Need::kDenseMlpOnly},
    {"mlp.up_proj.weight", "ffn_up.weight", Need::kDenseMlpOnly},
    {"mlp.down_proj.weight", "ffn_down.weight", Need::kDenseMlpOnly},
};
// A sparse layer's experts, stacked into one 3-D tensor per projection as the converter does:
// ne = {cols, rows, n_experts}, expert e's [rows, cols] matrix after expert e - 1's.
struct ExpertTensor {
  const char* hf;    // after "model.layers.N.mlp.experts.E."
  const char* gguf;  // after "blk.N."
};
constexpr ExpertTensor kExpertTensors[] = {{"down_proj.weight", "ffn_down_exps.weight"},
                                           {"gate_proj.weight", "ffn_gate_exps.weight"},
                                           {"up_proj.weight", "ffn_up_exps.weight"}};
// A qwen2moe layer's shared expert (after "model.layers.N.mlp." / "blk.N.").
constexpr ExpertTensor kSharedExpertTensors[] = {
    {"shared_expert.down_proj.weight", "ffn_down_shexp.weight"},
    {"shared_expert.gate_proj.weight", "ffn_gate_shexp.weight"},
    {"shared_expert.up_proj.weight", "ffn_up_shexp.weight"}};

// One output tensor.
struct Planned {
  std::string name{};                  // GGUF name
  std::string source{};                // Hugging Face name
  std::vector<std::string> experts{};  // stacked experts' Hugging Face names, else empty
  Shape shape{};  // as in the source: [rows, cols] or [n]; stacked experts [n_experts, rows, cols]
  uint32_t type = ggml::kF32;
  size_t nbytes = 0;
  int permute_heads = 0;  // > 0: llama q/k rows permuted in heads of this many
};

bool IsFloat(DType d) { return d == DType::kF32 || d == DType::kF16 || d == DType::kBF16; }

size_t RowBytes(uint32_t ggml_type, int64_t cols) {
  switch (ggml_type) {
    case ggml::kF32:
      return static_cast<size_t>(cols) * 4;
    case ggml::kF16:
    case ggml::kBF16:
      return static_cast<size_t>(cols) * 2;
    case ggml::kQ8_0:
      return static_cast<size_t>(cols / QuantBlockElems(QuantType::kQ8_0) *
                                 QuantBlockBytes(QuantType::kQ8_0));
    default:
      return static_cast<size_t>(cols / QuantBlockElems(QuantType::kQ4_0) *
                                 QuantBlockBytes(QuantType::kQ4_0));
  }
}

// 1-D tensors stay F32 whatever the file type, as in llama.cpp's files (the kernels that read
// norms and biases expect F32), and so does a MoE router (the converter keeps ffn_gate_inp F32).
// Quantized types need whole blocks of 32 along each row.
uint32_t TargetType(GgufExportType type, const Planned& p) {
  if (p.shape.size() < 2 || p.name.ends_with(".ffn_gate_inp.weight")) return ggml::kF32;
  const uint32_t t = InfoOf(type).ggml_type;
  if ((t == ggml::kQ8_0 || t == ggml::kQ4_0) && p.shape.back() % 32 != 0) {
    XI_LOG_INFO("{}: row length {} is not a multiple of 32; stored as F16 instead of {}", p.name,
                p.shape.back(), GgmlTypeName(t));
    return ggml::kF16;
  }
  return t;
}

StatusOr<std::vector<Planned>> PlanTensors(const WeightStore& store, const ModelConfig& c) {
  std::vector<Planned> plan;
  std::map<std::string, bool> used;
  for (const std::string& n : store.Names()) used[n] = false;
  auto take = [&](const std::string& hf, const std::string& gguf, bool required) -> Status {
    const TensorInfo* info = store.Find(hf);
    if (info == nullptr) {
      if (required) return NotFound("tensor '{}' not found in {}", hf, store.dir());
      return Status::Ok();
    }
    used[hf] = true;
    if (!IsFloat(info->dtype))
      return InvalidArgument("tensor '{}' is {}; GGUF export reads F32/F16/BF16 weights", hf,
                             DTypeName(info->dtype));
    const bool matrix = !gguf.ends_with("norm.weight") && !gguf.ends_with(".bias");
    if (info->shape.size() != (matrix ? 2u : 1u))
      return InvalidArgument("tensor '{}' has shape {}, expected a {}", hf,
                             ShapeToString(info->shape), matrix ? "matrix" : "vector");
    plan.push_back({.name = gguf, .source = hf, .shape = info->shape});
    return Status::Ok();
  };
  // Tied checkpoints saved by transformers may keep the shared tensor as lm_head only.
  std::string embed = "model.embed_tokens.weight";
  if (c.tie_word_embeddings && !store.Has(embed) && store.Has("lm_head.weight"))
    embed = "lm_head.weight";
  XI_RETURN_IF_ERROR(take(embed, "token_embd.weight", true));
  if (plan.back().shape[0] != c.vocab_size || plan.back().shape[1] != c.hidden_size)
    return InvalidArgument("{} is {}, config.json says [{}, {}]", embed,
                           ShapeToString(plan.back().shape), c.vocab_size, c.hidden_size);
  // Each expert's [rows, cols] projection, all of one layer stacked into one tensor.
  auto take_experts = [&](const std::string& hf, const ExpertTensor& t, const std::string& gguf,
                          const Shape& shape) -> Status {
    Planned p{.name = gguf + t.gguf, .shape = {c.num_experts, shape[0], shape[1]}};
    for (int e = 0; e < c.num_experts; ++e) {
      const std::string name = fmt::format("{}mlp.experts.{}.{}", hf, e, t.hf);
      const TensorInfo* info = store.Find(name);
      if (info == nullptr) return NotFound("tensor '{}' not found in {}", name, store.dir());
      if (!IsFloat(info->dtype) || info->shape != shape)
        return InvalidArgument("tensor '{}' is {} {}, expected a float {}", name,
                               DTypeName(info->dtype), ShapeToString(info->shape),
                               ShapeToString(shape));
      used[name] = true;
      p.experts.push_back(name);
    }
    plan.push_back(std::move(p));
    return Status::Ok();
  };
  const bool qwen3 = c.architecture.starts_with("Qwen3");
  for (int l = 0; l < c.num_hidden_layers; ++l) {
    const std::string hf = fmt::format("model.layers.{}.", l), gguf = fmt::format("blk.{}.", l);
    const bool sparse = c.IsSparseLayer(l);
    for (const LayerTensor& t : kLayerTensors) {
      if ((t.need == Need::kQwen3Only && !qwen3) || (t.need == Need::kDenseMlpOnly && sparse))
        continue;
      XI_RETURN_IF_ERROR(take(hf + t.hf, gguf + t.gguf, t.need != Need::kIfPresent));
    }
    if (!sparse) continue;
    XI_RETURN_IF_ERROR(take(hf + "mlp.gate.weight", gguf + "ffn_gate_inp.weight", true));
    if (plan.back().shape != Shape{c.num_experts, c.hidden_size})
      return InvalidArgument("{}mlp.gate.weight is {}, expected [{}, {}]", hf,
                             ShapeToString(plan.back().shape), c.num_experts, c.hidden_size);
    const int64_t h = c.hidden_size, f = c.moe_intermediate_size;
    for (const ExpertTensor& t : kExpertTensors)
      XI_RETURN_IF_ERROR(take_experts(
          hf, t, gguf, std::string(t.hf).starts_with("down") ? Shape{h, f} : Shape{f, h}));
    if (c.shared_expert_intermediate_size <= 0) continue;
    const int64_t s = c.shared_expert_intermediate_size;
    for (const ExpertTensor& t : kSharedExpertTensors) {
      XI_RETURN_IF_ERROR(take(hf + "mlp." + t.hf, gguf + t.gguf, true));
      const Shape want =
          std::string(t.hf).find("down") != std::string::npos ? Shape{h, s} : Shape{s, h};
      if (plan.back().shape != want)
        return InvalidArgument("{}mlp.{} is {}, expected {}", hf, t.hf,
                               ShapeToString(plan.back().shape), ShapeToString(want));
    }
    // The gate's one row, [1, hidden], is a vector {hidden} in llama.cpp's layout (kept F32).
    XI_RETURN_IF_ERROR(
        take(hf + "mlp.shared_expert_gate.weight", gguf + "ffn_gate_inp_shexp.weight", true));
    if (plan.back().shape != Shape{1, h})
      return InvalidArgument("{}mlp.shared_expert_gate.weight is {}, expected [1, {}]", hf,
                             ShapeToString(plan.back().shape), h);
    plan.back().shape = {h};
  }
  XI_RETURN_IF_ERROR(take("model.norm.weight", "output_norm.weight", true));
  if (c.tie_word_embeddings && c.architecture == "Qwen2MoeForCausalLM") {
    // llama.cpp's qwen2moe loader requires output.weight: a tied model gets the embedding's copy.
    used["lm_head.weight"] = true;
    XI_RETURN_IF_ERROR(take(embed, "output.weight", true));
  } else if (store.Has("lm_head.weight")) {
    if (c.tie_word_embeddings) {
      used["lm_head.weight"] = true;  // a copy of the embedding; llama.cpp reuses token_embd
    } else {
      XI_RETURN_IF_ERROR(take("lm_head.weight", "output.weight", true));
    }
  }
  for (const auto& [name, was_used] : used)
    if (!was_used && !name.ends_with(".rotary_emb.inv_freq"))
      return InvalidArgument(
          "tensor '{}' has no GGUF equivalent in llama.cpp's layout for {} (unsupported "
          "model feature)",
          name, c.architecture);

  if (c.architecture == "LlamaForCausalLM") {
    for (Planned& p : plan) {
      if (p.name.find(".attn_q.") != std::string::npos) p.permute_heads = c.num_attention_heads;
      if (p.name.find(".attn_k.") != std::string::npos) p.permute_heads = c.num_key_value_heads;
      if (p.permute_heads > 0 &&
          (p.shape[0] % p.permute_heads != 0 || (p.shape[0] / p.permute_heads) % 2 != 0))
        return InvalidArgument("{}: {} rows do not split into {} heads of even size", p.source,
                               p.shape[0], p.permute_heads);
    }
  }
  return plan;
}

// Reads `rows` rows starting at `first` of a float tensor into F32.
void RowsToFloat(const Tensor& t, int64_t cols, const std::vector<int64_t>& order, int64_t first,
                 int64_t rows, float* out) {
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t src_row = order.empty() ? first + r : order[first + r];
    const int64_t base = src_row * cols;
    float* dst = out + r * cols;
    switch (t.dtype()) {
      case DType::kF32:
        std::copy_n(t.data<float>() + base, cols, dst);
        break;
      case DType::kF16:
        for (int64_t i = 0; i < cols; ++i) dst[i] = F16ToF32(t.data<uint16_t>()[base + i]);
        break;
      default:
        for (int64_t i = 0; i < cols; ++i) dst[i] = Bf16ToF32(t.data<uint16_t>()[base + i]);
        break;
    }
  }
}

// A matrix's rows in type `type`, a few MiB of F32 at a time whatever its size.
void EncodeRows(const Tensor& t, int64_t rows, int64_t cols, const std::vector<int64_t>& order,
                uint32_t type, std::string& out) {
  const int64_t chunk = std::max<int64_t>(1, (4 << 20) / std::max<int64_t>(cols, 1));
  std::vector<float> buf;
  for (int64_t r = 0; r < rows; r += chunk) {
    const int64_t n = std::min(chunk, rows - r);
    buf.resize(static_cast<size_t>(n * cols));
    RowsToFloat(t, cols, order, r, n, buf.data());
    out += EncodeGgmlRows(type, buf.data(), n, cols);
  }
}

StatusOr<std::string> EncodeTensor(const WeightStore& store, const Planned& p) {
  std::string out;
  out.reserve(p.nbytes);
  if (!p.experts.empty()) {
    for (const std::string& expert : p.experts) {
      XI_ASSIGN_OR_RETURN(Tensor t, store.Get(expert));
      EncodeRows(t, p.shape[1], p.shape[2], {}, p.type, out);
    }
    return out;
  }
  XI_ASSIGN_OR_RETURN(Tensor t, store.Get(p.source));
  const int64_t rows = p.shape.size() == 2 ? p.shape[0] : 1;
  const int64_t cols = p.shape.size() == 2 ? p.shape[1] : p.shape[0];
  // The converter permutes llama's q/k biases like their rows: a bias is a column of rows.
  const bool bias = p.shape.size() == 1 && p.permute_heads > 0;
  std::vector<int64_t> order;
  if (p.permute_heads > 0) order = LlamaPermutedRowOrder(bias ? cols : rows, p.permute_heads);
  if (bias) {
    std::vector<float> v(static_cast<size_t>(cols));
    RowsToFloat(t.Reshaped({cols, 1}), 1, order, 0, cols, v.data());
    return EncodeGgmlRows(p.type, v.data(), 1, cols);
  }
  EncodeRows(t, rows, cols, order, p.type, out);
  return out;
}

// The general.* and <arch>.* keys, in the order llama.cpp's converter writes them.
Status AddModelMetadata(const std::string& src_dir, const ModelConfig& c, const std::string& arch,
                        GgufExportType type, GgufWriter* w) {
  XI_ASSIGN_OR_RETURN(std::string text, ReadFileToString(src_dir + "/config.json"));
  const nlohmann::json raw = nlohmann::json::parse(text, nullptr, false);
  w->SetString("general.architecture", arch);
  w->SetString("general.type", "model");
  fs::path dir = fs::absolute(src_dir).lexically_normal();
  if (dir.filename().empty()) dir = dir.parent_path();    // "models/x/" → "x"
  w->SetString("general.name", dir.filename().string());  // as the converter names it
  w->SetU32("general.file_type", InfoOf(type).file_type);
  w->SetU32("general.quantization_version", kQuantizationVersion);
  const std::string p = arch + ".";
  w->SetU32(p + "block_count", static_cast<uint32_t>(c.num_hidden_layers));
  if (c.max_position_embeddings > 0)
    w->SetU32(p + "context_length", static_cast<uint32_t>(c.max_position_embeddings));
  w->SetU32(p + "embedding_length", static_cast<uint32_t>(c.hidden_size));
  w->SetU32(p + "feed_forward_length", static_cast<uint32_t>(c.intermediate_size));
  w->SetU32(p + "attention.head_count", static_cast<uint32_t>(c.num_attention_heads));
  w->SetU32(p + "attention.head_count_kv", static_cast<uint32_t>(c.num_key_value_heads));
  w->SetF32(p + "rope.freq_base", static_cast<float>(c.rope_theta));
  if (!c.rope_scaling.type.empty()) {  // linear or yarn (WriteGguf refuses the others)
    w->SetString(p + "rope.scaling.type", c.rope_scaling.type);
    w->SetF32(p + "rope.scaling.factor", static_cast<float>(c.rope_scaling.factor));
    if (c.rope_scaling.type == "yarn")
      w->SetU32(p + "rope.scaling.original_context_length",
                static_cast<uint32_t>(c.rope_scaling.original_max_position_embeddings));
  }
  w->SetF32(p + "attention.layer_norm_rms_epsilon", static_cast<float>(c.rms_norm_eps));
  if (c.is_moe()) {
    w->SetU32(p + "expert_count", static_cast<uint32_t>(c.num_experts));
    w->SetU32(p + "expert_used_count", static_cast<uint32_t>(c.num_experts_per_tok));
    w->SetU32(p + "expert_feed_forward_length", static_cast<uint32_t>(c.moe_intermediate_size));
    if (c.shared_expert_intermediate_size > 0)
      w->SetU32(p + "expert_shared_feed_forward_length",
                static_cast<uint32_t>(c.shared_expert_intermediate_size));
  }
  w->SetU32(p + "vocab_size", static_cast<uint32_t>(c.vocab_size));
  // An explicit head_dim (Qwen3's differs from hidden / heads) is the only way llama.cpp learns it.
  if (raw.is_object() && raw.contains("head_dim")) {
    w->SetU32(p + "attention.key_length", static_cast<uint32_t>(c.head_dim));
    w->SetU32(p + "attention.value_length", static_cast<uint32_t>(c.head_dim));
  }
  if (arch == "llama") w->SetU32(p + "rope.dimension_count", static_cast<uint32_t>(c.head_dim));
  return Status::Ok();
}

Status WriteGguf(const std::string& src_dir, const std::string& tmp, GgufExportType type) {
  XI_ASSIGN_OR_RETURN(ModelConfig c, LoadHfConfig(src_dir));
  std::string arch;
  for (const auto& a : kArchitectures)
    if (c.architecture == a.hf) arch = a.gguf;
  if (arch.empty())
    return Unimplemented(
        "GGUF export supports LlamaForCausalLM, Qwen2ForCausalLM, Qwen2MoeForCausalLM, "
        "Qwen3ForCausalLM and Qwen3MoeForCausalLM, not {}",
        c.architecture);
  // llama.cpp's MoE graphs route every layer; qwen3moe's renormalizes the picked experts'
  // weights, qwen2moe's does not and always adds a shared expert.
  const bool qwen2moe = arch == "qwen2moe";
  if (c.is_moe() && c.norm_topk_prob == qwen2moe)
    return Unimplemented("GGUF {} files {} the experts' weights; this model has norm_topk_prob {}",
                         arch, qwen2moe ? "do not renormalize" : "renormalize", c.norm_topk_prob);
  if (qwen2moe && c.shared_expert_intermediate_size <= 0)
    return Unimplemented(
        "GGUF qwen2moe files have a shared expert in every layer; this model has none "
        "(shared_expert_intermediate_size)");
  for (int l = 0; c.is_moe() && l < c.num_hidden_layers; ++l)
    if (!c.IsSparseLayer(l))
      return Unimplemented(
          "GGUF {} files have experts in every layer; layer {} is dense "
          "(mlp_only_layers / decoder_sparse_step)",
          arch, l);
  if (!c.quantization.method.empty())
    return InvalidArgument(
        "the source model is already quantized ({}); export an unquantized F32/F16/BF16 "
        "model",
        c.quantization.method);
  if (!c.rope_scaling.type.empty() && c.rope_scaling.type != "linear" &&
      c.rope_scaling.type != "yarn")
    return Unimplemented("GGUF export of rope_scaling '{}' (GGUF files hold linear and yarn)",
                         c.rope_scaling.type);
  XI_ASSIGN_OR_RETURN(auto store, WeightStore::OpenDir(src_dir));
  XI_ASSIGN_OR_RETURN(std::vector<Planned> plan, PlanTensors(*store, c));

  GgufWriter w;
  XI_RETURN_IF_ERROR(AddModelMetadata(src_dir, c, arch, type, &w));
  XI_RETURN_IF_ERROR(AddGgufVocab(src_dir, c.vocab_size, &w));
  std::map<std::string, const Planned*> by_name;
  for (Planned& p : plan) {
    p.type = TargetType(type, p);
    const int64_t rows = p.shape.size() >= 2 ? NumElements(p.shape) / p.shape.back() : 1;
    p.nbytes = static_cast<size_t>(rows) * RowBytes(p.type, p.shape.back());
    std::vector<int64_t> ne(p.shape.rbegin(), p.shape.rend());  // GGUF: innermost first
    w.AddTensorInfo(p.name, p.type, std::move(ne), p.nbytes);
    by_name[p.name] = &p;
  }
  return w.WriteFile(tmp, [&](const std::string& name) -> StatusOr<std::string> {
    return EncodeTensor(*store, *by_name.at(name));
  });
}

}  // namespace

StatusOr<GgufExportType> ParseGgufExportType(const std::string& name) {
  std::string lower = name;
  for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  std::string names;
  for (const auto& t : kTypes) {
    if (lower == t.name) return t.type;
    names += (names.empty() ? "" : ", ") + std::string(t.name);
  }
  return InvalidArgument("unsupported GGUF type '{}' (supported: {})", name, names);
}

const char* GgufExportTypeName(GgufExportType type) { return InfoOf(type).name; }

std::string EncodeGgmlRows(uint32_t ggml_type, const float* src, int64_t rows, int64_t cols) {
  const size_t row_bytes = RowBytes(ggml_type, cols);
  std::string out(row_bytes * static_cast<size_t>(rows), '\0');
  auto* dst = reinterpret_cast<uint8_t*>(out.data());
  const int64_t n = rows * cols;
  switch (ggml_type) {
    case ggml::kF32:
      std::memcpy(dst, src, static_cast<size_t>(n) * 4);
      break;
    case ggml::kF16:
    case ggml::kBF16:
      for (int64_t i = 0; i < n; ++i) {
        const uint16_t h = ggml_type == ggml::kF16 ? F32ToF16(src[i]) : F32ToBf16(src[i]);
        std::memcpy(dst + 2 * i, &h, 2);
      }
      break;
    default: {
      const QuantType q = ggml_type == ggml::kQ8_0 ? QuantType::kQ8_0 : QuantType::kQ4_0;
      for (int64_t r = 0; r < rows; ++r)
        QuantizeBlocksRef(q, src + r * cols, cols, dst + static_cast<size_t>(r) * row_bytes);
      break;
    }
  }
  return out;
}

std::vector<int64_t> LlamaPermutedRowOrder(int64_t rows, int n_heads) {
  const int64_t d = rows / n_heads, half = d / 2;
  std::vector<int64_t> order(static_cast<size_t>(rows));
  for (int64_t h = 0; h < n_heads; ++h)
    for (int64_t i = 0; i < half; ++i)
      for (int64_t j = 0; j < 2; ++j) order[h * d + 2 * i + j] = h * d + j * half + i;
  return order;
}

Status ExportGguf(const std::string& src_dir, const std::string& dst_file,
                  const GgufExportOptions& options) {
  if (!fs::is_directory(src_dir)) return NotFound("{} is not a model folder", src_dir);
  if (!dst_file.ends_with(".gguf"))
    return InvalidArgument("{}: the output file name must end in .gguf", dst_file);
  std::error_code ec;
  if (fs::exists(dst_file, ec))
    return InvalidArgument("{} already exists; refusing to overwrite", dst_file);
  const fs::path parent = fs::absolute(dst_file).parent_path();
  if (!fs::is_directory(parent, ec))
    return NotFound("cannot write {}: folder {} does not exist", dst_file, parent.string());
  const std::string tmp = dst_file + ".tmp";
  Status s = WriteGguf(src_dir, tmp, options.type);
  if (s.ok()) {
    fs::rename(tmp, dst_file, ec);
    if (ec) s = Internal("cannot rename {} to {}: {}", tmp, dst_file, ec.message());
  }
  if (!s.ok()) fs::remove(tmp, ec);
  return s;
}

}  // namespace xinfer
