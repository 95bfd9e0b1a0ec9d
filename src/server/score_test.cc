#include "server/score.h"

#include <gtest/gtest.h>

namespace xinfer::server {
namespace {

GenerationRequest Rerank(std::vector<std::string> documents, int top_n) {
  GenerationRequest r;
  r.endpoint = Endpoint::kRerank;
  r.id = "rerank-1";
  r.model = "m";
  for (size_t i = 0; i < documents.size(); ++i)
    r.prompts.push_back({1, 2, static_cast<int32_t>(i)});
  r.documents = std::move(documents);
  r.top_n = top_n;
  return r;
}

RequestOutput Scored(float score) {
  RequestOutput out;
  out.finished = true;
  out.score = score;
  return out;
}

// Highest first; equal scores keep the documents' order; top_n 0 or past the end: all.
TEST(ScoreBuilderTest, RerankOrdersByScoreStablyAndCutsAtTopN) {
  for (const auto& [top_n, expected] : std::vector<std::pair<int, std::vector<int>>>{
           {0, {2, 0, 3, 1}}, {2, {2, 0}}, {9, {2, 0, 3, 1}}}) {
    const GenerationRequest req = Rerank({"a", "b", "c", "d"}, top_n);
    ScoreBuilder b(req);
    // Outputs arrive in any order.
    for (const auto& [i, s] :
         std::vector<std::pair<int, float>>{{3, 0.5f}, {0, 0.5f}, {1, 0.1f}, {2, 0.9f}})
      EXPECT_EQ(b.Add(i, Scored(s)), "");
    const nlohmann::ordered_json r = b.Response();
    std::vector<int> order;
    for (const auto& x : r["results"]) {
      order.push_back(x["index"].get<int>());
      EXPECT_EQ(x["document"]["text"], req.documents[x["index"].get<size_t>()]);
    }
    EXPECT_EQ(order, expected) << top_n;
    EXPECT_EQ(r["usage"]["total_tokens"], 12);
    EXPECT_EQ(r["id"], "rerank-1");
  }
}

TEST(ScoreBuilderTest, ScoreListsEveryPairInOrder) {
  GenerationRequest req = Rerank({"a", "b"}, 0);
  req.endpoint = Endpoint::kScore;
  ScoreBuilder b(req);
  b.Add(1, Scored(0.25f));
  b.Add(0, Scored(0.75f));
  const nlohmann::ordered_json r = b.Response();
  EXPECT_EQ(r["object"], "list");
  ASSERT_EQ(r["data"].size(), 2u);
  EXPECT_EQ(r["data"][0]["score"].get<float>(), 0.75f);
  EXPECT_EQ(r["data"][1]["score"].get<float>(), 0.25f);
  EXPECT_EQ(r["data"][1]["object"], "score");
  EXPECT_EQ(r["usage"]["prompt_tokens"], 6);
}

}  // namespace
}  // namespace xinfer::server
