// Seeded random round trips: Decode(Encode(s)) reproduces s (NFC-normalized for Qwen), and the
// IncrementalDecoder's pieces are valid UTF-8 and concatenate to Decode's output.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "base/utf8.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/test_util.h"
#include "tokenizer/tokenizer.h"

namespace xinfer {
namespace {

using ::xinfer::testing::SharedTokenizer;

class RandomText {
 public:
  explicit RandomText(uint32_t seed) : rng_(seed) {}
  uint32_t Below(uint32_t n) { return static_cast<uint32_t>(rng_() % n); }

  void AppendCp(char32_t cp, std::string* s) { AppendUtf8(cp, s); }
  char32_t Range(char32_t lo, char32_t hi) {
    return lo + Below(static_cast<uint32_t>(hi - lo + 1));
  }

  // A mix of everything a chat prompt may contain, special-token look-alikes included.
  std::string Qwen() {
    static const char* const kChunks[] = {"<|im_start|>", "<|im_end|>",  "<|endoftext|>",
                                          "<think>",      "</think>",    "<tool_call>",
                                          "<|im_start>",  "<|",          "|>",
                                          "'s",           "'LL",         "\r\n",
                                          "   ",          "\t\t",        "...",
                                          "!!",           "1234",        "Hello",
                                          " world",       "ﬁ",           "Å",
                                          "한국어",       "\xE2\x80\x8D"};
    std::string s;
    const uint32_t n = Below(24);
    for (uint32_t i = 0; i < n; ++i) {
      switch (Below(12)) {
        case 0:
          AppendCp(Range(0x20, 0x7E), &s);
          break;
        case 1:
          s += " \n\t\r"[Below(4)];
          break;
        case 2:
          AppendCp(Range(0x4E00, 0x9FFF), &s);
          break;
        case 3:
          AppendCp(Range(0x1F600, 0x1F64F), &s);
          break;
        case 4:
          AppendCp(Range(0x0300, 0x036F), &s);
          break;  // combining marks
        case 5:
          AppendCp(Range('0', '9'), &s);
          break;
        case 6:
          s += "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"[Below(32)];
          break;
        case 7:
          s += kChunks[Below(sizeof(kChunks) / sizeof(kChunks[0]))];
          break;
        case 8:
          AppendCp(Range(0xC0, 0x24F), &s);
          break;  // Latin with diacritics
        case 9:
          AppendCp(Range(0x1100, 0x1175), &s);
          break;  // Hangul jamo: NFC composes them
        case 10:
          AppendCp(Range(0x0600, 0x06FF), &s);
          break;
        default:
          s += std::string(Below(5) + 1, ' ');
          break;
      }
    }
    return s;
  }

  // Characters the TinyStories vocabulary covers (no '<' so no accidental special tokens).
  std::string TinyStories() {
    static const std::string kChars =
        "!\"$',-.0123456789:;>?ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz|";
    std::string s;
    const uint32_t n = Below(40);
    for (uint32_t i = 0; i < n; ++i) {
      switch (Below(6)) {
        case 0:
          s += ' ';
          break;
        case 1:
          s += '\n';
          break;
        case 2:
          s += "the ";
          break;
        default:
          s += kChars[Below(static_cast<uint32_t>(kChars.size()))];
          break;
      }
    }
    return s;
  }

 private:
  std::mt19937 rng_;
};

// Feeds `ids` through an IncrementalDecoder and checks it against Decode.
void CheckIncremental(const Tokenizer& tok, const std::vector<int32_t>& ids, bool skip) {
  IncrementalDecoder dec(tok, skip);
  std::string joined;
  for (int32_t id : ids) {
    std::string piece = dec.Append(id);
    ASSERT_TRUE(IsValidUtf8(piece)) << "id " << id;
    joined += piece;
  }
  std::string rest = dec.Flush();
  ASSERT_TRUE(IsValidUtf8(rest));
  joined += rest;
  ASSERT_EQ(joined, tok.Decode(ids, skip));
}

// What Decode(Encode(s)) must give for Qwen: added tokens are cut out of the raw text first and
// only the text between them is NFC-normalized (so "<|endoftext|>" followed by U+0338 does not
// compose '>' + U+0338 into U+226F, exactly as in Hugging Face).
std::string QwenExpected(const Tokenizer& tok, const std::string& s) {
  std::vector<std::string> added;
  for (int32_t id = 151643; id < tok.vocab_size(); ++id) added.push_back(tok.IdToToken(id));
  std::sort(added.begin(), added.end(),
            [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  tok::UnicodeNormalizer nfc(tok::UnicodeForm::kNfc);
  std::string out, plain;
  auto flush = [&] {
    out += *nfc.Normalize(plain);
    plain.clear();
  };
  for (size_t pos = 0; pos < s.size();) {
    const std::string* hit = nullptr;
    for (const std::string& a : added) {
      if (s.compare(pos, a.size(), a) == 0) {
        hit = &a;
        break;
      }
    }
    if (hit != nullptr) {
      flush();
      out += *hit;
      pos += hit->size();
    } else {
      plain += s[pos++];
    }
  }
  flush();
  return out;
}

TEST(TokenizerFuzz, QwenRoundTrip) {
  XI_REQUIRE_SHARED();
  const Tokenizer& tok = SharedTokenizer("tiny-qwen3");
  RandomText gen(12345);
  for (int i = 0; i < 3000; ++i) {
    const std::string s = gen.Qwen();
    auto ids = tok.Encode(s, false);
    ASSERT_TRUE(ids.ok()) << ids.status().ToString();
    ASSERT_EQ(tok.Decode(*ids), QwenExpected(tok, s)) << "input #" << i << ": " << s;
    CheckIncremental(tok, *ids, false);
    CheckIncremental(tok, *ids, true);
  }
}

TEST(TokenizerFuzz, TinyStoriesRoundTrip) {
  XI_REQUIRE_SHARED();
  const Tokenizer& tok = SharedTokenizer("tinystories-656k");
  RandomText gen(777);
  for (int i = 0; i < 3000; ++i) {
    const std::string s = gen.TinyStories();
    auto ids = tok.Encode(s, true);
    ASSERT_TRUE(ids.ok()) << ids.status().ToString();
    ASSERT_EQ(ids->front(), 1);
    for (int32_t id : *ids) ASSERT_NE(id, 0) << "unexpected <unk> for: " << s;
    ASSERT_EQ(tok.Decode(*ids, true), s) << "input #" << i;
    CheckIncremental(tok, *ids, true);
    CheckIncremental(tok, *ids, false);
  }
}

// Arbitrary id streams, including partial UTF-8 byte tokens, specials and invalid ids.
TEST(TokenizerFuzz, IncrementalMatchesDecodeOnRandomIds) {
  XI_REQUIRE_SHARED();
  for (const char* model : {"tiny-qwen3", "tinystories-656k"}) {
    const Tokenizer& tok = SharedTokenizer(model);
    RandomText gen(99);
    const uint32_t span = static_cast<uint32_t>(tok.vocab_size()) + 20;
    for (int i = 0; i < 2000; ++i) {
      std::vector<int32_t> ids(gen.Below(20));
      for (int32_t& id : ids) {
        // Bias towards low ids: in byte-level vocabularies those are single bytes.
        id = gen.Below(3) == 0 ? static_cast<int32_t>(gen.Below(300))
                               : static_cast<int32_t>(gen.Below(span)) - 10;
      }
      const std::string full = tok.Decode(ids);
      ASSERT_TRUE(IsValidUtf8(full));
      CheckIncremental(tok, ids, false);
      CheckIncremental(tok, ids, true);
    }
  }
}

}  // namespace
}  // namespace xinfer
