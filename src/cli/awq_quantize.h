// Round-to-nearest AWQ quantization of a Hugging Face checkpoint (`xinfer quantize --awq`): every
// linear projection of every decoder layer (self_attn q/k/v/o, mlp gate/up/down) becomes 4-bit
// weights with a zero point per group of `group_size` input features, in AutoAWQ's GEMM layout
// (model/awq.h); everything else is copied as F16, as AutoAWQ keeps it. No calibration: scales
// and zeros come from each group's min and max (QuantizeAwqGroupRef).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace xinfer {

struct AwqQuantizeOptions {
  int group_size = 128;
};

// Writes the quantized model to `dst_dir` (config.json with quantization_config, model
// safetensors, and the source's tokenizer and generation files). `dst_dir` must not exist or be
// empty; the output is assembled in a sibling temporary folder and renamed into place, so a
// failure leaves nothing behind. Bad input (a source that is already quantized, shapes the
// group size or the packing cannot divide) is InvalidArgument naming the tensor.
Status QuantizeModelAwq(const std::string& src_dir, const std::string& dst_dir,
                        const AwqQuantizeOptions& options);

// One [out, in] weight (row-major floats) → AutoAWQ GEMM tensors: qweight I32 [in, out / 8],
// qzeros I32 [in / group, out / 8] and scales F16 [in / group, out], as raw little-endian words.
// Shapes must already be checked (in % group == 0, out % 8 == 0).
struct AwqPacked {
  std::vector<int32_t> qweight, qzeros;
  std::vector<uint16_t> scales;
};
AwqPacked PackAwqLinear(const float* w, int64_t out_features, int64_t in_features, int group_size);

}  // namespace xinfer
