#include "server/score.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <utility>
#include <vector>

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

// Hugging Face tokenizers' longest_first on a pair cut to 7 tokens, every combination of lengths
// 0, 2, 4 and 8 (the cases its own tests enumerate), then the edges.
TEST(PairLengthsLongestFirstTest, CutsAsTokenizersLongestFirst) {
  using P = std::pair<size_t, size_t>;
  const std::vector<std::pair<P, P>> cases = {
      {{0, 0}, {0, 0}}, {{0, 2}, {0, 2}}, {{0, 4}, {0, 4}}, {{0, 8}, {0, 7}},
      {{2, 0}, {2, 0}}, {{2, 2}, {2, 2}}, {{2, 4}, {2, 4}}, {{2, 8}, {2, 5}},
      {{4, 0}, {4, 0}}, {{4, 2}, {4, 2}}, {{4, 4}, {3, 4}}, {{4, 8}, {3, 4}},
      {{8, 0}, {7, 0}}, {{8, 2}, {5, 2}}, {{8, 4}, {4, 3}}, {{8, 8}, {3, 4}}};
  for (const auto& [in, want] : cases)
    EXPECT_EQ(PairLengthsLongestFirst(in.first, in.second, 7), want)
        << in.first << ", " << in.second;
  // An even limit splits evenly; a limit of 1 leaves one token, the longer text's (the second's
  // on a tie); the result always fits and never grows a text.
  EXPECT_EQ(PairLengthsLongestFirst(10, 10, 6), (P{3, 3}));
  EXPECT_EQ(PairLengthsLongestFirst(5, 5, 1), (P{0, 1}));
  EXPECT_EQ(PairLengthsLongestFirst(9, 5, 1), (P{1, 0}));
  for (size_t a = 0; a < 12; ++a)
    for (size_t b = 0; b < 12; ++b)
      for (size_t limit = 1; limit < 12; ++limit) {
        const auto [x, y] = PairLengthsLongestFirst(a, b, limit);
        EXPECT_LE(x, a);
        EXPECT_LE(y, b);
        EXPECT_EQ(x + y, std::min(a + b, limit)) << a << " " << b << " " << limit;
      }
}

}  // namespace
}  // namespace xinfer::server
