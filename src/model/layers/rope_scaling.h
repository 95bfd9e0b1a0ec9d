// RoPE frequencies for a model config: plain (theta^(-2i/d)) or stretched by config.json's
// rope_scaling as vLLM's get_rope computes them (linear, dynamic NTK, YaRN, Llama 3), and divided
// by GGUF's per-frequency factors where the file has them. Pure function of the config.
#pragma once

#include "backend/backend.h"
#include "formats/hf_config.h"

namespace xinfer {

// The config is validated (ParseHfConfig / the GGUF reader): a known type, factor > 0,
// head_dim / 2 freq_factors when any.
RopeSpec MakeRopeSpec(const ModelConfig& config);

}  // namespace xinfer
