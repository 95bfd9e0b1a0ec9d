// GGUF tokenizers (tokenizer.ggml.* metadata) against llama.cpp's own test vectors
// (../shared/golden/tokenizer: the vocabulary-only GGUF files with their .inp texts and .out ids,
// tokenized without BOS as llama.cpp's test-tokenizer-0 does), the tiny-qwen3 golden prompts,
// and the engine running a .gguf model with the tokenizer from the file.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/gguf_tokenizer_loader.h"
#include "engine/llm_engine.h"
#include "engine/prompt_builder.h"
#include "engine_test_util.h"
#include "test_util.h"

namespace xinfer {
namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Case {
  std::string text;
  std::vector<int32_t> ids;
};

// llama.cpp's format: every text is followed by "\n__ggml_vocab_test__\n"; .out has one line
// of space-separated ids per text.
std::vector<Case> ReadCases(const std::string& base) {
  const std::string inp = ReadAll(base + ".inp"), out = ReadAll(base + ".out");
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<Case> cases;
  for (size_t pos = 0; pos < inp.size();) {
    size_t end = inp.find(sep, pos);
    if (end == std::string::npos) break;
    cases.push_back({inp.substr(pos, end - pos), {}});
    pos = end + sep.size();
  }
  std::istringstream lines(out);
  std::string line;
  for (Case& c : cases) {
    if (!std::getline(lines, line)) break;
    std::istringstream ids(line);
    for (int32_t id; ids >> id;) c.ids.push_back(id);
  }
  return cases;
}

// Runs every case; returns how many match and reports each mismatch.
void ExpectVectors(const std::string& vocab_file, const std::string& cases_base) {
  auto tok = LoadGgufTokenizer(vocab_file);
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  std::vector<Case> cases = ReadCases(cases_base);
  ASSERT_GT(cases.size(), 10u);
  int passed = 0, round_trips = 0;
  for (const Case& c : cases) {
    auto ids = (*tok)->Encode(c.text, /*add_special_tokens=*/false);
    ASSERT_TRUE(ids.ok()) << ids.status().ToString();
    if (*ids == c.ids) {
      ++passed;
    } else {
      ADD_FAILURE() << "text '" << c.text << "': got " << ::testing::PrintToString(*ids) << " want "
                    << ::testing::PrintToString(c.ids);
    }
    round_trips += (*tok)->Decode(c.ids) == c.text;
  }
  std::cout << cases_base << ": " << passed << "/" << cases.size() << " encode, " << round_trips
            << "/" << cases.size() << " decode round trips\n";
}

const std::string kGolden = "golden/tokenizer/";

TEST(GgufTokenizerTest, Gpt2Vectors) {
  XI_REQUIRE_SHARED(kGolden + "ggml-vocab-gpt-2.gguf");
  const std::string base = testing::SharedDir() + "/" + kGolden + "ggml-vocab-gpt-2.gguf";
  ExpectVectors(base, base);
}

TEST(GgufTokenizerTest, LlamaSpmVectors) {
  XI_REQUIRE_SHARED(kGolden + "ggml-vocab-llama-spm.gguf");
  const std::string base = testing::SharedDir() + "/" + kGolden + "ggml-vocab-llama-spm.gguf";
  ExpectVectors(base, base);
}

// The shared golden set has qwen2's texts and ids but not its vocabulary file; the tiny-qwen3
// model file carries the same Qwen2 vocabulary (pre "qwen2").
TEST(GgufTokenizerTest, Qwen2Vectors) {
  XI_REQUIRE_SHARED(kGolden + "ggml-vocab-qwen2.gguf.inp");
  XI_REQUIRE_SHARED("models/tiny-qwen3-bf16.gguf");
  const std::string dir = testing::SharedDir() + "/";
  const std::string vocab = testing::HaveShared(kGolden + "ggml-vocab-qwen2.gguf")
                                ? dir + kGolden + "ggml-vocab-qwen2.gguf"
                                : dir + "models/tiny-qwen3-bf16.gguf";
  ExpectVectors(vocab, dir + kGolden + "ggml-vocab-qwen2.gguf");
}

TEST(GgufTokenizerTest, TinyQwen3GoldenPromptsAndHfTokenizer) {
  XI_REQUIRE_SHARED("models/tiny-qwen3-bf16.gguf");
  XI_REQUIRE_SHARED("golden/logits/tiny-qwen3/golden.json");
  const std::string dir = testing::SharedDir();
  auto gguf = LoadGgufTokenizer(dir + "/models/tiny-qwen3-bf16.gguf");
  ASSERT_TRUE(gguf.ok()) << gguf.status().ToString();
  auto golden = nlohmann::json::parse(ReadAll(dir + "/golden/logits/tiny-qwen3/golden.json"));
  ASSERT_FALSE(golden["prompts"].empty());
  for (const auto& p : golden["prompts"]) {
    auto ids = (*gguf)->Encode(p["text"].get<std::string>());
    ASSERT_TRUE(ids.ok()) << ids.status().ToString();
    EXPECT_EQ(*ids, p["ids"].get<std::vector<int32_t>>()) << p["name"];
  }
  // Same special tokens and template as the Hugging Face folder of the same model.
  auto hf = Tokenizer::FromDir(dir + "/models/tiny-qwen3");
  ASSERT_TRUE(hf.ok()) << hf.status().ToString();
  const std::string chat = "<|im_start|>user\nHi <think>x</think>\n<|im_end|>\n";
  EXPECT_EQ(*(*gguf)->Encode(chat), *(*hf)->Encode(chat));
  EXPECT_EQ((*gguf)->eos_id(), (*hf)->eos_id());
  EXPECT_TRUE((*gguf)->IsSpecial(*(*gguf)->TokenToId("<|im_start|>")));
  EXPECT_FALSE((*gguf)->chat_template().empty());
}

TEST(GgufTokenizerTest, BadVocabulariesAreErrors) {
  GgufVocab v;
  v.model = "gpt2";
  EXPECT_FALSE(TokenizerFromGgufVocab(v).ok());  // no tokens
  v.tokens = {"a", "b", "ab"};
  v.merges = {"a b"};
  EXPECT_TRUE(TokenizerFromGgufVocab(v).ok());
  v.pre = "falcon";
  EXPECT_EQ(TokenizerFromGgufVocab(v).status().code(), StatusCode::kUnimplemented);
  v.pre = "";
  v.merges = {"a c"};
  EXPECT_EQ(TokenizerFromGgufVocab(v).status().code(), StatusCode::kInvalidArgument);
  v.merges = {"ab"};
  EXPECT_EQ(TokenizerFromGgufVocab(v).status().code(), StatusCode::kInvalidArgument);
  v.merges.clear();
  v.token_types = {1, 1};
  EXPECT_EQ(TokenizerFromGgufVocab(v).status().code(), StatusCode::kInvalidArgument);
  v.token_types.clear();
  v.eos_id = 7;
  EXPECT_EQ(TokenizerFromGgufVocab(v).status().code(), StatusCode::kInvalidArgument);
  v.eos_id.reset();
  v.model = "llama";  // needs scores
  EXPECT_EQ(TokenizerFromGgufVocab(v).status().code(), StatusCode::kInvalidArgument);
  v.model = "bert";
  EXPECT_EQ(TokenizerFromGgufVocab(v).status().code(), StatusCode::kUnimplemented);
}

// A tiny sentencepiece vocabulary: merges follow the scores, not the order of the pairs.
TEST(GgufTokenizerTest, SpmMergesByScore) {
  GgufVocab v;
  v.model = "llama";
  v.tokens = {"<unk>",
              "<s>",
              "</s>",
              "\xE2\x96\x81",
              "a",
              "b",
              "c",
              "ab",
              "bc",
              "\xE2\x96\x81"
              "a",
              "<0x7A>"};
  v.scores = {0, 0, 0, -1, -1, -1, -1, -5, -2, -3, 0};
  v.token_types = {2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 6};
  v.bos_id = 1;
  v.eos_id = 2;
  v.unk_id = 0;
  auto tok = TokenizerFromGgufVocab(v);
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  // "▁abc": "bc" (-2) beats "▁a" (-3) beats "ab" (-5); "z" falls back to its byte.
  EXPECT_EQ(*(*tok)->Encode("abcz"), (std::vector<int32_t>{1, 9, 8, 10}));
  EXPECT_EQ((*tok)->Decode(std::vector<int32_t>{1, 9, 8, 10}, true), "abcz");
}

// `xinfer generate --model tiny-qwen3-q8_0.gguf --prompt "Hello"` through the engine: the
// tokenizer and chat template come from the file.
TEST(GgufTokenizerTest, EngineGeneratesFromGgufModel) {
  XI_REQUIRE_SHARED("models/tiny-qwen3-q8_0.gguf");
  EngineConfig c;
  c.model = testing::SharedDir() + "/models/tiny-qwen3-q8_0.gguf";
  c.kv_cache_memory = 64 << 20;
  c.max_model_len = 512;
  auto engine = LLMEngine::Create(c);
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  auto prompt = (*engine)->tokenizer().Encode("Hello");
  ASSERT_TRUE(prompt.ok());
  ASSERT_FALSE(prompt->empty());
  SamplingParams p;
  p.temperature = 0;
  p.max_tokens = 8;
  p.ignore_eos = true;
  ASSERT_TRUE((*engine)->AddRequest("r", {*prompt, p}).ok());
  auto done = testing::RunToCompletion(**engine);
  EXPECT_EQ(done["r/0"].token_ids.size(), 8u);
  EXPECT_EQ(done["r/0"].text, (*engine)->tokenizer().Decode(done["r/0"].token_ids));

  auto builder = PromptBuilder::Create(c.model, (*engine)->tokenizer(), "");
  ASSERT_TRUE(builder.ok()) << builder.status().ToString();
  auto text = (*builder)->RenderChat(
      nlohmann::ordered_json::parse(R"({"messages":[{"role":"user","content":"Hello"}]})"));
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_NE(text->find("<|im_start|>user\nHello"), std::string::npos) << *text;
}

}  // namespace
}  // namespace xinfer
