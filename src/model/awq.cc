#include "model/awq.h"

#include <nlohmann/json.hpp>

namespace xinfer {

Status CheckAwqConfig(const QuantizationConfig& q, const std::string& model_dir) {
  if (q.method != "awq")
    return Unimplemented("quantization '{}' is not supported (supported: awq)", q.method);
  if (q.bits != 4) return Unimplemented("AWQ with bits={} is not supported (only 4)", q.bits);
  if (q.version != "gemm" && q.version != "GEMM")
    return Unimplemented("AWQ version '{}' is not supported (only gemm packing)", q.version);
  if (q.group_size <= 0)
    return Unimplemented("AWQ group_size {} is not supported (need a positive group size)",
                         q.group_size);
  if (!q.zero_point) return Unimplemented("AWQ without zero_point is not supported");
  // modules_to_not_convert is not in ModelConfig (only AWQ has it): read it here.
  XI_ASSIGN_OR_RETURN(std::string text, ReadFileToString(model_dir + "/config.json"));
  const auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_object() && j.contains("quantization_config")) {
    const auto& qc = j["quantization_config"];
    if (qc.is_object() && qc.contains("modules_to_not_convert")) {
      const auto& m = qc["modules_to_not_convert"];
      if (!m.is_null() && !(m.is_array() && m.empty()))
        return Unimplemented("AWQ modules_to_not_convert {} is not supported (must be empty)",
                             m.dump());
    }
  }
  return Status::Ok();
}

namespace {

StatusOr<Tensor> GetChecked(const WeightStore& store, const std::string& name, const Shape& shape,
                            std::initializer_list<DType> dtypes) {
  XI_ASSIGN_OR_RETURN(Tensor t, store.GetWithShape(name, shape));
  for (DType d : dtypes)
    if (t.dtype() == d) return t;
  return InvalidArgument("tensor '{}' has dtype {}, not what AWQ stores there", name,
                         DTypeName(t.dtype()));
}

float ScaleAt(const Tensor& scales, int64_t i) {
  switch (scales.dtype()) {
    case DType::kF16:
      return F16ToF32(scales.data<uint16_t>()[i]);
    case DType::kBF16:
      return Bf16ToF32(scales.data<uint16_t>()[i]);
    default:
      return scales.data<float>()[i];
  }
}

}  // namespace

StatusOr<QuantTensor> LoadAwqLinear(const WeightStore& store, const std::string& prefix,
                                    int64_t out_features, int64_t in_features, int group_size) {
  const int64_t n = out_features, k = in_features, g = group_size;
  if (n % 8 != 0 || k % g != 0 || g % 2 != 0)
    return InvalidArgument("{}: [{}, {}] does not fit AWQ packing with group size {}", prefix, n, k,
                           g);
  const int64_t groups = k / g;
  XI_ASSIGN_OR_RETURN(Tensor qweight,
                      GetChecked(store, prefix + ".qweight", {k, n / 8}, {DType::kI32}));
  XI_ASSIGN_OR_RETURN(Tensor qzeros,
                      GetChecked(store, prefix + ".qzeros", {groups, n / 8}, {DType::kI32}));
  XI_ASSIGN_OR_RETURN(Tensor scales, GetChecked(store, prefix + ".scales", {groups, n},
                                                {DType::kF16, DType::kBF16, DType::kF32}));
  QuantTensor q;
  q.type = QuantType::kAwq4;
  q.rows = n;
  q.cols = k;
  q.group_size = g;
  q.data = NewHostTensor(DType::kU8, {n, k / 2});
  q.scales = NewHostTensor(DType::kF32, {n, groups});
  q.zeros = NewHostTensor(DType::kF32, {n, groups});
  // Nibble of output o within its int32: the inverse of kAwqOrder.
  int nibble_of[8];
  for (int i = 0; i < 8; ++i) nibble_of[kAwqOrder[i]] = i;
  const uint32_t* qw = qweight.data<uint32_t>();
  const uint32_t* qz = qzeros.data<uint32_t>();
  uint8_t* dst = q.data.data<uint8_t>();
  float* ds = q.scales.data<float>();
  float* dz = q.zeros.data<float>();
  for (int64_t o = 0; o < n; ++o) {
    const int shift = 4 * nibble_of[o % 8];
    uint8_t* row = dst + o * (k / 2);
    for (int64_t i = 0; i < k; i += 2) {
      const uint32_t lo = (qw[i * (n / 8) + o / 8] >> shift) & 0xF;
      const uint32_t hi = (qw[(i + 1) * (n / 8) + o / 8] >> shift) & 0xF;
      row[i / 2] = static_cast<uint8_t>(lo | (hi << 4));
    }
    for (int64_t gi = 0; gi < groups; ++gi) {
      ds[o * groups + gi] = ScaleAt(scales, gi * n + o);
      dz[o * groups + gi] = static_cast<float>((qz[gi * (n / 8) + o / 8] >> shift) & 0xF);
    }
  }
  return q;
}

}  // namespace xinfer
