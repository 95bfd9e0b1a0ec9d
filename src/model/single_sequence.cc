#include <algorithm>
#include <numeric>

#include "model/causal_lm.h"

namespace xinfer {

SingleSequence::SingleSequence(CausalLM& model, Backend& backend, int64_t capacity, DType kv_dtype)
    : model_(model), capacity_(capacity) {
  const int32_t blocks = static_cast<int32_t>((capacity + kBlockSize - 1) / kBlockSize);
  cache_ = model.NewKvCache(std::max(blocks, 1), kBlockSize, kv_dtype);
  logits_ = backend.NewTensor(DType::kF32, {1, model.config().vocab_size});
}

Status SingleSequence::Append(std::span<const int32_t> tokens, std::span<float> logits) {
  const int64_t t = static_cast<int64_t>(tokens.size());
  if (t == 0) return InvalidArgument("no tokens to run");
  if (length_ + t > capacity_)
    return OutOfRange("sequence of {} tokens exceeds its capacity {}", length_ + t, capacity_);
  if (static_cast<int64_t>(logits.size()) != model_.config().vocab_size)
    return Internal("logits span has {} entries, vocab is {}", logits.size(),
                    model_.config().vocab_size);
  ForwardBatch batch;
  batch.token_ids.assign(tokens.begin(), tokens.end());
  batch.positions.resize(t);
  std::iota(batch.positions.begin(), batch.positions.end(), static_cast<int32_t>(length_));
  batch.slot_mapping = batch.positions;  // identity block table: block i holds positions 16i..
  batch.query_start = {0, static_cast<int32_t>(t)};
  batch.max_blocks_per_seq = cache_.num_blocks;
  batch.block_tables.resize(cache_.num_blocks);
  std::iota(batch.block_tables.begin(), batch.block_tables.end(), 0);
  batch.logits_rows = {static_cast<int32_t>(t - 1)};
  XI_RETURN_IF_ERROR(model_.Forward(batch, cache_, logits_));
  std::copy(logits_.data<float>(), logits_.data<float>() + logits.size(), logits.begin());
  length_ += t;
  return Status::Ok();
}

}  // namespace xinfer
