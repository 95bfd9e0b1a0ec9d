// Llama-style BPE (sentencepiece layout: Prepend/Replace normalizer, byte fallback, Strip decoder)
// on the TinyStories tokenizer.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tokenizer/test_util.h"
#include "tokenizer/tokenizer.h"

namespace xinfer {
namespace {

using ::xinfer::testing::ReadOrDie;
using ::xinfer::testing::SharedDir;
using ::xinfer::testing::SharedTokenizer;

constexpr char kModel[] = "tinystories-656k";

TEST(TinyStoriesTokenizer, GoldenPrompts) {
  XI_REQUIRE_SHARED();
  const Tokenizer& tok = SharedTokenizer(kModel);
  auto golden = nlohmann::json::parse(
      ReadOrDie(SharedDir() + "/golden/logits/" + std::string(kModel) + "/golden.json"));
  ASSERT_FALSE(golden["prompts"].empty());
  for (const auto& p : golden["prompts"]) {
    const std::string text = p["text"].get<std::string>();
    const auto want = p["ids"].get<std::vector<int32_t>>();
    auto ids = tok.Encode(text, /*add_special_tokens=*/true);
    ASSERT_TRUE(ids.ok()) << ids.status().ToString();
    EXPECT_EQ(*ids, want) << text;
    ASSERT_FALSE(want.empty());
    EXPECT_EQ(want.front(), 1);
    EXPECT_EQ(tok.Decode(want, /*skip_special_tokens=*/true), text);
    std::vector<int32_t> body(want.begin() + 1, want.end());
    EXPECT_EQ(tok.Decode(body), text);
  }
}

// TokenBytes on a sentencepiece vocabulary: `▁` is a space, <0xNN> byte-fallback tokens their
// byte; the tokens of a text concatenate to it with the space the normalizer prepends.
TEST(TinyStoriesTokenizer, TokenBytesConcatenateToTheText) {
  XI_REQUIRE_SHARED();
  const Tokenizer& tok = SharedTokenizer(kModel);
  for (const char* text : {"Once upon a time", "The little dog was happy. He said: hello!"}) {
    auto ids = tok.Encode(text, /*add_special_tokens=*/false);
    ASSERT_TRUE(ids.ok());
    std::string joined;
    for (int32_t id : *ids) joined += tok.TokenBytes(id);
    EXPECT_EQ(joined, std::string(" ") + text);
  }
}

TEST(TinyStoriesTokenizer, Metadata) {
  XI_REQUIRE_SHARED();
  const Tokenizer& tok = SharedTokenizer(kModel);
  EXPECT_EQ(tok.vocab_size(), 2048);
  EXPECT_EQ(tok.bos_id(), std::optional<int32_t>(1));
  EXPECT_EQ(tok.eos_id(), std::optional<int32_t>(2));
  EXPECT_EQ(tok.bos_token(), "<|start_story|>");
  EXPECT_EQ(tok.eos_token(), "<|end_story|>");
  EXPECT_EQ(tok.chat_template(), "");
  EXPECT_TRUE(tok.IsSpecial(0));
  EXPECT_TRUE(tok.IsSpecial(1));
  EXPECT_FALSE(tok.IsSpecial(80));
  EXPECT_EQ(tok.IdToToken(0), "<unk>");
}

TEST(TinyStoriesTokenizer, SpecialTokenHandling) {
  XI_REQUIRE_SHARED();
  const Tokenizer& tok = SharedTokenizer(kModel);
  auto empty = tok.Encode("");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(*empty, std::vector<int32_t>{1});
  auto bare = tok.Encode("", /*add_special_tokens=*/false);
  ASSERT_TRUE(bare.ok());
  EXPECT_TRUE(bare->empty());

  auto ids = tok.Encode("Once upon a time");
  ASSERT_TRUE(ids.ok());
  // Without skipping, the BOS text stays and the Strip step only sees its '<'.
  EXPECT_EQ(tok.Decode(*ids), "<|start_story|> Once upon a time");
  EXPECT_EQ(tok.Decode(*ids, true), "Once upon a time");

  // Added tokens here are normalized=true: they match the normalized text, in which the content
  // itself became "▁<|end_story|>" (the Prepend normalizer applied to it).
  auto eos = tok.Encode("The end <|end_story|>", false);
  ASSERT_TRUE(eos.ok());
  EXPECT_EQ(eos->back(), 2);
}

TEST(TinyStoriesTokenizer, UnknownCharactersBecomeOneUnk) {
  XI_REQUIRE_SHARED();
  const Tokenizer& tok = SharedTokenizer(kModel);
  // The vocabulary has no <0xNN> tokens, so byte fallback fails and fuse_unk applies.
  auto ids = tok.Encode("a##%b", false);
  ASSERT_TRUE(ids.ok());
  int unks = 0;
  for (int32_t id : *ids) unks += id == 0;
  EXPECT_EQ(unks, 1);
  EXPECT_NE(tok.Decode(*ids).find("<unk>"), std::string::npos);
  EXPECT_EQ(tok.Decode(*ids, true).find("<unk>"), std::string::npos);
}

TEST(TinyStoriesTokenizer, WhitespaceRoundTrip) {
  XI_REQUIRE_SHARED();
  const Tokenizer& tok = SharedTokenizer(kModel);
  for (const std::string s : {" leading", "  two leading", "trailing ", "a\nb\n\nc", " ", "\n"}) {
    auto ids = tok.Encode(s);
    ASSERT_TRUE(ids.ok());
    EXPECT_EQ(tok.Decode(*ids, true), s);
  }
}

}  // namespace
}  // namespace xinfer
