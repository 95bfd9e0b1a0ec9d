#include "runner/model_runner.h"

#include <algorithm>

#include "kv/kv_types.h"

namespace xinfer {

ModelRunner::ModelRunner(CausalLM& model, Backend& backend, int32_t num_blocks, int32_t block_size,
                         DType kv_dtype, bool hidden_states)
    : model_(model),
      backend_(backend),
      cache_(model.NewKvCache(num_blocks, block_size, kv_dtype)),
      hidden_states_(hidden_states) {
  batch_.hidden_states = hidden_states;
}

Status ModelRunner::Execute(const SchedulerOutput& output) {
  ForwardBatch& b = batch_;
  b.token_ids.clear();
  b.positions.clear();
  b.slot_mapping.clear();
  b.query_start.assign(1, 0);
  b.logits_rows.clear();
  b.loras.clear();
  sampling_index_.assign(output.scheduled.size(), -1);
  prompt_logits_index_.assign(output.scheduled.size(), -1);
  size_t max_blocks = 1;
  for (const ScheduledSequence& s : output.scheduled)
    max_blocks = std::max(max_blocks, s.block_table.size());
  b.max_blocks_per_seq = static_cast<int32_t>(max_blocks);
  b.block_tables.assign(output.scheduled.size() * max_blocks, 0);

  for (size_t i = 0; i < output.scheduled.size(); ++i) {
    const ScheduledSequence& s = output.scheduled[i];
    XI_CHECK(static_cast<int>(s.token_ids.size()) == s.num_new_tokens);
    for (int j = 0; j < s.num_new_tokens; ++j) {
      const int pos = s.start_position + j;
      b.token_ids.push_back(s.token_ids[j]);
      b.positions.push_back(pos);
      b.slot_mapping.push_back(
          static_cast<int32_t>(SlotForPosition(s.block_table, pos, cache_.block_size)));
    }
    std::copy(s.block_table.begin(), s.block_table.end(), b.block_tables.begin() + i * max_blocks);
    if (s.lora_id != 0) {
      auto lora = loras_.find(s.lora_id);
      if (lora == loras_.end())
        return Internal("request {} runs with LoRA id {}, which is not loaded", s.request_id,
                        s.lora_id);
      if (b.loras.empty()) b.loras.assign(output.scheduled.size(), nullptr);
      b.loras[i] = lora->second.get();
    }
    XI_CHECK(s.num_prompt_logits >= 0 && s.num_prompt_logits <= s.num_new_tokens);
    if (s.num_prompt_logits > 0) {
      prompt_logits_index_[i] = static_cast<int>(b.logits_rows.size());
      for (int j = 0; j < s.num_prompt_logits; ++j)
        b.logits_rows.push_back(b.query_start.back() + j);
    }
    b.query_start.push_back(static_cast<int32_t>(b.token_ids.size()));
    if (s.needs_sampling) {
      // The last real position, then each draft's (speculative decoding).
      const auto k = static_cast<int32_t>(s.spec_token_ids.size());
      XI_CHECK(k < s.num_new_tokens);
      sampling_index_[i] = static_cast<int>(b.logits_rows.size());
      const auto last = static_cast<int32_t>(b.token_ids.size() - 1);
      for (int32_t j = k; j >= 0; --j) b.logits_rows.push_back(last - j);
    }
  }
  if (b.token_ids.empty()) return Status::Ok();
  const int64_t rows = static_cast<int64_t>(b.logits_rows.size());
  const int64_t width = hidden_states_ ? model_.config().hidden_size : model_.config().vocab_size;
  if (logits_.empty() || logits_.numel() < rows * width)
    logits_ = backend_.NewTensor(DType::kF32, {std::max<int64_t>(rows, 1), width});
  Tensor out = logits_.Slice0(0, rows);
  XI_RETURN_IF_ERROR(model_.Forward(b, cache_, out));
  num_computed_tokens_ += static_cast<int64_t>(b.token_ids.size());
  return Status::Ok();
}

}  // namespace xinfer
