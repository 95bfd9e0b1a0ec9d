// POST /v1/embeddings, as vLLM serves a pooling model (`--task embed`): `input` as a string, a
// list of strings, a list of token ids or a list of such lists, each one engine request whose
// embedding (EngineConfig::embeds: the last position's hidden state, normalized) is returned as
// OpenAI's `list` of `embedding` objects, as floats or base64 (little-endian float32, what the
// official clients ask for by default).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "server/protocol.h"
#include "server/responses.h"

namespace xinfer::server {

StatusOr<GenerationRequest> ParseEmbeddingsRequest(const nlohmann::ordered_json& body,
                                                   const ProtocolContext& ctx);

// One per exchange; never streams. Not thread-safe.
class EmbeddingsBuilder : public OutputBuilder {
 public:
  explicit EmbeddingsBuilder(const GenerationRequest& request);
  std::string Add(int prompt_index, const RequestOutput& out) override;
  std::string StreamStart() override { return ""; }
  std::string StreamEnd() override { return ""; }
  nlohmann::ordered_json Response() override;

 private:
  const GenerationRequest& req_;
  std::vector<std::vector<float>> embeddings_;  // per input
};

// RFC 4648 base64 of `bytes` (with padding).
std::string Base64(std::string_view bytes);

}  // namespace xinfer::server
