#include "sampling/logits_processors.h"

#include <cmath>
#include <limits>

namespace xinfer {

void SanitizeLogits(std::span<float> logits) {
  for (float& x : logits) {
    if (std::isnan(x)) x = -std::numeric_limits<float>::infinity();
  }
}

void ApplyLogitBias(std::span<float> logits, std::span<const std::pair<int32_t, float>> bias) {
  for (const auto& [id, b] : bias) logits[static_cast<size_t>(id)] += b;
}

void ApplyRepetitionPenalty(std::span<float> logits, std::span<const int32_t> unique_ids,
                            float penalty) {
  for (int32_t id : unique_ids) {
    float& x = logits[static_cast<size_t>(id)];
    x = x > 0.0f ? x / penalty : x * penalty;
  }
}

void ApplyPresenceFrequencyPenalties(std::span<float> logits,
                                     const std::unordered_map<int32_t, int32_t>& counts,
                                     float presence, float frequency) {
  for (const auto& [id, count] : counts) {
    if (count <= 0) continue;
    logits[static_cast<size_t>(id)] -= presence + frequency * static_cast<float>(count);
  }
}

void MaskTokens(std::span<float> logits, std::span<const int32_t> ids) {
  for (int32_t id : ids) {
    if (id >= 0 && static_cast<size_t>(id) < logits.size()) {
      logits[static_cast<size_t>(id)] = -std::numeric_limits<float>::infinity();
    }
  }
}

int32_t Argmax(std::span<const float> logits) {
  int32_t best = -1;
  float best_value = -std::numeric_limits<float>::infinity();
  for (size_t i = 0; i < logits.size(); ++i) {
    // Strict > keeps the lowest id on ties and never selects NaN or -inf.
    if (logits[i] > best_value) {
      best = static_cast<int32_t>(i);
      best_value = logits[i];
    }
  }
  return best;
}

Status TokenCounter::Update(std::span<const int32_t> ids, int32_t vocab_size, const char* what) {
  if (ids.size() < counted_) {
    counts_.clear();
    counted_ = 0;
  }
  for (size_t i = counted_; i < ids.size(); ++i) {
    const int32_t id = ids[i];
    if (id < 0 || id >= vocab_size) {
      counts_.clear();
      counted_ = 0;
      return InvalidArgument("{} token id {} at position {} is out of range [0, {})", what, id, i,
                             vocab_size);
    }
    ++counts_[id];
  }
  counted_ = ids.size();
  return Status::Ok();
}

}  // namespace xinfer
