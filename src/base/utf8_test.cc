#include "base/utf8.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace xinfer {
namespace {

const std::string kFffd(kReplacementChar);

struct Decoded {
  char32_t cp;
  size_t size;
  bool valid;
};

// Decodes all of `s` with DecodeUtf8Char, stepping by each result's size.
std::vector<Decoded> DecodeAll(std::string_view s) {
  std::vector<Decoded> out;
  for (size_t pos = 0; pos < s.size();) {
    const Utf8Char c = DecodeUtf8Char(s, pos);
    out.push_back({c.cp, c.size, c.valid});
    pos += c.size;
  }
  return out;
}

bool operator==(const Decoded& a, const Decoded& b) {
  return a.cp == b.cp && a.size == b.size && a.valid == b.valid;
}
void PrintTo(const Decoded& d, std::ostream* os) {
  *os << "{U+" << std::hex << static_cast<uint32_t>(d.cp) << std::dec << ", " << d.size << ", "
      << (d.valid ? "valid" : "invalid") << "}";
}

constexpr char32_t kBad = kReplacementCodepoint;

TEST(Utf8Test, DecodesEveryLength) {
  EXPECT_EQ(DecodeAll("a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80"),
            (std::vector<Decoded>{
                {'a', 1, true}, {0xE9, 2, true}, {0x20AC, 3, true}, {0x1F600, 4, true}}));
  // The boundaries of each length, and of the special second-byte ranges.
  EXPECT_EQ(DecodeAll(std::string("\x00\x7F", 2)),
            (std::vector<Decoded>{{0, 1, true}, {0x7F, 1, true}}));
  EXPECT_EQ(DecodeAll("\xC2\x80\xDF\xBF"),
            (std::vector<Decoded>{{0x80, 2, true}, {0x7FF, 2, true}}));
  EXPECT_EQ(DecodeAll("\xE0\xA0\x80\xED\x9F\xBF\xEE\x80\x80\xEF\xBF\xBF"),
            (std::vector<Decoded>{
                {0x800, 3, true}, {0xD7FF, 3, true}, {0xE000, 3, true}, {0xFFFF, 3, true}}));
  EXPECT_EQ(DecodeAll("\xF0\x90\x80\x80\xF4\x8F\xBF\xBF"),
            (std::vector<Decoded>{{0x10000, 4, true}, {0x10FFFF, 4, true}}));
}

TEST(Utf8Test, IllFormedSequencesAreMaximalSubparts) {
  // Bytes that never start a character: one U+FFFD each.
  for (const char* s : {"\x80", "\xBF", "\xC0", "\xC1", "\xF5", "\xF8", "\xFF"}) {
    EXPECT_EQ(DecodeAll(s), (std::vector<Decoded>{{kBad, 1, false}})) << s;
  }
  // Overlong forms: C0/C1 are never leads; E0 and F0 reject the low second bytes.
  EXPECT_EQ(DecodeAll("\xC0\xAF"), (std::vector<Decoded>{{kBad, 1, false}, {kBad, 1, false}}));
  EXPECT_EQ(DecodeAll("\xE0\x80\xAF"),
            (std::vector<Decoded>{{kBad, 1, false}, {kBad, 1, false}, {kBad, 1, false}}));
  EXPECT_EQ(DecodeAll("\xF0\x8F\xBF\xBF").size(), 4u);
  // Surrogates (ED A0..BF) and values above U+10FFFF (F4 90.., F5..).
  EXPECT_EQ(DecodeAll("\xED\xA0\x80"),
            (std::vector<Decoded>{{kBad, 1, false}, {kBad, 1, false}, {kBad, 1, false}}));
  EXPECT_EQ(DecodeAll("\xF4\x90\x80\x80").size(), 4u);
  // A good prefix cut short by a byte that cannot continue it: one U+FFFD for the prefix, and
  // the byte starts afresh.
  EXPECT_EQ(DecodeAll("\xE4\xB8"
                      "A"),
            (std::vector<Decoded>{{kBad, 2, false}, {'A', 1, true}}));
  EXPECT_EQ(DecodeAll("\xF0\x9F\x98\xC3\xA9"),
            (std::vector<Decoded>{{kBad, 3, false}, {0xE9, 2, true}}));
  // Truncated at the end of the string.
  EXPECT_EQ(DecodeAll("\xE4"), (std::vector<Decoded>{{kBad, 1, false}}));
  EXPECT_EQ(DecodeAll("\xF0\x9F\x98"), (std::vector<Decoded>{{kBad, 3, false}}));
}

TEST(Utf8Test, NextCodepointStepsOneByteOverGarbage) {
  const std::string s =
      "\xE4\xB8"
      "A\xE4\xB8\xAD";
  std::vector<char32_t> cps;
  std::vector<size_t> starts;
  for (size_t pos = 0; pos < s.size();) {
    starts.push_back(pos);
    cps.push_back(NextCodepoint(s, &pos));
  }
  EXPECT_EQ(cps, (std::vector<char32_t>{kBad, kBad, 'A', 0x4E2D}));
  EXPECT_EQ(starts, (std::vector<size_t>{0, 1, 2, 3}));
}

TEST(Utf8Test, AppendRoundTripsAndReplacesUnencodable) {
  for (char32_t cp : {char32_t{0}, char32_t{0x7F}, char32_t{0x80}, char32_t{0x7FF}, char32_t{0x800},
                      char32_t{0xD7FF}, char32_t{0xE000}, char32_t{0xFFFF}, char32_t{0x10000},
                      char32_t{0x10FFFF}}) {
    std::string s;
    AppendUtf8(cp, &s);
    ASSERT_TRUE(IsValidUtf8(s)) << static_cast<uint32_t>(cp);
    const Utf8Char c = DecodeUtf8Char(s, 0);
    EXPECT_TRUE(c.valid);
    EXPECT_EQ(c.cp, cp);
    EXPECT_EQ(c.size, s.size());
  }
  for (char32_t cp : {char32_t{0xD800}, char32_t{0xDFFF}, char32_t{0x110000}}) {
    std::string s;
    AppendUtf8(cp, &s);
    EXPECT_EQ(s, kFffd) << static_cast<uint32_t>(cp);
  }
}

TEST(Utf8Test, Validity) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("plain"));
  EXPECT_TRUE(IsValidUtf8("\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80"));
  EXPECT_TRUE(IsValidUtf8("中\xF0\x9F\x98\x80"));
  EXPECT_TRUE(IsValidUtf8(std::string("a\0b", 3)));
  EXPECT_FALSE(IsValidUtf8("\xC3"));              // truncated
  EXPECT_FALSE(IsValidUtf8("\xE4\xB8"));          // truncated
  EXPECT_FALSE(IsValidUtf8("\x82"));              // lone continuation
  EXPECT_FALSE(IsValidUtf8("\xC0\xAF"));          // overlong
  EXPECT_FALSE(IsValidUtf8("\xE0\x80\xAF"));      // overlong
  EXPECT_FALSE(IsValidUtf8("\xF0\x80\x80\xAF"));  // overlong
  EXPECT_FALSE(IsValidUtf8("\xED\xA0\x80"));      // surrogate
  EXPECT_FALSE(IsValidUtf8("\xF4\x90\x80\x80"));  // > U+10FFFF
  EXPECT_FALSE(IsValidUtf8("\xF5\x80\x80\x80"));  // > U+10FFFF
  EXPECT_FALSE(IsValidUtf8("ok\xFF"));
}

TEST(Utf8Test, IncompleteSuffixLength) {
  EXPECT_EQ(IncompleteUtf8SuffixLength(""), 0u);
  EXPECT_EQ(IncompleteUtf8SuffixLength("ab"), 0u);
  EXPECT_EQ(IncompleteUtf8SuffixLength("a\xE2"), 1u);
  EXPECT_EQ(IncompleteUtf8SuffixLength("a\xE2\x82"), 2u);
  EXPECT_EQ(IncompleteUtf8SuffixLength("a\xE2\x82\xAC"), 0u);
  EXPECT_EQ(IncompleteUtf8SuffixLength("\xF0\x9F\x98"), 3u);
  EXPECT_EQ(IncompleteUtf8SuffixLength("\xF0\x9F\x98\x80"), 0u);
  EXPECT_EQ(IncompleteUtf8SuffixLength("a\xC3"), 1u);
  EXPECT_EQ(IncompleteUtf8SuffixLength("a\x82"), 0u);  // garbage is not held forever
  EXPECT_EQ(IncompleteUtf8SuffixLength("a\xFF"), 0u);
  EXPECT_EQ(IncompleteUtf8SuffixLength("\x80\x80\x80\x80"), 0u);
}

TEST(Utf8Test, IsAllAscii) {
  EXPECT_TRUE(IsAllAscii(""));
  EXPECT_TRUE(IsAllAscii("Hello, world!\n"));
  EXPECT_FALSE(IsAllAscii("caf\xC3\xA9"));
}

std::string Sanitize(std::string_view bytes, size_t chunk) {
  Utf8Sanitizer s;
  std::string out;
  for (size_t i = 0; i < bytes.size(); i += chunk) s.Feed(bytes.substr(i, chunk), &out);
  s.Finish(&out);
  return out;
}

// One-shot lossy conversion from DecodeUtf8Char, to check the streaming sanitizer against.
std::string Lossy(std::string_view s) {
  std::string out;
  for (size_t pos = 0; pos < s.size();) {
    const Utf8Char c = DecodeUtf8Char(s, pos);
    out.append(c.valid ? s.substr(pos, c.size) : kReplacementChar);
    pos += c.size;
  }
  return out;
}

TEST(Utf8Test, SanitizerUsesMaximalSubparts) {
  const std::pair<std::string, std::string> cases[] = {
      {"abc", "abc"},
      {"\xE4\xB8\xAD", "中"},
      {"\xE4\xB8"
       "A",
       kFffd + "A"},
      {"\xF0\x80", kFffd + kFffd},              // F0 needs 90..BF next
      {"\xED\xA0\x80", kFffd + kFffd + kFffd},  // surrogates are ill-formed
      {"\xC0\xAF", kFffd + kFffd},              // overlong lead
      {"\xF0\x9F\x98\x80\xFF", "\xF0\x9F\x98\x80" + kFffd},
      {"\xE4", kFffd},  // incomplete at the end
      {"\xF0\x9F\x98\xC3\xA9", kFffd + "\xC3\xA9"},
  };
  for (const auto& [in, want] : cases) {
    for (size_t chunk : {1u, 2u, 100u}) EXPECT_EQ(Sanitize(in, chunk), want) << chunk;
    EXPECT_EQ(Lossy(in), want);
  }
}

// Every 1- and 2-byte string, and 3-byte strings over the bytes that matter at the boundaries:
// the decoder, the validator and the streaming sanitizer agree with each other.
TEST(Utf8Test, DecoderValidatorAndSanitizerAgree) {
  const std::vector<uint8_t> interesting = {0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0,
                                            0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xE1, 0xEC,
                                            0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF4, 0xF5, 0xFF};
  std::vector<std::string> inputs;
  for (int a = 0; a < 256; ++a) {
    inputs.push_back(std::string(1, static_cast<char>(a)));
    for (int b = 0; b < 256; ++b) inputs.push_back({static_cast<char>(a), static_cast<char>(b)});
  }
  for (uint8_t a : interesting)
    for (uint8_t b : interesting)
      for (uint8_t c : interesting)
        for (uint8_t d : {uint8_t{0x80}, uint8_t{0xBF}, uint8_t{0x41}})
          inputs.push_back({static_cast<char>(a), static_cast<char>(b), static_cast<char>(c),
                            static_cast<char>(d)});
  for (const std::string& s : inputs) {
    const std::string lossy = Lossy(s);
    ASSERT_TRUE(IsValidUtf8(lossy));
    ASSERT_EQ(IsValidUtf8(s), lossy == s);
    ASSERT_EQ(Sanitize(s, 1), lossy);
  }
}

TEST(Utf8Test, UnicodeWhitespaceIsTheWhiteSpaceProperty) {
  for (char32_t cp : {0x09, 0x0A, 0x0D, 0x20, 0x85, 0xA0, 0x1680, 0x2000, 0x200A, 0x2028, 0x2029,
                      0x202F, 0x205F, 0x3000})
    EXPECT_TRUE(IsUnicodeWhitespace(cp)) << static_cast<uint32_t>(cp);
  for (char32_t cp : {0x00, 0x08, 0x1C, 0x1F, 0x21, 0x200B, 0xFEFF, 0x10FFFF})
    EXPECT_FALSE(IsUnicodeWhitespace(cp)) << static_cast<uint32_t>(cp);
}

}  // namespace
}  // namespace xinfer
