// Unit tests of the pipeline pieces, independent of ../shared.
#include <gtest/gtest.h>

#include "base/utf8.h"
#include "tokenizer/bpe_model.h"
#include "tokenizer/decoder.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/pretokenizer.h"

namespace xinfer::tok {
namespace {

const std::string kFffd(kReplacementChar);

std::unique_ptr<BpeModel> MakeBpe(std::vector<std::string> tokens,
                                  std::vector<std::pair<std::string, std::string>> merges,
                                  BpeOptions opt = {}) {
  // Dense arrays, as GGUF metadata carries them.
  for (size_t i = 0; i < tokens.size(); ++i) {
    opt.vocab.emplace_back(tokens[i], static_cast<int32_t>(i));
  }
  opt.merges = std::move(merges);
  auto m = BpeModel::Create(std::move(opt));
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? std::move(*m) : nullptr;
}

std::vector<int32_t> Tok(const BpeModel& m, std::string_view word) {
  std::vector<int32_t> ids;
  m.Tokenize(word, &ids);
  return ids;
}

TEST(BpeModel, MergesByRankThenLeftmost) {
  //                     0    1    2    3     4     5
  auto m = MakeBpe({"a", "b", "c", "ab", "bc", "abc"}, {{"a", "b"}, {"ab", "c"}, {"b", "c"}});
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(Tok(*m, "abc"), (std::vector<int32_t>{5}));
  EXPECT_EQ(Tok(*m, "bc"), (std::vector<int32_t>{4}));
  EXPECT_EQ(Tok(*m, "abab"), (std::vector<int32_t>{3, 3}));
  EXPECT_EQ(Tok(*m, "cab"), (std::vector<int32_t>{2, 3}));
  // Cached second call gives the same answer.
  EXPECT_EQ(Tok(*m, "abc"), (std::vector<int32_t>{5}));

  auto r = MakeBpe({"a", "b", "c", "ab", "bc"}, {{"b", "c"}, {"a", "b"}});
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(Tok(*r, "abc"), (std::vector<int32_t>{0, 4}));  // b+c outranks a+b
  EXPECT_EQ(Tok(*r, "aaa"), (std::vector<int32_t>{0, 0, 0}));
  auto rep = MakeBpe({"a", "aa"}, {{"a", "a"}});
  EXPECT_EQ(Tok(*rep, "aaa"), (std::vector<int32_t>{1, 0}));  // leftmost pair first
}

TEST(BpeModel, ByteFallbackAndUnknowns) {
  BpeOptions opt;
  opt.byte_fallback = true;
  opt.unk_token = "<unk>";
  opt.fuse_unk = true;
  auto m = MakeBpe({"<unk>", "a", "<0xC3>", "<0xA9>", "<0xE2>"}, {}, opt);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(Tok(*m, "a\xC3\xA9"), (std::vector<int32_t>{1, 2, 3}));  // é as two byte tokens
  // "€" is E2 82 AC: not all bytes have tokens, so it is unknown; unknowns fuse.
  EXPECT_EQ(Tok(*m,
                "\xE2\x82\xAC\xE2\x82\xAC"
                "a"),
            (std::vector<int32_t>{0, 1}));

  opt = {};
  opt.unk_token = "<unk>";
  auto nofuse = MakeBpe({"<unk>", "a"}, {}, opt);
  EXPECT_EQ(Tok(*nofuse, "xya"), (std::vector<int32_t>{0, 0, 1}));
  auto nounk = MakeBpe({"a"}, {});
  EXPECT_EQ(Tok(*nounk, "xay"), (std::vector<int32_t>{0}));  // dropped, as in HF without unk
}

TEST(BpeModel, SubwordPrefixAndLookups) {
  BpeOptions opt;
  opt.continuing_subword_prefix = "##";
  auto m = MakeBpe({"a", "##b", "ab", "##c", "abc"}, {{"a", "##b"}, {"ab", "##c"}}, opt);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(Tok(*m, "abc"), (std::vector<int32_t>{4}));
  EXPECT_EQ(m->TokenToId("##b"), std::optional<int32_t>(1));
  EXPECT_EQ(m->IdToToken(2), "ab");
  EXPECT_EQ(m->IdToToken(99), "");
  EXPECT_EQ(m->vocab_size(), 5);
  EXPECT_EQ(m->num_merges(), 2u);
}

TEST(BpeModel, RejectsMergeOutsideVocabulary) {
  BpeOptions opt;
  opt.vocab = {{"a", 0}, {"b", 1}};
  opt.merges = {{"a", "b"}};
  auto m = BpeModel::Create(opt);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(m.status().message().find("'ab'"), std::string::npos) << m.status().message();
  opt.merges = {{"a", "z"}};
  m = BpeModel::Create(opt);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("'z'"), std::string::npos);
}

// Decodes tokens all at once and one by one; both must agree.
std::string RunDecoder(const Decoder& d, const std::vector<std::string>& tokens) {
  DecodeState st = d.NewState();
  std::string whole;
  for (const auto& t : tokens) d.Push(st, t, &whole);
  d.Finish(st, &whole);
  return whole;
}

std::vector<std::unique_ptr<DecodeStage>> LlamaStages(int strip_start, int strip_stop) {
  std::vector<std::unique_ptr<DecodeStage>> s;
  s.push_back(std::make_unique<ReplaceStage>("\xE2\x96\x81", " "));
  s.push_back(std::make_unique<ByteFallbackStage>());
  s.push_back(std::make_unique<FuseStage>());
  s.push_back(std::make_unique<StripStage>(" ", strip_start, strip_stop));
  return s;
}

TEST(Decoder, LlamaChain) {
  Decoder d(LlamaStages(1, 0));
  EXPECT_EQ(RunDecoder(d, {"\xE2\x96\x81Hi", "<0xE4>", "<0xB8>", "<0xAD>", "!"}), "Hi中!");
  // An invalid byte run gives one U+FFFD per byte (HF's ByteFallback rule).
  EXPECT_EQ(RunDecoder(d, {"<0xE4>", "<0xB8>", "a"}), kFffd + kFffd + "a");
  EXPECT_EQ(RunDecoder(d, {"\xE2\x96\x81\xE2\x96\x81x"}), " x");  // only one space stripped
  EXPECT_EQ(RunDecoder(d, {}), "");
}

TEST(Decoder, StripStopHoldsBackTrailingCharacters) {
  std::vector<std::unique_ptr<DecodeStage>> s;
  s.push_back(std::make_unique<FuseStage>());
  s.push_back(std::make_unique<StripStage>(" ", 0, 2));
  Decoder d(std::move(s));
  DecodeState st = d.NewState();
  std::string out;
  d.Push(st, "a ", &out);
  EXPECT_EQ(out, "a");  // the space may still be trailing
  d.Push(st, " ", &out);
  d.Push(st, " ", &out);
  EXPECT_EQ(out, "a ");
  d.Push(st, "b   ", &out);
  d.Finish(st, &out);
  EXPECT_EQ(out, "a   b ");
}

TEST(Decoder, ReplaceAcrossChunks) {
  std::vector<std::unique_ptr<DecodeStage>> s;
  s.push_back(std::make_unique<FuseStage>());
  s.push_back(std::make_unique<ReplaceStage>("ab", "X"));
  Decoder d(std::move(s));
  EXPECT_EQ(RunDecoder(d, {"ca", "bca", "a", "b", "a"}), "cXcaXa");
}

TEST(Decoder, MetaspaceAndJoin) {
  std::vector<std::unique_ptr<DecodeStage>> s;
  s.push_back(std::make_unique<MetaspaceStage>("\xE2\x96\x81", true));
  Decoder meta(std::move(s));
  EXPECT_EQ(RunDecoder(meta, {"\xE2\x96\x81Hello", "\xE2\x96\x81world\xE2\x96\x81"}),
            "Hello world ");
  Decoder join({});
  EXPECT_EQ(RunDecoder(join, {"a", "b", "c"}), "a b c");
}

TEST(Decoder, ByteLevelFallsBackToRawText) {
  std::vector<std::unique_ptr<DecodeStage>> s;
  s.push_back(std::make_unique<ByteLevelStage>());
  Decoder d(std::move(s));
  EXPECT_EQ(RunDecoder(d, {"Hello", "\xC4\xA0world", "\xE2\x96\x81"}), "Hello world\xE2\x96\x81");
  EXPECT_EQ(RunDecoder(d, {"\xC3\xA4"}), kFffd);  // lone byte E4
}

std::vector<std::string> Pre(const PreTokenizer& p, std::string text, bool start = true) {
  std::vector<std::string> pieces{std::move(text)};
  EXPECT_TRUE(p.PreTokenize(&pieces, start).ok());
  return pieces;
}

TEST(PreTokenizer, SplitBehaviors) {
  using V = std::vector<std::string>;
  auto split = [](SplitBehavior b, bool invert = false) {
    return SplitPreTokenizer("-", nullptr, b, invert);
  };
  EXPECT_EQ(Pre(split(SplitBehavior::kRemoved), "a-b--c"), (V{"a", "b", "c"}));
  EXPECT_EQ(Pre(split(SplitBehavior::kIsolated), "a-b--c"), (V{"a", "-", "b", "-", "-", "c"}));
  EXPECT_EQ(Pre(split(SplitBehavior::kMergedWithPrevious), "a-b--c"), (V{"a-", "b-", "-", "c"}));
  EXPECT_EQ(Pre(split(SplitBehavior::kMergedWithNext), "a-b--c"), (V{"a", "-b", "-", "-c"}));
  EXPECT_EQ(Pre(split(SplitBehavior::kContiguous), "a-b--c"), (V{"a", "-", "b", "--", "c"}));
  EXPECT_EQ(Pre(split(SplitBehavior::kRemoved, true), "a-b--c"), (V{"-", "-", "-"}));
}

TEST(PreTokenizer, RegexByteLevelMetaspaceDigits) {
  using V = std::vector<std::string>;
  auto bl = ByteLevelPreTokenizer::Create(false, true);
  ASSERT_TRUE(bl.ok());
  EXPECT_EQ(Pre(**bl, "Hello world!"), (V{"Hello", "\xC4\xA0world", "!"}));
  MetaspacePreTokenizer meta("\xE2\x96\x81", PrependScheme::kAlways, true);
  EXPECT_EQ(Pre(meta, "Hello world"), (V{"\xE2\x96\x81Hello", "\xE2\x96\x81world"}));
  MetaspacePreTokenizer first("\xE2\x96\x81", PrependScheme::kFirst, false);
  EXPECT_EQ(Pre(first, "x", false), (V{"x"}));
  EXPECT_EQ(Pre(DigitsPreTokenizer(true), "ab123"), (V{"ab", "1", "2", "3"}));
  EXPECT_EQ(Pre(DigitsPreTokenizer(false), "ab123c"), (V{"ab", "123", "c"}));
  EXPECT_EQ(Pre(WhitespaceSplitPreTokenizer(), " a \t b\n"), (V{"a", "b"}));
  auto re = Regex::Compile(R"(\p{N}|\s+(?!\S)|\s+)");
  ASSERT_TRUE(re.ok());
  SplitPreTokenizer s("", std::move(*re), SplitBehavior::kIsolated, false);
  EXPECT_EQ(Pre(s, "a   b7"), (V{"a", "  ", " ", "b", "7"}));
}

TEST(Normalizer, Basics) {
  auto norm = [](const Normalizer& n, std::string_view s) { return *n.Normalize(s); };
  EXPECT_EQ(norm(UnicodeNormalizer(UnicodeForm::kNfc), "e\xCC\x81"), "\xC3\xA9");
  EXPECT_EQ(norm(UnicodeNormalizer(UnicodeForm::kNfd), "\xC3\xA9"), "e\xCC\x81");
  EXPECT_EQ(norm(UnicodeNormalizer(UnicodeForm::kNfkc), "\xEF\xAC\x81"), "fi");
  EXPECT_EQ(norm(UnicodeNormalizer(UnicodeForm::kNfc), std::string_view("a\0b", 3)),
            std::string("a\0b", 3));
  EXPECT_EQ(norm(LowercaseNormalizer(), "HeLLo \xC3\x89"), "hello \xC3\xA9");
  EXPECT_EQ(norm(PrependNormalizer("_"), "x"), "_x");
  EXPECT_EQ(norm(PrependNormalizer("_"), ""), "");
  EXPECT_EQ(norm(ReplaceNormalizer(" ", nullptr, "_"), "a b  c"), "a_b__c");
  EXPECT_EQ(norm(StripNormalizer(true, true), " \t x y \xE3\x80\x80"), "x y");
  EXPECT_EQ(norm(StripAccentsNormalizer(), "e\xCC\x81"), "e");
  auto re = Regex::Compile(" {2,}");
  ASSERT_TRUE(re.ok());
  EXPECT_EQ(norm(ReplaceNormalizer("", std::move(*re), " "), "a    b  c d"), "a b c d");
}

}  // namespace
}  // namespace xinfer::tok
