// One entry per supported architecture: how its Hugging Face checkpoint maps onto the shared
// decoder. Each architecture lives in its own file in this folder.
#pragma once

#include "formats/hf_config.h"
#include "model/layers/decoder.h"

namespace xinfer {

// Each returns the spec for a config of its architecture, or a Status if the config asks for
// something the architecture file does not support.
StatusOr<DecoderSpec> LlamaSpec(const ModelConfig& config);
StatusOr<DecoderSpec> Qwen2Spec(const ModelConfig& config);
StatusOr<DecoderSpec> Qwen3Spec(const ModelConfig& config);

}  // namespace xinfer
