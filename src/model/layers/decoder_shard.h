// Tensor parallelism for the decoder, as Megatron-LM splits it and vLLM shards Llama / Qwen: each
// rank holds a slice of the query and key/value heads (q/k/v column-parallel, o_proj
// row-parallel), a slice of the MLP's intermediate features (gate/up column-parallel, down_proj
// row-parallel) and a slice of the vocabulary (embedding and lm_head); norms are replicated. Two
// all-reduces per layer (after o_proj and after down_proj) and one after the embedding sum the
// ranks' partial results; each rank writes its vocabulary columns of the logits.
//
// Ownership: plain values; the Communicator is not owned (the engine keeps it alive).
#pragma once

#include <cstdint>

#include "backend/communicator.h"
#include "model/layers/decoder.h"

namespace xinfer {

struct DecoderShard {
  int rank = 0;
  int size = 1;
  Communicator* comm = nullptr;             // null when size == 1
  int64_t q_head_begin = 0, q_heads = 0;    // this rank's query heads
  int64_t kv_head_begin = 0, kv_heads = 0;  // its key/value heads (one, replicated, when the
                                            // ranks outnumber the model's kv heads)
  int64_t intermediate_begin = 0, intermediate = 0;
  int64_t vocab_begin = 0, vocab_end = 0;  // rows of the embedding and lm_head
  bool whole() const { return size == 1; }
};

// The whole model on one rank.
DecoderShard WholeDecoder(const ModelConfig& config);

// Rank `rank` of `size`'s part of `weights`, or InvalidArgument saying why the model cannot be
// split that way: query heads not a multiple of `size`, key/value heads neither a multiple nor a
// divisor of it (vLLM's rules), or quantized blocks / AWQ groups that a head or intermediate
// slice would cut through (o_proj and down_proj are split along their input features).
StatusOr<DecoderShard> PlanDecoderShard(const ModelConfig& config, const DecoderWeights& weights,
                                        int rank, int size);

// The weights rank `shard` computes with: row slices share `full`'s storage, column slices
// (o_proj, down_proj) are host copies. o_proj's bias goes to rank 0 only (added once).
DecoderWeights ShardDecoderWeights(const DecoderWeights& full, const DecoderShard& shard,
                                   const ModelConfig& config);

}  // namespace xinfer
