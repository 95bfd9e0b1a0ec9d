// Counter-based randomness for sampling: the uniform draw for step t of a sequence is a pure
// function of (seed, t). A sequence's tokens therefore depend only on its seed and its logits —
// not on batch composition, on how many draws other sequences made, or on whether the step was
// recomputed after preemption. Header-only, stateless, thread-safe.
#pragma once

#include <cstdint>

namespace xinfer {

// SplitMix64's finalizer (Steele et al.): a bijective 64-bit mixer with full avalanche.
constexpr uint64_t SplitMix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Uniform double in [0, 1) for (seed, step): 53 random bits, so 1.0 is never returned.
constexpr double UniformForStep(uint64_t seed, uint64_t step) {
  // Mixing the seed first keeps nearby seeds (s, s+1: vLLM's n>1 children) uncorrelated per step.
  const uint64_t z = SplitMix64(SplitMix64(seed) ^ SplitMix64(step ^ 0xD1B54A32D192ED03ull));
  return static_cast<double>(z >> 11) * 0x1.0p-53;
}

}  // namespace xinfer
