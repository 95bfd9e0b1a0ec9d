#include "server/embeddings.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/json_int32.h"

namespace xinfer::server {
namespace {

using json = nlohmann::ordered_json;

}  // namespace

std::string Base64(std::string_view bytes) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const uint32_t v = static_cast<uint8_t>(bytes[i]) << 16 |
                       static_cast<uint8_t>(bytes[i + 1]) << 8 | static_cast<uint8_t>(bytes[i + 2]);
    for (int s : {18, 12, 6, 0}) out += kAlphabet[(v >> s) & 63];
  }
  if (i < bytes.size()) {
    uint32_t v = static_cast<uint8_t>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) v |= static_cast<uint8_t>(bytes[i + 1]) << 8;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += i + 1 < bytes.size() ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

StatusOr<GenerationRequest> ParseEmbeddingsRequest(const json& body, const ProtocolContext& ctx) {
  XI_ASSIGN_OR_RETURN(GenerationRequest r,
                      NewPoolingRequest(body, ctx, Endpoint::kEmbeddings, "embd-"));
  if (body.contains("encoding_format") && !body["encoding_format"].is_null()) {
    const json& f = body["encoding_format"];
    if (f != "float" && f != "base64")
      return InvalidArgument("encoding_format must be 'float' or 'base64'");
    r.encoding_format = f.get<std::string>();
  }
  if (body.contains("dimensions") && !body["dimensions"].is_null()) {
    // As vLLM: only a matryoshka-trained model's embeddings keep their meaning when cut.
    const ModelConfig* m = ctx.model_config;
    if (m == nullptr || !m->is_matryoshka)
      return InvalidArgument(
          "dimensions: the model does not support matryoshka representation, changing output "
          "dimensions will lead to poor results (--hf-overrides '{{\"is_matryoshka\": true}}' "
          "declares it)");
    const std::optional<int32_t> d = JsonInt32(body["dimensions"]);
    if (!d || *d < 1 || *d > m->hidden_size)
      return InvalidArgument("dimensions must be an integer in [1, {}]", m->hidden_size);
    if (!m->matryoshka_dimensions.empty() &&
        std::find(m->matryoshka_dimensions.begin(), m->matryoshka_dimensions.end(), *d) ==
            m->matryoshka_dimensions.end())
      return InvalidArgument("dimensions {} is not one of the model's matryoshka_dimensions {}", *d,
                             fmt::format("{}", fmt::join(m->matryoshka_dimensions, ", ")));
    r.embedding_dimensions = *d;
    r.normalize_embeddings = ctx.normalize_embeddings;
  }
  XI_RETURN_IF_ERROR(AddPoolingInputs(body, ctx, "embedding generation", r));
  return r;
}

EmbeddingsBuilder::EmbeddingsBuilder(const GenerationRequest& request)
    : req_(request), embeddings_(request.prompts.size()) {}

std::string EmbeddingsBuilder::Add(int prompt_index, const RequestOutput& out) {
  if (out.embedding.empty()) return "";
  std::vector<float>& e = embeddings_.at(static_cast<size_t>(prompt_index));
  e = out.embedding;
  if (req_.embedding_dimensions > 0 && static_cast<size_t>(req_.embedding_dimensions) < e.size()) {
    // The first `dimensions`, normalized again where the pooler normalizes (as vLLM cuts
    // before normalizing; the cut of a normalized vector, normalized, is the same).
    e.resize(static_cast<size_t>(req_.embedding_dimensions));
    if (req_.normalize_embeddings) NormalizeL2(e);
  }
  return "";
}

json EmbeddingsBuilder::Response() {
  json data = json::array();
  int tokens = 0;
  for (size_t i = 0; i < embeddings_.size(); ++i) {
    const std::vector<float>& e = embeddings_[i];
    json embedding;
    if (req_.encoding_format == "base64") {
      std::string bytes(e.size() * sizeof(float), '\0');  // little-endian hosts (x86, ARM64)
      std::memcpy(bytes.data(), e.data(), bytes.size());
      embedding = Base64(bytes);
    } else {
      embedding = e;
    }
    data.push_back({{"index", i}, {"object", "embedding"}, {"embedding", std::move(embedding)}});
    tokens += static_cast<int>(req_.prompts[i].size());
  }
  return {
      {"id", req_.id},           {"object", "list"},
      {"created", req_.created}, {"model", req_.model},
      {"data", std::move(data)}, {"usage", {{"prompt_tokens", tokens}, {"total_tokens", tokens}}}};
}

}  // namespace xinfer::server
