// Block codecs of the GGML formats in quant.h, written from the format descriptions (llama.cpp's
// ggml-common.h / ggml-quants.c layouts). Dequantization is what the engine computes with; the
// quantizers are plain reference implementations (round-to-nearest, no search for the best scale)
// used by round-trip tests and tools, not llama.cpp's importance-weighted ones.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>

#include "tensor/quant.h"

namespace xinfer {

// Dequantizes `n` elements (a multiple of QuantBlockElems(type)) from their blocks at `src`.
// GGML formats only.
void DequantizeBlocks(QuantType type, const uint8_t* src, int64_t n, float* dst);

// Q4_K's (and Q5_K's) 6-bit scale and min of sub-block j (0..7) from the block's 12 packed bytes
// `s`.
void ScaleMinK4(int j, const uint8_t* s, int* sc, int* m);

// Quantizes `n` elements (a multiple of QuantBlockElems(type)) into blocks at `dst`
// (n / QuantBlockElems(type) * QuantBlockBytes(type) bytes). GGML formats only.
void QuantizeBlocksRef(QuantType type, const float* src, int64_t n, uint8_t* dst);

// AWQ-style asymmetric 4-bit quantization of one group of `n` values, round to nearest with ties
// to even (as AutoAWQ's pseudo_quantize_tensor: torch.round; exact ties are common in
// low-precision weights, so the tie rule decides bytes):
// scale = (max - min) / 15, zero = round(-min / scale) clamped to [0, 15],
// q = clamp(round(x / scale) + zero, 0, 15). Scale is rounded to F16 first (AWQ stores F16) so
// (q - zero) * scale reproduces exactly what a reader computes.
struct AwqGroup {
  uint16_t scale_f16 = 0;
  uint8_t zero = 0;
};
AwqGroup QuantizeAwqGroupRef(const float* x, int64_t n, uint8_t* q);

}  // namespace xinfer
