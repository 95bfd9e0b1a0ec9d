#include "model/layers/rope_scaling.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "base/check.h"

namespace xinfer {
namespace {

// The dimension pair whose frequency turns `rotations` times over `context` positions (YaRN's
// correction dimension, fractional).
double CorrectionDim(double rotations, int dim, double base, int context) {
  return dim * std::log(context / (rotations * 2 * std::numbers::pi)) / (2 * std::log(base));
}

// YaRN: pairs that turn fast over the original context keep their frequency (extrapolate),
// slow ones are divided by the factor (interpolate), with a linear ramp in between.
void Yarn(const RopeScaling& s, int dim, double base, RopeSpec& rope) {
  const int half = dim / 2;
  const double low = std::max(
      std::floor(CorrectionDim(s.beta_fast, dim, base, s.original_max_position_embeddings)), 0.0);
  double high =
      std::min(std::ceil(CorrectionDim(s.beta_slow, dim, base, s.original_max_position_embeddings)),
               static_cast<double>(dim - 1));
  if (low == high) high += 0.001;
  for (int i = 0; i < half; ++i) {
    const double ramp = std::clamp((i - low) / (high - low), 0.0, 1.0);
    const double extrapolate = (1 - ramp) * s.extrapolation_factor;
    const double f = rope.inv_freq[i];
    rope.inv_freq[i] = f / s.factor * (1 - extrapolate) + f * extrapolate;
  }
  rope.scale = (s.factor <= 1 ? 1.0 : 0.1 * std::log(s.factor) + 1.0) * s.attn_factor;
}

// Llama 3: wavelengths shorter than original / high_freq_factor keep their frequency, longer
// than original / low_freq_factor are divided by the factor, smoothly in between.
void Llama3(const RopeScaling& s, RopeSpec& rope) {
  const double context = s.original_max_position_embeddings;
  const double low_freq_wavelen = context / s.low_freq_factor;
  const double high_freq_wavelen = context / s.high_freq_factor;
  for (double& f : rope.inv_freq) {
    const double wavelen = 2 * std::numbers::pi / f;
    if (wavelen < high_freq_wavelen) continue;
    if (wavelen > low_freq_wavelen) {
      f /= s.factor;
      continue;
    }
    const double smooth =
        s.low_freq_factor == s.high_freq_factor
            ? 0.0
            : (context / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
    f = (1 - smooth) * f / s.factor + smooth * f;
  }
}

}  // namespace

RopeSpec MakeRopeSpec(const ModelConfig& config) {
  const RopeScaling& s = config.rope_scaling;
  const int dim = config.head_dim;
  double base = config.rope_theta;
  // Dynamic NTK, as vLLM fixes it for the whole stretched context (max_len = factor * trained):
  // a larger base, base * (factor^2 - factor + 1)^(d / (d - 2)).
  if (s.type == "dynamic" && dim > 2)
    base *= std::pow(s.factor * s.factor - (s.factor - 1), static_cast<double>(dim) / (dim - 2));
  RopeSpec rope = PlainRope(base, dim);
  if (s.type == "linear") {
    for (double& f : rope.inv_freq) f /= s.factor;
  } else if (s.type == "yarn") {
    Yarn(s, dim, base, rope);
  } else if (s.type == "llama3") {
    Llama3(s, rope);
  } else {
    XI_CHECK_MSG(s.type.empty() || s.type == "dynamic", "unvalidated rope scaling type");
  }
  if (!s.freq_factors.empty()) {
    XI_CHECK(s.freq_factors.size() == rope.inv_freq.size());
    for (size_t i = 0; i < rope.inv_freq.size(); ++i) rope.inv_freq[i] /= s.freq_factors[i];
  }
  return rope;
}

}  // namespace xinfer
