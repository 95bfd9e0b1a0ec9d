// vLLM's scoring APIs for a sequence classification model (a reranker, EngineConfig::scores):
// POST /score and /v1/score (`text_1`, `text_2`: a string or a list each, paired 1:1, 1:N or N:N)
// and the Jina / Cohere compatible POST /rerank, /v1/rerank and /v2/rerank (`query`,
// `documents`, `top_n`). Each pair is one engine request whose prompt is the tokens of its first
// text then of its second (as a tokenizer encodes a text pair), and whose score is the engine's.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "server/protocol.h"
#include "server/responses.h"

namespace xinfer::server {

// True for the paths the scoring APIs answer on.
bool IsScorePath(const std::string& path);
bool IsRerankPath(const std::string& path);

StatusOr<GenerationRequest> ParseScoreRequest(const nlohmann::ordered_json& body,
                                              const ProtocolContext& ctx);
StatusOr<GenerationRequest> ParseRerankRequest(const nlohmann::ordered_json& body,
                                               const ProtocolContext& ctx);

// One per exchange, for either API; never streams. Not thread-safe.
class ScoreBuilder : public OutputBuilder {
 public:
  explicit ScoreBuilder(const GenerationRequest& request);
  std::string Add(int prompt_index, const RequestOutput& out) override;
  std::string StreamStart() override { return ""; }
  std::string StreamEnd() override { return ""; }
  nlohmann::ordered_json Response() override;

 private:
  const GenerationRequest& req_;
  std::vector<float> scores_;  // per pair
};

}  // namespace xinfer::server
