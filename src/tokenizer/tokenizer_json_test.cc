// tokenizer.json / tokenizer_config.json loading on small synthetic files, and load errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tokenizer/tokenizer.h"

namespace xinfer {
namespace {

using nlohmann::json;

// A character-level BPE over a small alphabet, no normalizer/pre-tokenizer/decoder.
json CharModel() {
  json vocab = json::object();
  const std::string chars = "<>/[]abcdeMS W";
  for (size_t i = 0; i < chars.size(); ++i) vocab[std::string(1, chars[i])] = i;
  vocab["ab"] = 20;
  return json{{"type", "BPE"}, {"vocab", vocab}, {"merges", json::array({"a b"})}};
}

json BaseJson() {
  return json{{"version", "1.0"},         {"added_tokens", json::array()}, {"normalizer", nullptr},
              {"pre_tokenizer", nullptr}, {"post_processor", nullptr},     {"decoder", nullptr},
              {"model", CharModel()}};
}

json Added(int id, const std::string& content, json flags = json::object()) {
  json t{{"id", id},        {"content", content},  {"single_word", false}, {"lstrip", false},
         {"rstrip", false}, {"normalized", false}, {"special", true}};
  for (auto it = flags.begin(); it != flags.end(); ++it) t[it.key()] = it.value();
  return t;
}

std::unique_ptr<Tokenizer> Load(const json& j, const json& config = nullptr) {
  auto t = Tokenizer::FromJsonText(j.dump(), config.is_null() ? "" : config.dump());
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return t.ok() ? std::move(*t) : nullptr;
}

std::vector<int32_t> Enc(const Tokenizer& t, const std::string& s, bool special = false) {
  auto ids = t.Encode(s, special);
  EXPECT_TRUE(ids.ok()) << ids.status().ToString();
  return ids.ok() ? *ids : std::vector<int32_t>{};
}

TEST(TokenizerJson, MergesAsPairsOrStrings) {
  json j = BaseJson();
  auto a = Load(j);
  j["model"]["merges"] = json::array({json::array({"a", "b"})});
  auto b = Load(j);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(Enc(*a, "abc"), (std::vector<int32_t>{20, 7}));
  EXPECT_EQ(Enc(*b, "abc"), (std::vector<int32_t>{20, 7}));
  EXPECT_EQ(a->Decode(Enc(*a, "abc")), "ab c");  // no decoder: tokens joined by spaces
}

// TokenBytes follows the decoder: a ByteLevel decoder maps each character back to its byte ("é"
// is byte 0xE9 of the alphabet); otherwise tokens are text, `▁` a space, <0xNN> that byte.
TEST(TokenizerJson, TokenBytesFollowTheDecoder) {
  json j = BaseJson();
  j["model"]["vocab"] = json{{"<0x41>", 0}, {"\u2581hi", 1}, {"\u00e9", 2}, {"ab", 3}};
  j["model"]["merges"] = json::array();
  j["added_tokens"] = json::array({Added(4, "<s>"), Added(5, "<x>", {{"special", false}})});
  j["decoder"] =
      json{{"type", "Sequence"},
           {"decoders",
            json::array(
                {json{{"type", "Replace"}, {"pattern", {{"String", "\u2581"}}}, {"content", " "}},
                 json{{"type", "ByteFallback"}}, json{{"type", "Fuse"}},
                 json{{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}})}};
  auto sp = Load(j);
  ASSERT_TRUE(sp);
  EXPECT_EQ(sp->TokenBytes(0), "A");
  EXPECT_EQ(sp->TokenBytes(1), " hi");
  EXPECT_EQ(sp->TokenBytes(2), "\xc3\xa9");
  EXPECT_EQ(sp->TokenBytes(3), "ab");
  EXPECT_EQ(sp->TokenBytes(4), "");  // special
  EXPECT_EQ(sp->TokenBytes(5), "<x>");
  j["decoder"] = json{{"type", "ByteLevel"}};
  auto bl = Load(j);
  ASSERT_TRUE(bl);
  EXPECT_EQ(bl->TokenBytes(2), "\xe9");
  EXPECT_EQ(bl->TokenBytes(3), "ab");
}

TEST(TokenizerJson, AddedTokenFlags) {
  json j = BaseJson();
  j["added_tokens"] = json::array(
      {Added(30, "[M]", {{"lstrip", true}}), Added(31, "[S]", {{"rstrip", true}}),
       Added(32, "[W]", {{"single_word", true}}), Added(33, "[MS]", {{"special", false}})});
  auto t = Load(j);
  ASSERT_TRUE(t);
  const int32_t sp = 12, a = 5, b = 6;
  EXPECT_EQ(Enc(*t, "a  [M] b"), (std::vector<int32_t>{a, 30, sp, b}));
  EXPECT_EQ(Enc(*t, "a [S]  b"), (std::vector<int32_t>{a, sp, 31, b}));
  EXPECT_EQ(Enc(*t, "a [W] b"), (std::vector<int32_t>{a, sp, 32, sp, b}));
  EXPECT_EQ(Enc(*t, "a[W]"), (std::vector<int32_t>{a, 3, 13, 4}));  // inside a word: no match
  EXPECT_EQ(Enc(*t, "[MS][M]"), (std::vector<int32_t>{33, 30}));    // longest match wins
  EXPECT_TRUE(t->IsSpecial(30));
  EXPECT_FALSE(t->IsSpecial(33));
  EXPECT_EQ(t->vocab_size(), 34);
  EXPECT_EQ(t->Decode(std::vector<int32_t>{a, 30, 33}, true), "a [MS]");
}

TEST(TokenizerJson, TemplateAndConfig) {
  json j = BaseJson();
  j["added_tokens"] = json::array({Added(40, "<s>"), Added(41, "</s>")});
  j["post_processor"] = {{"type", "TemplateProcessing"},
                         {"single", "<s>:0 $A:0 </s>:0"},
                         {"special_tokens", json::object()}};
  auto t = Load(j);
  ASSERT_TRUE(t);
  EXPECT_EQ(Enc(*t, "a", true), (std::vector<int32_t>{40, 0 + 5, 41}));
  EXPECT_EQ(Enc(*t, "a", false), (std::vector<int32_t>{5}));

  json config = {{"bos_token", {{"content", "<s>"}, {"lstrip", false}}},
                 {"eos_token", "</s>"},
                 {"add_bos_token", false},
                 {"add_eos_token", true},
                 {"tokenizer_class", "LlamaTokenizer"},
                 {"chat_template", json::array({{{"name", "tool_use"}, {"template", "T"}},
                                                {{"name", "default"}, {"template", "D"}}})}};
  auto c = Load(j, config);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->bos_token(), "<s>");
  EXPECT_EQ(c->bos_id(), std::optional<int32_t>(40));
  EXPECT_EQ(c->eos_id(), std::optional<int32_t>(41));
  EXPECT_EQ(c->chat_template(), "D");
  EXPECT_EQ(Enc(*c, "a", true), (std::vector<int32_t>{5, 41}));  // Llama class drops the BOS

  j["post_processor"] = nullptr;
  auto d = Load(j, json{{"bos_token", "<s>"}, {"add_bos_token", true}, {"eos_token", nullptr}});
  ASSERT_TRUE(d);
  EXPECT_EQ(Enc(*d, "a", true), (std::vector<int32_t>{40, 5}));
  EXPECT_FALSE(d->eos_id().has_value());
  EXPECT_EQ(d->eos_token(), "");
}

TEST(TokenizerJson, NormalizedAddedTokensMatchNormalizedText) {
  json j = BaseJson();
  j["normalizer"] = {{"type", "Lowercase"}};
  j["added_tokens"] = json::array({Added(50, "[m]", {{"normalized", true}})});
  auto t = Load(j);
  ASSERT_TRUE(t);
  EXPECT_EQ(Enc(*t, "a[M]"), (std::vector<int32_t>{5, 50}));
}

void ExpectError(const json& j, StatusCode code, const std::string& needle,
                 const std::string& config = "") {
  auto t = Tokenizer::FromJsonText(j.dump(), config);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), code) << t.status().ToString();
  EXPECT_NE(t.status().message().find(needle), std::string::npos) << t.status().ToString();
}

TEST(TokenizerErrors, MissingFile) {
  auto t = Tokenizer::FromDir("/nonexistent/model-dir");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kNotFound);
  EXPECT_NE(t.status().message().find("/nonexistent/model-dir/tokenizer.json"), std::string::npos)
      << t.status().message();
}

TEST(TokenizerErrors, MalformedJson) {
  auto t = Tokenizer::FromJsonText("{\"model\": {", "");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(t.status().message().find("malformed JSON"), std::string::npos);

  ExpectError(json::object(), StatusCode::kInvalidArgument, "missing 'model'");
  ExpectError(BaseJson(), StatusCode::kInvalidArgument, "tokenizer_config.json", "[1,");
}

TEST(TokenizerErrors, BadStructure) {
  json j = BaseJson();
  j["model"]["vocab"]["a"] = "zero";
  ExpectError(j, StatusCode::kInvalidArgument, "unexpected structure");
  j = BaseJson();
  j["model"]["merges"] = json::array({"a z"});
  ExpectError(j, StatusCode::kInvalidArgument, "'z'");
  j = BaseJson();
  j["pre_tokenizer"] = {{"type", "Split"},
                        {"pattern", {{"Regex", "(unclosed"}}},
                        {"behavior", "Isolated"},
                        {"invert", false}};
  ExpectError(j, StatusCode::kInvalidArgument, "bad regex");
}

// Sequences nested 200,000 deep: the component parsers recursed once per level and overflowed
// the stack. Sequences a few levels deep still load.
TEST(TokenizerErrors, DeeplyNestedSequencesAreAnError) {
  std::string base = BaseJson().dump();
  for (const std::string key : {"normalizer", "pre_tokenizer", "decoder"}) {
    const std::string list = key == "normalizer"      ? "normalizers"
                             : key == "pre_tokenizer" ? "pretokenizers"
                                                      : "decoders";
    auto nested = [&](int depth) {
      std::string open, close;
      for (int i = 0; i < depth; ++i) {
        open += R"({"type":"Sequence",")" + list + R"(":[)";
        close += "]}";
      }
      std::string text = base;
      const std::string field = "\"" + key + "\":null";
      text.replace(text.find(field), field.size(), "\"" + key + "\":" + open + close);
      return Tokenizer::FromJsonText(text, "");
    };
    auto deep = nested(200000);
    ASSERT_FALSE(deep.ok()) << key;
    EXPECT_NE(deep.status().message().find("nested more than"), std::string::npos)
        << deep.status().ToString();
    EXPECT_TRUE(nested(8).ok()) << key << ": " << nested(8).status().ToString();
  }
}

// A token id of INT32_MAX overflowed the vocabulary size (id + 1; UBSan: signed overflow), and
// ids near it asked for tens of GB. Ids past kMaxTokenId are an error naming the token.
TEST(TokenizerErrors, HugeTokenIdsAreAnError) {
  json j = BaseJson();
  j["model"]["vocab"]["zz"] = 2147483647;
  ExpectError(j, StatusCode::kInvalidArgument, "token 'zz' has id 2147483647");
  j = BaseJson();
  j["added_tokens"] = json::array({Added(2147483647, "<big>")});
  ExpectError(j, StatusCode::kInvalidArgument, "added token '<big>' has id 2147483647");
  j = BaseJson();
  j["added_tokens"] = json::array({Added(1000, "<ok>")});
  EXPECT_NE(Load(j), nullptr);  // sparse ids well below the limit still load
}

TEST(TokenizerErrors, UnsupportedComponents) {
  json j = BaseJson();
  j["model"] = {{"type", "Unigram"}, {"vocab", json::array()}};
  ExpectError(j, StatusCode::kUnimplemented, "model type 'Unigram'");
  j = BaseJson();
  j["normalizer"] = {{"type", "Precompiled"}, {"precompiled_charsmap", ""}};
  ExpectError(j, StatusCode::kUnimplemented, "normalizer type 'Precompiled'");
  j = BaseJson();
  j["pre_tokenizer"] = {{"type", "BertPreTokenizer"}};
  ExpectError(j, StatusCode::kUnimplemented, "pre_tokenizer type 'BertPreTokenizer'");
  j = BaseJson();
  j["decoder"] = {{"type", "WordPiece"}, {"prefix", "##"}};
  ExpectError(j, StatusCode::kUnimplemented, "decoder type 'WordPiece'");
  j = BaseJson();
  j["post_processor"] = {{"type", "Mystery"}};
  ExpectError(j, StatusCode::kUnimplemented, "post_processor type 'Mystery'");
}

TEST(TokenizerErrors, FromDirAddsContext) {
  auto dir =
      std::filesystem::temp_directory_path() / ("xinfer_tok_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "tokenizer.json") << "{ not json";
  auto t = Tokenizer::FromDir(dir.string());
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(t.status().message().find(dir.string()), std::string::npos) << t.status().message();
  // A valid tokenizer.json with a chat_template.jinja and no config.
  std::ofstream(dir / "tokenizer.json") << BaseJson().dump();
  std::ofstream(dir / "chat_template.jinja") << "{{ messages }}";
  auto ok = Tokenizer::FromDir(dir.string());
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ((*ok)->chat_template(), "{{ messages }}");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace xinfer
