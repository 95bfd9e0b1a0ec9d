// Qwen2/Qwen3 byte-level BPE against llama.cpp's test vectors and the golden prompts.
#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "tokenizer/test_util.h"
#include "tokenizer/tokenizer.h"

namespace xinfer {
namespace {

using ::xinfer::testing::ReadOrDie;
using ::xinfer::testing::SharedDir;
using ::xinfer::testing::SharedTokenizer;

// The .inp file is "text\n__ggml_vocab_test__\n" repeated: every text, the last one included,
// is followed by the separator.
std::vector<std::string> SplitInputs(const std::string& all) {
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < all.size()) {
    size_t hit = all.find(sep, pos);
    if (hit == std::string::npos) {
      out.push_back(all.substr(pos));  // tolerate a missing final separator
      break;
    }
    out.push_back(all.substr(pos, hit - pos));
    pos = hit + sep.size();
  }
  return out;
}

std::vector<std::vector<int32_t>> ReadIdLines(const std::string& all) {
  std::vector<std::vector<int32_t>> out;
  std::istringstream in(all);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::vector<int32_t> ids;
    int32_t id;
    while (ls >> id) ids.push_back(id);
    out.push_back(std::move(ids));
  }
  return out;
}

TEST(QwenTokenizer, LlamaCppVectors) {
  XI_REQUIRE_SHARED();
  const Tokenizer& tok = SharedTokenizer("tiny-qwen3");
  const std::string base = SharedDir() + "/golden/tokenizer/ggml-vocab-qwen2.gguf";
  auto texts = SplitInputs(ReadOrDie(base + ".inp"));
  auto expected = ReadIdLines(ReadOrDie(base + ".out"));
  ASSERT_EQ(texts.size(), 46u);
  ASSERT_EQ(expected.size(), texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    auto ids = tok.Encode(texts[i], /*add_special_tokens=*/false);
    ASSERT_TRUE(ids.ok()) << ids.status().ToString();
    EXPECT_EQ(*ids, expected[i]) << "case " << i << ": '" << texts[i] << "'";
    EXPECT_EQ(tok.Decode(*ids), texts[i]) << "case " << i;  // these texts are already NFC
  }
}

void CheckGolden(const std::string& model) {
  const Tokenizer& tok = SharedTokenizer(model);
  auto golden =
      nlohmann::json::parse(ReadOrDie(SharedDir() + "/golden/logits/" + model + "/golden.json"));
  ASSERT_FALSE(golden["prompts"].empty());
  for (const auto& p : golden["prompts"]) {
    const std::string text = p["text"].get<std::string>();
    const auto want = p["ids"].get<std::vector<int32_t>>();
    auto ids = tok.Encode(text, /*add_special_tokens=*/true);
    ASSERT_TRUE(ids.ok()) << ids.status().ToString();
    EXPECT_EQ(*ids, want) << model << ": " << text;
    EXPECT_EQ(tok.Decode(want), text) << model;
  }
}

TEST(QwenTokenizer, GoldenPromptsQwen3) {
  XI_REQUIRE_SHARED();
  CheckGolden("tiny-qwen3");
}

TEST(QwenTokenizer, GoldenPromptsQwen2) {
  XI_REQUIRE_SHARED();
  CheckGolden("tiny-qwen2");
}

TEST(QwenTokenizer, SpecialTokens) {
  XI_REQUIRE_SHARED();
  const Tokenizer& tok = SharedTokenizer("tiny-qwen3");
  auto ids = tok.Encode("<|im_start|>user\nhi<|im_end|>");
  ASSERT_TRUE(ids.ok());
  ASSERT_EQ(ids->size(), 5u);
  EXPECT_EQ((*ids)[0], 151644);
  EXPECT_EQ((*ids)[4], 151645);
  EXPECT_EQ(*ids, (std::vector<int32_t>{151644, 872, 198, 6023, 151645}));
  EXPECT_EQ(tok.Decode(*ids), "<|im_start|>user\nhi<|im_end|>");
  EXPECT_EQ(tok.Decode(*ids, /*skip_special_tokens=*/true), "user\nhi");
  // Non-special added tokens are matched too, and survive skip_special_tokens.
  auto think = tok.Encode("<think>\nx</think>");
  ASSERT_TRUE(think.ok());
  EXPECT_EQ(think->front(), 151667);
  EXPECT_EQ(think->back(), 151668);
  EXPECT_EQ(tok.Decode(*think, true), "<think>\nx</think>");
  // A near miss is ordinary text.
  auto near = tok.Encode("<|im_start>");
  ASSERT_TRUE(near.ok());
  for (int32_t id : *near) EXPECT_LT(id, 151643);
}

// TokenBytes: the tokens of a text, each mapped back to its bytes, concatenate to the text, also
// where a token holds only part of a UTF-8 character; special tokens stand for no bytes.
TEST(QwenTokenizer, TokenBytesConcatenateToTheText) {
  XI_REQUIRE_SHARED();
  const Tokenizer& tok = SharedTokenizer("tiny-qwen3");
  for (const char* text : {"Hello world", "{\"a\": [1, 2.5e3], \"b\": null}\n",
                           "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\xe4\xbd\xa0\xe5\xa5\xbd",
                           "<think>\nx</think>"}) {
    auto ids = tok.Encode(text, /*add_special_tokens=*/false);
    ASSERT_TRUE(ids.ok());
    std::string joined;
    for (int32_t id : *ids) joined += tok.TokenBytes(id);
    EXPECT_EQ(joined, text);
  }
  EXPECT_EQ(tok.TokenBytes(151644), "");  // <|im_start|>
  EXPECT_EQ(tok.TokenBytes(151667), "<think>");
  EXPECT_EQ(tok.TokenBytes(-1), "");
  EXPECT_EQ(tok.TokenBytes(tok.vocab_size()), "");
}

TEST(QwenTokenizer, Metadata) {
  XI_REQUIRE_SHARED();
  const Tokenizer& tok = SharedTokenizer("tiny-qwen3");
  EXPECT_EQ(tok.vocab_size(), 151669);
  EXPECT_FALSE(tok.bos_id().has_value());
  EXPECT_EQ(tok.bos_token(), "");
  EXPECT_EQ(tok.eos_token(), "<|im_end|>");
  EXPECT_EQ(tok.eos_id(), std::optional<int32_t>(151645));
  EXPECT_NE(tok.chat_template().find("im_start"), std::string::npos);
  EXPECT_TRUE(tok.IsSpecial(151643));
  EXPECT_TRUE(tok.IsSpecial(151645));
  EXPECT_FALSE(tok.IsSpecial(151657));  // <tool_call> is added but not special
  EXPECT_FALSE(tok.IsSpecial(100));
  EXPECT_FALSE(tok.IsSpecial(-1));
  EXPECT_EQ(tok.IdToToken(151644), "<|im_start|>");
  EXPECT_EQ(tok.IdToToken(220), "\xC4\xA0");  // "Ġ", the byte-level space
  EXPECT_EQ(tok.IdToToken(-1), "");
  EXPECT_EQ(tok.IdToToken(151669), "");
  EXPECT_EQ(tok.TokenToId("<|im_end|>"), std::optional<int32_t>(151645));
  EXPECT_EQ(tok.TokenToId("hello"), std::optional<int32_t>(14990));
  EXPECT_FALSE(tok.TokenToId("definitely not a token").has_value());
}

TEST(QwenTokenizer, DecodeSkipsInvalidIds) {
  XI_REQUIRE_SHARED();
  const Tokenizer& tok = SharedTokenizer("tiny-qwen3");
  std::vector<int32_t> ids = {-5, 14990, 1 << 30, 151669, 151644};
  EXPECT_EQ(tok.Decode(ids), "hello<|im_start|>");
  EXPECT_EQ(tok.Decode(ids, true), "hello");
  EXPECT_EQ(tok.Decode({}), "");
}

TEST(QwenTokenizer, DecodeInvalidUtf8GivesReplacement) {
  XI_REQUIRE_SHARED();
  const Tokenizer& tok = SharedTokenizer("tiny-qwen3");
  // "中" is E4 B8 AD; byte-level tokens for single bytes are U+00E4 "ä", U+00B8 "¸", U+00AD → Ń.
  auto e4 = tok.TokenToId("\xC3\xA4");
  auto b8 = tok.TokenToId("\xC2\xB8");
  auto ad = tok.TokenToId("\xC5\x83");
  auto a = tok.TokenToId("A");
  ASSERT_TRUE(e4 && b8 && ad && a);
  EXPECT_EQ(tok.Decode(std::vector<int32_t>{*e4, *b8, *ad}), "中");
  EXPECT_EQ(tok.Decode(std::vector<int32_t>{*e4, *b8}), "\xEF\xBF\xBD");
  EXPECT_EQ(tok.Decode(std::vector<int32_t>{*e4, *b8, *a}),
            "\xEF\xBF\xBD"
            "A");
  EXPECT_EQ(tok.Decode(std::vector<int32_t>{*b8, *a, *e4}),
            "\xEF\xBF\xBD"
            "A\xEF\xBF\xBD");
}

TEST(QwenTokenizer, RejectsInvalidUtf8Input) {
  XI_REQUIRE_SHARED();
  const Tokenizer& tok = SharedTokenizer("tiny-qwen3");
  auto ids = tok.Encode("abc\xFF");
  ASSERT_FALSE(ids.ok());
  EXPECT_EQ(ids.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(ids.status().message().find("UTF-8"), std::string::npos);
}

TEST(QwenTokenizer, NfcNormalization) {
  XI_REQUIRE_SHARED();
  const Tokenizer& tok = SharedTokenizer("tiny-qwen3");
  auto composed = tok.Encode("caf\xC3\xA9");     // é precomposed
  auto decomposed = tok.Encode("cafe\xCC\x81");  // e + combining acute
  ASSERT_TRUE(composed.ok() && decomposed.ok());
  EXPECT_EQ(*composed, *decomposed);
}

TEST(QwenTokenizer, ConcurrentEncodeDecode) {
  XI_REQUIRE_SHARED();
  const Tokenizer& tok = SharedTokenizer("tiny-qwen3");
  const std::string text = "Concurrency test: 并发 tokenization, many words words words 12345!";
  auto want = tok.Encode(text);
  ASSERT_TRUE(want.ok());
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        std::string s = text + std::to_string(t * 1000 + i);
        auto ids = tok.Encode(s);
        if (!ids.ok() || tok.Decode(*ids) != s) failures++;
        auto again = tok.Encode(text);
        if (!again.ok() || *again != *want) failures++;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST(QwenTokenizer, LoadTime) {
  XI_REQUIRE_SHARED();
  auto start = std::chrono::steady_clock::now();
  auto tok = Tokenizer::FromDir(SharedDir() + "/models/tiny-qwen3");
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  std::printf("tiny-qwen3 tokenizer load: %.1f ms\n", ms);
  RecordProperty("load_ms", static_cast<int>(ms));
  EXPECT_LT(ms, 10000.0);  // generous: sanitizer builds are slow; Release is ~sub-second
}

}  // namespace
}  // namespace xinfer
