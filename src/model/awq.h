// AWQ (AutoAWQ "GEMM" checkpoints): 4-bit weights with a zero point per group of `group_size`
// input features. A Linear layer `<prefix>` is stored as
//   <prefix>.qweight  I32 [in, out / 8]        8 outputs per int32, nibble i holds output
//                                              8c + {0, 2, 4, 6, 1, 3, 5, 7}[i]
//   <prefix>.qzeros   I32 [in / group, out / 8] zero points, packed the same way
//   <prefix>.scales   F16 [in / group, out]
// and w[o, i] = (q[i, o] - zero[i / group, o]) * scale[i / group, o]. At load time it is repacked
// into QuantType::kAwq4 (row-major by output feature, see tensor/quant.h), the layout the Linear
// kernels want; this copies only the 4-bit data.
#pragma once

#include <string>

#include "formats/hf_config.h"
#include "formats/safetensors.h"
#include "tensor/quant.h"

namespace xinfer {

// Checks that the checkpoint's quantization_config is a variant we run: quant_method "awq",
// bits 4, version "gemm", a positive group size, zero_point true, and no modules_to_not_convert
// (read from `model_dir`/config.json). Anything else is Unimplemented, naming the field.
Status CheckAwqConfig(const QuantizationConfig& q, const std::string& model_dir);

// Reads and repacks the AWQ Linear `prefix` (e.g. "model.layers.0.self_attn.q_proj") of shape
// [out_features, in_features]. Missing tensors, wrong shapes or dtypes are Status.
StatusOr<QuantTensor> LoadAwqLinear(const WeightStore& store, const std::string& prefix,
                                    int64_t out_features, int64_t in_features, int group_size);

// The packing order within an int32 of qweight/qzeros: output 8c + kAwqOrder[i] is in nibble i.
inline constexpr int kAwqOrder[8] = {0, 2, 4, 6, 1, 3, 5, 7};

}  // namespace xinfer
