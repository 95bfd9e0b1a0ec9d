#include "server/score.h"

#include <algorithm>
#include <numeric>

#include "base/json_int32.h"

namespace xinfer::server {
namespace {

using json = nlohmann::ordered_json;

// Pairs per request: as many engine requests as a batched completions prompt may make.
constexpr size_t kMaxPairs = 2048;

// A string, or a non-empty list of strings (at most kMaxPairs), as texts.
StatusOr<std::vector<std::string>> Texts(const json& body, const char* field) {
  if (!body.contains(field) || body[field].is_null())
    return InvalidArgument("{} is required", field);
  const json& v = body[field];
  if (v.is_string()) return std::vector<std::string>{v.get<std::string>()};
  if (!v.is_array() || v.empty() || v.size() > kMaxPairs)
    return InvalidArgument("{} must be a string or a list of 1 to {} strings", field, kMaxPairs);
  std::vector<std::string> texts;
  for (const json& x : v) {
    if (!x.is_string()) return InvalidArgument("{} must be a string or a list of strings", field);
    texts.push_back(x.get<std::string>());
  }
  return texts;
}

// The common part of both requests: id, model, and the prompts of the (first, second) pairs.
StatusOr<GenerationRequest> PairsRequest(const json& body, const ProtocolContext& ctx,
                                         Endpoint endpoint, const char* id_prefix,
                                         const std::vector<std::string>& firsts,
                                         const std::vector<std::string>& seconds) {
  // A head of several labels classifies (/classify); a score is one label's probability.
  const ModelConfig* m = ctx.model_config;
  if (m != nullptr && m->has_score_head() && m->id2label.size() != 1)
    return InvalidArgument(
        "the model classifies into {} labels; the Score and Rerank APIs need a one-label "
        "classifier (use /classify)",
        m->id2label.size());
  XI_ASSIGN_OR_RETURN(GenerationRequest r, NewPoolingRequest(body, ctx, endpoint, id_prefix));
  XI_ASSIGN_OR_RETURN(std::optional<size_t> limit, TruncationLimit(body, ctx));
  for (size_t i = 0; i < seconds.size(); ++i) {
    const std::string& first = firsts.size() == 1 ? firsts[0] : firsts[i];
    XI_ASSIGN_OR_RETURN(std::vector<int32_t> ids, ctx.tokenizer.Encode(first, true));
    XI_ASSIGN_OR_RETURN(std::vector<int32_t> second, ctx.tokenizer.Encode(seconds[i], false));
    if (limit) {
      const auto [keep_first, keep_second] =
          PairLengthsLongestFirst(ids.size(), second.size(), *limit);
      ids.resize(keep_first);
      second.resize(keep_second);
    }
    ids.insert(ids.end(), second.begin(), second.end());
    if (ids.empty()) return InvalidArgument("pair {} has no tokens", i);
    if (static_cast<int>(ids.size()) > ctx.max_model_len)
      return InvalidArgument(
          "This model's maximum context length is {} tokens. However, pair {} has {} tokens. "
          "Please reduce the length of the input.",
          ctx.max_model_len, i, ids.size());
    r.prompts.push_back(std::move(ids));
  }
  return r;
}

}  // namespace

std::pair<size_t, size_t> PairLengthsLongestFirst(size_t first, size_t second, size_t limit) {
  if (first + second <= limit) return {first, second};
  const bool first_shorter = first <= second;  // a tie counts the second as the longer
  const size_t shorter = first_shorter ? first : second;
  // The shorter text whole if it fits in half the limit, the longer one the rest; else half each,
  // the odd token to the longer one.
  const size_t keep_shorter = shorter <= limit / 2 ? shorter : limit / 2;
  const size_t keep_longer = limit - keep_shorter;
  return first_shorter ? std::pair{keep_shorter, keep_longer}
                       : std::pair{keep_longer, keep_shorter};
}

bool IsScorePath(const std::string& path) { return path == "/score" || path == "/v1/score"; }

bool IsRerankPath(const std::string& path) {
  return path == "/rerank" || path == "/v1/rerank" || path == "/v2/rerank";
}

StatusOr<GenerationRequest> ParseScoreRequest(const json& body, const ProtocolContext& ctx) {
  XI_ASSIGN_OR_RETURN(std::vector<std::string> firsts, Texts(body, "text_1"));
  XI_ASSIGN_OR_RETURN(std::vector<std::string> seconds, Texts(body, "text_2"));
  if (firsts.size() != 1 && firsts.size() != seconds.size())
    return InvalidArgument("text_1 and text_2 must pair 1:1, 1:N or N:N, got {} and {} texts",
                           firsts.size(), seconds.size());
  return PairsRequest(body, ctx, Endpoint::kScore, "score-", firsts, seconds);
}

StatusOr<GenerationRequest> ParseRerankRequest(const json& body, const ProtocolContext& ctx) {
  if (!body.contains("query") || !body["query"].is_string())
    return InvalidArgument("query must be a string");
  XI_ASSIGN_OR_RETURN(std::vector<std::string> documents, Texts(body, "documents"));
  int top_n = 0;
  if (body.contains("top_n") && !body["top_n"].is_null()) {
    const std::optional<int32_t> n = JsonInt32(body["top_n"]);
    if (!n || *n < 0) return InvalidArgument("top_n must be a non-negative integer");
    top_n = *n;
  }
  XI_ASSIGN_OR_RETURN(GenerationRequest r,
                      PairsRequest(body, ctx, Endpoint::kRerank, "rerank-",
                                   {body["query"].get<std::string>()}, documents));
  r.documents = std::move(documents);
  r.top_n = top_n;
  return r;
}

bool IsClassifyPath(const std::string& path) {
  return path == "/classify" || path == "/v1/classify";
}

StatusOr<GenerationRequest> ParseClassifyRequest(const json& body, const ProtocolContext& ctx) {
  if (ctx.model_config == nullptr || !ctx.model_config->has_score_head())
    return InvalidArgument(
        "The model does not support the Classification API: it needs a classification head "
        "(score.weight), not a reranker's classifier_from_token");
  XI_ASSIGN_OR_RETURN(GenerationRequest r,
                      NewPoolingRequest(body, ctx, Endpoint::kClassify, "classify-"));
  XI_RETURN_IF_ERROR(AddPoolingInputs(body, ctx, "classification", r));
  r.labels = ctx.model_config->id2label;
  return r;
}

ScoreBuilder::ScoreBuilder(const GenerationRequest& request)
    : req_(request), scores_(request.prompts.size(), 0.f), probs_(request.prompts.size()) {}

std::string ScoreBuilder::Add(int prompt_index, const RequestOutput& out) {
  const auto i = static_cast<size_t>(prompt_index);
  if (out.score) scores_.at(i) = *out.score;
  if (!out.probs.empty()) probs_.at(i) = out.probs;
  return "";
}

json ScoreBuilder::ClassifyResponse() const {
  json data = json::array();
  int tokens = 0;
  for (size_t i = 0; i < probs_.size(); ++i) {
    const std::vector<float>& p = probs_[i];
    const size_t best = static_cast<size_t>(std::max_element(p.begin(), p.end()) - p.begin());
    data.push_back({{"index", i},
                    {"label", best < req_.labels.size() ? req_.labels[best] : ""},
                    {"probs", p},
                    {"num_classes", p.size()}});
    tokens += static_cast<int>(req_.prompts[i].size());
  }
  return {
      {"id", req_.id},
      {"object", "list"},
      {"created", req_.created},
      {"model", req_.model},
      {"data", std::move(data)},
      {"usage", {{"prompt_tokens", tokens}, {"total_tokens", tokens}, {"completion_tokens", 0}}}};
}

json ScoreBuilder::Response() {
  if (req_.endpoint == Endpoint::kClassify) return ClassifyResponse();
  int tokens = 0;
  for (const std::vector<int32_t>& p : req_.prompts) tokens += static_cast<int>(p.size());
  if (req_.endpoint == Endpoint::kScore) {
    json data = json::array();
    for (size_t i = 0; i < scores_.size(); ++i)
      data.push_back({{"index", i}, {"object", "score"}, {"score", scores_[i]}});
    return {{"id", req_.id},
            {"object", "list"},
            {"created", req_.created},
            {"model", req_.model},
            {"data", std::move(data)},
            {"usage", {{"prompt_tokens", tokens}, {"total_tokens", tokens}}}};
  }
  // Rerank: the documents by score, highest first (ties in input order), the first top_n.
  std::vector<size_t> order(scores_.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return scores_[a] > scores_[b]; });
  if (req_.top_n > 0 && static_cast<size_t>(req_.top_n) < order.size()) order.resize(req_.top_n);
  json results = json::array();
  for (size_t i : order)
    results.push_back({{"index", i},
                       {"document", {{"text", req_.documents[i]}}},
                       {"relevance_score", scores_[i]}});
  return {{"id", req_.id},
          {"model", req_.model},
          {"usage", {{"total_tokens", tokens}}},
          {"results", std::move(results)}};
}

}  // namespace xinfer::server
