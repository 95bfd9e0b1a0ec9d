#include "sampling/sampler.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <utility>

#include "sampling/counter_rng.h"
#include "sampling/logits_filters.h"

namespace xinfer {
namespace {

// Vocab-sized buffers reused by every Sampler on this thread (see sampler.h).
struct Scratch {
  std::vector<Candidate> candidates;
  std::vector<float> raw_logits;  // only when logprobs are requested
  std::vector<int32_t> ids;       // repetition-penalty id union
  std::vector<float> weights;     // DrawUnfiltered's, one per token
};

Scratch& ThreadScratch() {
  thread_local Scratch scratch;
  return scratch;
}

}  // namespace

Sampler::Sampler(const SamplingParams& params, std::vector<int32_t> eos_token_ids,
                 uint64_t fallback_seed, std::shared_ptr<const TokenVocabulary> vocabulary)
    : params_(params),
      eos_token_ids_(std::move(eos_token_ids)),
      seed_(params.seed.value_or(fallback_seed)) {
  guided_ = NewGuide(params_, std::move(vocabulary));
}

Status Sampler::CachePromptIds(std::span<const int32_t> prompt_ids, int32_t vocab_size) {
  // The size check is a cheap guard against a caller passing a different prompt.
  if (prompt_cached_ && prompt_cached_size_ == prompt_ids.size()) return Status::Ok();
  prompt_unique_.assign(prompt_ids.begin(), prompt_ids.end());
  for (size_t i = 0; i < prompt_unique_.size(); ++i) {
    const int32_t id = prompt_unique_[i];
    if (id < 0 || id >= vocab_size) {
      prompt_unique_.clear();
      prompt_cached_ = false;
      return InvalidArgument("prompt token id {} at position {} is out of range [0, {})", id, i,
                             vocab_size);
    }
  }
  std::sort(prompt_unique_.begin(), prompt_unique_.end());
  prompt_unique_.erase(std::unique(prompt_unique_.begin(), prompt_unique_.end()),
                       prompt_unique_.end());
  prompt_cached_ = true;
  prompt_cached_size_ = prompt_ids.size();
  return Status::Ok();
}

Status Sampler::ProcessLogits(std::span<float> logits, std::span<const int32_t> prompt_ids,
                              std::span<const int32_t> output_ids) {
  const auto vocab = static_cast<int32_t>(logits.size());
  if (!params_.allowed_token_ids.empty()) {
    // Keep the allowed logits aside, mask everything, put them back.
    std::vector<Candidate>& kept = ThreadScratch().candidates;
    kept.clear();
    for (int32_t id : params_.allowed_token_ids) {
      if (id < 0 || id >= vocab)
        return InvalidArgument("allowed_token_ids entry {} is out of range [0, {})", id, vocab);
      kept.push_back({id, logits[static_cast<size_t>(id)], 0.0});
    }
    std::fill(logits.begin(), logits.end(), -std::numeric_limits<float>::infinity());
    for (const Candidate& c : kept) logits[static_cast<size_t>(c.id)] = c.logit;
  }
  // bad_words: a word's last token is masked where the output ends with the rest of it.
  for (const std::vector<int32_t>& word : params_.bad_words_token_ids) {
    const size_t prefix = word.size() - 1;
    if (prefix > output_ids.size() || static_cast<size_t>(word.back()) >= logits.size()) continue;
    if (std::equal(word.begin(), word.end() - 1, output_ids.end() - prefix))
      logits[static_cast<size_t>(word.back())] = -std::numeric_limits<float>::infinity();
  }
  if (!params_.logit_bias.empty()) {
    for (const auto& [id, bias] : params_.logit_bias) {
      if (id < 0 || id >= vocab) {
        return InvalidArgument("logit_bias token id {} is out of range [0, {})", id, vocab);
      }
    }
    ApplyLogitBias(logits, params_.logit_bias);
  }

  const bool repetition = params_.repetition_penalty != 1.0f;
  const bool presence_frequency =
      params_.presence_penalty != 0.0f || params_.frequency_penalty != 0.0f;
  if (repetition || presence_frequency) {
    XI_RETURN_IF_ERROR(output_counts_.Update(output_ids, vocab, "output"));
  }
  if (repetition) {
    XI_RETURN_IF_ERROR(CachePromptIds(prompt_ids, vocab));
    // Each token seen in prompt or output is penalized exactly once.
    std::vector<int32_t>& ids = ThreadScratch().ids;
    ids.assign(prompt_unique_.begin(), prompt_unique_.end());
    for (const auto& [id, count] : output_counts_.counts()) {
      if (!std::binary_search(prompt_unique_.begin(), prompt_unique_.end(), id)) ids.push_back(id);
    }
    ApplyRepetitionPenalty(logits, ids, params_.repetition_penalty);
  }
  if (presence_frequency) {
    ApplyPresenceFrequencyPenalties(logits, output_counts_.counts(), params_.presence_penalty,
                                    params_.frequency_penalty);
  }

  // min_tokens: the tokens that would end the sequence cannot be sampled yet. With ignore_eos,
  // EOS does not end anything, so its probability is left alone.
  const bool before_min_tokens =
      output_ids.size() < static_cast<size_t>(std::max(params_.min_tokens, 0));
  // Guided: the end tokens, and their logits before min_tokens masks them.
  std::vector<int32_t>& ends = ThreadScratch().ids;
  std::vector<std::pair<int32_t, float>> held_ends;
  if (guided_) {
    ends.assign(eos_token_ids_.begin(), eos_token_ids_.end());
    ends.insert(ends.end(), params_.stop_token_ids.begin(), params_.stop_token_ids.end());
    if (before_min_tokens)
      for (int32_t id : ends)
        if (id >= 0 && static_cast<size_t>(id) < logits.size())
          held_ends.emplace_back(id, logits[static_cast<size_t>(id)]);
  }
  if (before_min_tokens) {
    MaskTokens(logits, params_.stop_token_ids);
    if (!params_.ignore_eos) MaskTokens(logits, eos_token_ids_);
  }
  if (guided_) {
    XI_RETURN_IF_ERROR(guided_->CatchUp(output_ids));
    guided_->Mask(logits, ends);
    // A complete value that cannot go on leaves only the end, which min_tokens holds back: the
    // guide wins (the output is the whole value, shorter than min_tokens) rather than no token.
    if (!held_ends.empty() && guided_->complete() &&
        std::none_of(logits.begin(), logits.end(),
                     [](float l) { return l > -std::numeric_limits<float>::infinity(); }))
      for (const auto& [id, logit] : held_ends) logits[static_cast<size_t>(id)] = logit;
  }
  return Status::Ok();
}

StatusOr<SampleResult> Sampler::Sample(std::span<float> logits, std::span<const int32_t> prompt_ids,
                                       std::span<const int32_t> output_ids) {
  if (logits.empty()) return Internal("Sample called with empty logits");
  Scratch& scratch = ThreadScratch();
  SanitizeLogits(logits);

  SampleResult result;
  const bool want_logprobs = params_.logprobs >= 0;
  std::optional<LogSoftmax> raw_log_softmax;
  if (want_logprobs) {
    // Raw mode: everything below modifies `logits`, so keep the originals for the chosen token.
    raw_log_softmax.emplace(logits);
    result.top_logprobs = TopLogprobs(logits, params_.logprobs, *raw_log_softmax);
    scratch.raw_logits.assign(logits.begin(), logits.end());
  }

  XI_RETURN_IF_ERROR(ProcessLogits(logits, prompt_ids, output_ids));

  if (params_.greedy()) {
    result.token = Argmax(logits);
  } else if ((params_.top_k <= 0 || static_cast<size_t>(params_.top_k) >= logits.size()) &&
             (params_.top_p >= 1.0f || params_.min_p <= 0.0f)) {
    // No top_k, and top_p or min_p alone: the same draws as below without a list of the whole
    // vocabulary.
    const double u = UniformForStep(seed_, output_ids.size());
    result.token = params_.top_p >= 1.0f ? DrawUnfiltered(logits, params_.temperature,
                                                          params_.min_p, u, scratch.weights)
                                         : DrawNucleus(logits, params_.temperature, params_.top_p,
                                                       u, scratch.weights, scratch.candidates);
  } else {
    std::vector<Candidate>& cands = scratch.candidates;
    CollectTopK(logits, params_.top_k, cands);
    ComputeWeights(cands, params_.temperature);
    ApplyTopP(cands, params_.top_p);
    ApplyMinP(cands, params_.min_p);
    result.token = DrawToken(cands, UniformForStep(seed_, output_ids.size()));
  }
  if (result.token < 0) {
    return Internal("no token has a finite logit after processing ({} logits)", logits.size());
  }
  if (want_logprobs) {
    result.logprob =
        raw_log_softmax->LogProb(scratch.raw_logits[static_cast<size_t>(result.token)]);
  }
  return result;
}

}  // namespace xinfer
