// LoRA adapters (vLLM's --enable-lora / --lora-modules): PEFT's low-rank deltas on the decoder's
// projections, applied per sequence at run time, so one base model serves many fine-tunes in
// one batch. A targeted projection computes x W^T + s (x A^T) B^T with A [r, in], B [out, r] and
// s = lora_alpha / r (lora_alpha / sqrt(r) under use_rslora), as PEFT's merged weight
// W + s B A does.
//
// Ownership: a LoraAdapter holds its (placed, F32) tensors; it is shared (shared_ptr) by the
// engine's registry and whatever runs it, and immutable once loaded (LoadLoraAdapter,
// CausalLM::LoadLora), so any thread may read it.
#pragma once

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "base/status.h"
#include "formats/hf_config.h"

namespace xinfer {

// The projections an adapter may target, in the order of PEFT's module names below.
enum LoraTarget { kLoraQ, kLoraK, kLoraV, kLoraO, kLoraGate, kLoraUp, kLoraDown, kNumLoraTargets };
// "q_proj", "k_proj", ..., "down_proj".
const char* LoraTargetName(int target);
// "model.layers.<layer>.self_attn.q_proj", ..., ".mlp.down_proj": the module PEFT names (after
// its "base_model.model." prefix).
std::string LoraModuleName(int layer, int target);
// [out, in] of the target's base weight in a model of `config` (its A is [r, in], its B [out, r]).
std::array<int64_t, 2> LoraTargetShape(const ModelConfig& config, int target);

// One targeted projection: a [r, in] and b [out, r] with the scale folded into b. Both empty when
// the adapter leaves the projection alone.
struct LoraPair {
  Tensor a, b;
  bool empty() const { return a.empty(); }
};

using LoraLayer = std::array<LoraPair, kNumLoraTargets>;

struct LoraAdapter {
  std::string path;
  int rank = 0;  // the largest rank of its projections
  std::vector<LoraLayer> layers;
  // Tensor parallelism: rank r of the model computes with shards[r], its slices of the pairs
  // (ShardLoraLayers) on its own backend; `layers` is then empty. Empty for a one-rank model.
  std::vector<std::vector<LoraLayer>> shards;
  size_t bytes = 0;  // of its tensors as held (every rank's)
  // The layers the model's rank `shard_rank` computes with.
  const std::vector<LoraLayer>& LayersFor(int shard_rank) const {
    return shards.empty() ? layers : shards[static_cast<size_t>(shard_rank)];
  }
};

struct DecoderShard;  // model/layers/decoder_shard.h

// Reads a PEFT LoRA folder (adapter_config.json, adapter_model.safetensors) for a model of
// `config`: tensors `base_model.model.model.layers.N.{self_attn,mlp}.<proj>.lora_{A,B}.weight`,
// F32/F16/BF16, widened to F32 with the scale folded into B, and placed on `backend`. Refused
// with a Status naming the culprit: ranks above `max_lora_rank` (vLLM's --max-lora-rank), DoRA,
// trained biases, modules_to_save, rank / alpha patterns, a tensor for anything but the seven
// projections (embeddings, lm_head, a mixture-of-experts layer's experts), wrong shapes, a
// missing half of a pair.
StatusOr<std::shared_ptr<const LoraAdapter>> LoadLoraAdapter(const std::string& dir,
                                                             const ModelConfig& config,
                                                             int max_lora_rank, Backend& backend);
// LoadLoraAdapter's two halves: the checked tensors as read (host F32, scale folded into B, not
// placed), and their placement on `backend` (bytes counted).
StatusOr<std::shared_ptr<LoraAdapter>> ReadLoraAdapter(const std::string& dir,
                                                       const ModelConfig& config,
                                                       int max_lora_rank);
void PlaceLoraAdapter(LoraAdapter& adapter, Backend& backend);

// Tensor parallelism: the slices of `whole`'s (host, unplaced) pairs that rank `shard` computes
// with, as the decoder's weights are split (decoder_shard.h). A column-parallel projection
// (q/k/v, gate/up) keeps A whole and takes its output rows of B; a row-parallel one (o, down)
// takes its input columns of A and keeps B whole, so each rank's (x_r A_r^T) B^T is its share of
// the sum the all-reduce after the projection adds up. Host copies.
std::vector<LoraLayer> ShardLoraLayers(const LoraAdapter& whole, const DecoderShard& shard,
                                       const ModelConfig& config);

}  // namespace xinfer
