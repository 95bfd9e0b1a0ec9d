// vLLM's scoring APIs for a sequence classification model (a reranker, EngineConfig::scores):
// POST /score and /v1/score (`text_1`, `text_2`: a string or a list each, paired 1:1, 1:N or N:N)
// and the Jina / Cohere compatible POST /rerank, /v1/rerank and /v2/rerank (`query`,
// `documents`, `top_n`). Each pair is one engine request whose prompt is the tokens of its first
// text then of its second (as a tokenizer encodes a text pair), and whose score is the engine's.
// truncate_prompt_tokens cuts each pair as vLLM's tokenizer call does (PairLengthsLongestFirst).
// A classifier with its own head (ModelConfig::has_score_head) scores with one label; of any
// number of labels it answers POST /classify and /v1/classify (`input` as on /v1/embeddings): each
// input's label probabilities and its most probable label, as vLLM's classification API.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "server/protocol.h"
#include "server/responses.h"

namespace xinfer::server {

// True for the paths the scoring APIs answer on.
bool IsScorePath(const std::string& path);
bool IsRerankPath(const std::string& path);

// How many tokens of a (first, second) text pair remain when the pair is cut to `limit` tokens as
// Hugging Face tokenizers' longest_first truncation cuts it (what vLLM asks for with
// truncate_prompt_tokens): the shorter text whole and the longer one the rest when the shorter
// fits in half the limit, else half each with the odd token to the longer (on a tie, the second).
// Each text keeps its beginning: vLLM truncates pooling models' inputs on the right.
std::pair<size_t, size_t> PairLengthsLongestFirst(size_t first, size_t second, size_t limit);

StatusOr<GenerationRequest> ParseScoreRequest(const nlohmann::ordered_json& body,
                                              const ProtocolContext& ctx);
StatusOr<GenerationRequest> ParseRerankRequest(const nlohmann::ordered_json& body,
                                               const ProtocolContext& ctx);
bool IsClassifyPath(const std::string& path);
StatusOr<GenerationRequest> ParseClassifyRequest(const nlohmann::ordered_json& body,
                                                 const ProtocolContext& ctx);

// One per exchange, for /score, /rerank or /classify; never streams. Not thread-safe.
class ScoreBuilder : public OutputBuilder {
 public:
  explicit ScoreBuilder(const GenerationRequest& request);
  std::string Add(int prompt_index, const RequestOutput& out) override;
  std::string StreamStart() override { return ""; }
  std::string StreamEnd() override { return ""; }
  nlohmann::ordered_json Response() override;

 private:
  nlohmann::ordered_json ClassifyResponse() const;

  const GenerationRequest& req_;
  std::vector<float> scores_;              // per pair
  std::vector<std::vector<float>> probs_;  // per input (/classify)
};

}  // namespace xinfer::server
