#include "cli/awq_quantize.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>

#include "base/mapped_file.h"
#include "formats/safetensors.h"
#include "formats/safetensors_writer.h"
#include "model/awq.h"
#include "tensor/quant_blocks.h"

namespace xinfer {
namespace {

namespace fs = std::filesystem;
using nlohmann::ordered_json;

// The projections AutoAWQ quantizes in Qwen2/Qwen3/Llama decoder layers, and in Qwen3-MoE's
// experts (its router, mlp.gate, stays dense).
const std::regex kLinear(
    R"(model\.layers\.\d+\.(self_attn\.(q|k|v|o)_proj|mlp\.(experts\.\d+\.)?(gate|up|down)_proj)\.weight)");

// The nibble that holds output o % 8 within its int32 (inverse of kAwqOrder).
constexpr int NibbleOf(int j) {
  for (int i = 0; i < 8; ++i)
    if (kAwqOrder[i] == j) return i;
  return -1;
}

std::vector<float> ToFloat(const Tensor& t) {
  std::vector<float> out(static_cast<size_t>(t.numel()));
  XI_CHECK(WidenToF32(t, out.data()));  // the caller checked the dtype
  return out;
}

bool IsFloat(DType d) { return d == DType::kF32 || d == DType::kF16 || d == DType::kBF16; }

// One output tensor: either a copy (F16 when the source is a float tensor) or one of the three
// tensors of a quantized linear.
struct Output {
  TensorSpec spec;
  std::string source;  // source tensor name
  int part = -1;       // -1: copy; 0 qweight, 1 qzeros, 2 scales
};

Status CheckNotQuantized(const ordered_json& config, const WeightStore& store) {
  if (config.contains("quantization_config") && !config["quantization_config"].is_null())
    return InvalidArgument(
        "the source model is already quantized (config.json has "
        "quantization_config); quantize an unquantized F32/F16/BF16 model");
  for (const std::string& name : store.Names())
    if (name.ends_with(".qweight") || name.ends_with(".qzeros"))
      return InvalidArgument("the source model is already quantized (it has tensor {})", name);
  return Status::Ok();
}

StatusOr<std::vector<Output>> PlanOutputs(const WeightStore& store, int group) {
  std::vector<Output> outs;
  int linears = 0;
  for (const std::string& name : store.Names()) {
    const TensorInfo& info = *store.Find(name);
    if (!std::regex_match(name, kLinear)) {
      outs.push_back({{name, IsFloat(info.dtype) ? DType::kF16 : info.dtype, info.shape}, name});
      continue;
    }
    if (info.shape.size() != 2 || !IsFloat(info.dtype))
      return InvalidArgument("{}: expected a 2-D float weight, got {} {}", name,
                             DTypeName(info.dtype), ShapeToString(info.shape));
    const int64_t out = info.shape[0], in = info.shape[1];
    if (in % group != 0)
      return InvalidArgument("{}: in_features {} is not divisible by the group size {}", name, in,
                             group);
    if (out % 8 != 0)
      return InvalidArgument(
          "{}: out_features {} is not divisible by 8 (AWQ packs 8 outputs per int32)", name, out);
    const std::string prefix = name.substr(0, name.size() - std::string(".weight").size());
    outs.push_back({{prefix + ".qweight", DType::kI32, {in, out / 8}}, name, 0});
    outs.push_back({{prefix + ".qzeros", DType::kI32, {in / group, out / 8}}, name, 1});
    outs.push_back({{prefix + ".scales", DType::kF16, {in / group, out}}, name, 2});
    ++linears;
  }
  if (linears == 0)
    return InvalidArgument(
        "no linear projections (model.layers.N.self_attn/mlp.*_proj.weight) "
        "found to quantize");
  return outs;
}

Status CopyAuxFiles(const std::string& src, const std::string& dst) {
  for (const auto& e : fs::directory_iterator(src)) {
    if (!e.is_regular_file()) continue;
    const std::string f = e.path().filename().string();
    // Weights are rewritten; config.json is rewritten; other weight formats are not carried.
    if (f == "config.json" || f.ends_with(".safetensors") ||
        f.ends_with(".safetensors.index.json") || f.ends_with(".bin") || f.ends_with(".pt") ||
        f.ends_with(".pth") || f.ends_with(".gguf"))
      continue;
    std::error_code ec;
    fs::copy_file(e.path(), fs::path(dst) / f, ec);
    if (ec) return InvalidArgument("cannot copy {}: {}", e.path().string(), ec.message());
  }
  return Status::Ok();
}

Status WriteInto(const std::string& src, const std::string& tmp, int group) {
  XI_ASSIGN_OR_RETURN(std::string config_text, ReadFileToString(src + "/config.json"));
  ordered_json config = ordered_json::parse(config_text, nullptr, false);
  if (config.is_discarded() || !config.is_object())
    return InvalidArgument("{}/config.json is not a JSON object", src);
  XI_ASSIGN_OR_RETURN(auto store, WeightStore::OpenDir(src));
  XI_RETURN_IF_ERROR(CheckNotQuantized(config, *store));
  XI_ASSIGN_OR_RETURN(std::vector<Output> outs, PlanOutputs(*store, group));

  std::vector<TensorSpec> specs;
  for (const Output& o : outs) specs.push_back(o.spec);
  // Linears are quantized one at a time, when their first tensor is requested, and kept until
  // the next one: memory stays at one weight matrix however large the model.
  std::string packed_for;
  AwqPacked packed;
  Status fill_status = Status::Ok();
  std::map<std::string, size_t> by_name;
  for (size_t i = 0; i < outs.size(); ++i) by_name[outs[i].spec.name] = i;
  auto fill = [&](const TensorSpec& spec, int64_t first, int64_t count, uint8_t* dst) {
    const Output& o = outs[by_name.at(spec.name)];
    auto t = store->Get(o.source);
    if (!t.ok()) {
      fill_status = t.status();
      std::memset(dst, 0, static_cast<size_t>(count) * DTypeSize(spec.dtype));
      return;
    }
    if (o.part < 0) {
      const size_t es = DTypeSize(t->dtype());
      if (!IsFloat(t->dtype())) {
        std::memcpy(dst, static_cast<const uint8_t*>(t->raw()) + first * es, count * es);
        return;
      }
      Tensor part = t->Reshaped({t->numel()});
      auto* out = reinterpret_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < count; ++i) {
        const int64_t k = first + i;
        float v = part.dtype() == DType::kF32   ? part.data<float>()[k]
                  : part.dtype() == DType::kF16 ? F16ToF32(part.data<uint16_t>()[k])
                                                : Bf16ToF32(part.data<uint16_t>()[k]);
        out[i] = F32ToF16(v);
      }
      return;
    }
    if (packed_for != o.source) {
      std::vector<float> w = ToFloat(*t);
      // AutoAWQ quantizes the model as loaded in F16; rounding first keeps group min/max equal.
      for (float& x : w) x = F16ToF32(F32ToF16(x));
      packed = PackAwqLinear(w.data(), t->dim(0), t->dim(1), group);
      packed_for = o.source;
    }
    const void* srcp = o.part == 0   ? static_cast<const void*>(packed.qweight.data())
                       : o.part == 1 ? static_cast<const void*>(packed.qzeros.data())
                                     : static_cast<const void*>(packed.scales.data());
    const size_t es = DTypeSize(spec.dtype);
    std::memcpy(dst, static_cast<const uint8_t*>(srcp) + first * es, count * es);
  };
  XI_RETURN_IF_ERROR(
      WriteSafetensors(tmp, specs, fill, /*max_shard_bytes=*/4ull << 30, {{"format", "pt"}}));
  XI_RETURN_IF_ERROR(fill_status);

  config["torch_dtype"] = "float16";
  config["quantization_config"] = {{"quant_method", "awq"}, {"bits", 4},
                                   {"group_size", group},   {"zero_point", true},
                                   {"version", "gemm"},     {"modules_to_not_convert", nullptr}};
  std::ofstream(fs::path(tmp) / "config.json") << config.dump(2) << "\n";
  return CopyAuxFiles(src, tmp);
}

}  // namespace

AwqPacked PackAwqLinear(const float* w, int64_t out_features, int64_t in_features, int group_size) {
  const int64_t groups = in_features / group_size, packs = out_features / 8;
  AwqPacked p;
  p.qweight.assign(static_cast<size_t>(in_features * packs), 0);
  p.qzeros.assign(static_cast<size_t>(groups * packs), 0);
  p.scales.assign(static_cast<size_t>(groups * out_features), 0);
  std::vector<uint8_t> q(static_cast<size_t>(group_size));
  for (int64_t o = 0; o < out_features; ++o) {
    const int shift = 4 * NibbleOf(static_cast<int>(o % 8));
    for (int64_t g = 0; g < groups; ++g) {
      AwqGroup a = QuantizeAwqGroupRef(w + o * in_features + g * group_size, group_size, q.data());
      p.scales[g * out_features + o] = a.scale_f16;
      p.qzeros[g * packs + o / 8] |= static_cast<int32_t>(static_cast<uint32_t>(a.zero) << shift);
      for (int64_t i = 0; i < group_size; ++i) {
        const int64_t row = g * group_size + i;
        p.qweight[row * packs + o / 8] |=
            static_cast<int32_t>(static_cast<uint32_t>(q[i]) << shift);
      }
    }
  }
  return p;
}

Status QuantizeModelAwq(const std::string& src_dir, const std::string& dst_dir,
                        const AwqQuantizeOptions& options) {
  if (options.group_size <= 0 || options.group_size % 8 != 0)
    return InvalidArgument("--group-size must be a positive multiple of 8, got {}",
                           options.group_size);
  if (!fs::is_directory(src_dir)) return NotFound("{} is not a model folder", src_dir);
  std::error_code ec;
  if (fs::exists(dst_dir, ec) && !(fs::is_directory(dst_dir) && fs::is_empty(dst_dir)))
    return InvalidArgument("{} already exists and is not an empty folder; refusing to overwrite",
                           dst_dir);
  fs::path dst = fs::absolute(dst_dir);
  if (dst.filename().empty()) dst = dst.parent_path();  // "out/" → "out"
  const fs::path tmp =
      dst.parent_path() / fmt::format(".{}.quantize-{}", dst.filename().string(), getpid());
  fs::remove_all(tmp, ec);
  fs::create_directories(tmp, ec);
  if (ec) return InvalidArgument("cannot create {}: {}", tmp.string(), ec.message());
  Status s = WriteInto(src_dir, tmp.string(), options.group_size);
  if (s.ok()) {
    fs::rename(tmp, dst, ec);  // replaces an empty dst
    if (ec)
      s = InvalidArgument("cannot move {} to {}: {}", tmp.string(), dst.string(), ec.message());
  }
  if (!s.ok()) fs::remove_all(tmp, ec);
  return s;
}

}  // namespace xinfer
