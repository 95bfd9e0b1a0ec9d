#include "sampling/stop_checker.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "base/utf8.h"

namespace xinfer {
namespace {

constexpr int32_t kEos = 2;
constexpr int32_t kWord = 100;  // an ordinary token id

SamplingParams WithStops(std::vector<std::string> stops) {
  SamplingParams p;
  p.max_tokens = 1000;
  p.stop = std::move(stops);
  return p;
}

struct FeedResult {
  std::vector<std::string> chunks;  // Update.text per Append
  std::string text;                 // everything emitted
  StopChecker::Update last;
};

// Appends each delta as an ordinary token until the checker finishes.
FeedResult Feed(StopChecker& c, const std::vector<std::string>& deltas) {
  FeedResult run;
  for (const auto& d : deltas) {
    run.last = c.Append(kWord, d);
    run.chunks.push_back(run.last.text);
    run.text += run.last.text;
    if (c.finished()) break;
  }
  return run;
}

TEST(StopCheckerTest, StopStringSplitAcrossThreeTokens) {
  StopChecker c(WithStops({"STOP"}), {kEos});
  const FeedResult r = Feed(c, {"Hello S", "TO", "P more", "never seen"});
  EXPECT_EQ(r.chunks, (std::vector<std::string>{"Hello ", "", ""}));
  EXPECT_EQ(r.text, "Hello ");
  EXPECT_EQ(r.last.finish, FinishReason::kStop);
  EXPECT_EQ(r.last.stop_reason, "STOP");
  EXPECT_FALSE(r.last.matched_stop_token.has_value());
  EXPECT_EQ(c.num_output_tokens(), 3);
}

TEST(StopCheckerTest, StopStringAtTheVeryStart) {
  StopChecker c(WithStops({"abc"}), {kEos});
  const FeedResult r = Feed(c, {"abcdef"});
  EXPECT_EQ(r.text, "");
  EXPECT_EQ(r.last.finish, FinishReason::kStop);
}

TEST(StopCheckerTest, OverlappingPrefixes) {
  StopChecker c(WithStops({"abc"}), {kEos});
  const FeedResult r = Feed(c, {"ab", "ab", "c"});
  // "ab" may start the stop string; after "abab" only the second "ab" still may.
  EXPECT_EQ(r.chunks, (std::vector<std::string>{"", "ab", ""}));
  EXPECT_EQ(r.last.finish, FinishReason::kStop);
}

TEST(StopCheckerTest, RepeatedCharactersInStopString) {
  StopChecker c(WithStops({"aab"}), {kEos});
  const FeedResult r = Feed(c, {"a", "a", "a", "b"});
  EXPECT_EQ(r.text, "a");
  EXPECT_EQ(r.last.finish, FinishReason::kStop);
}

TEST(StopCheckerTest, FirstCompletedStopStringWins) {
  {
    StopChecker c(WithStops({"world", "lo"}), {kEos});
    const FeedResult r = Feed(c, {"hello world"});
    EXPECT_EQ(r.text, "hel");
    EXPECT_EQ(r.last.stop_reason, "lo");
  }
  {
    // "bc" completes before "abcd" does, in one token just as char by char.
    StopChecker c(WithStops({"abcd", "bc"}), {kEos});
    const FeedResult r = Feed(c, {"xabcd"});
    EXPECT_EQ(r.text, "xa");
    EXPECT_EQ(r.last.stop_reason, "bc");
  }
  {
    // Both complete at the same byte: the longer one (earlier start) wins.
    StopChecker c(WithStops({"c", "abc"}), {kEos});
    const FeedResult r = Feed(c, {"xab", "c"});
    EXPECT_EQ(r.text, "x");
    EXPECT_EQ(r.last.stop_reason, "abc");
  }
}

TEST(StopCheckerTest, HeldBackTextIsReleasedWhenThePrefixFails) {
  StopChecker c(WithStops({"STOP"}), {kEos});
  const FeedResult r = Feed(c, {"go ST", "ay", "!"});
  EXPECT_EQ(r.chunks, (std::vector<std::string>{"go ", "STay", "!"}));
  EXPECT_FALSE(c.finished());
}

TEST(StopCheckerTest, IncludeStopStringInOutput) {
  SamplingParams p = WithStops({"STOP"});
  p.include_stop_str_in_output = true;
  StopChecker c(p, {kEos});
  const FeedResult r = Feed(c, {"Hello ST", "OP and more"});
  // Nothing is held back: the stop string is emitted anyway. Text after it is cut.
  EXPECT_EQ(r.chunks, (std::vector<std::string>{"Hello ST", "OP"}));
  EXPECT_EQ(r.last.finish, FinishReason::kStop);
  EXPECT_EQ(r.last.stop_reason, "STOP");
}

TEST(StopCheckerTest, StopTokenIdEndsWithoutItsText) {
  SamplingParams p = WithStops({"STOP"});
  p.stop_token_ids = {42};
  StopChecker c(p, {kEos});
  EXPECT_EQ(c.Append(kWord, "x ST").text, "x ");
  const auto u = c.Append(42, "<|im_end|>");
  EXPECT_EQ(u.finish, FinishReason::kStop);
  EXPECT_EQ(u.text, "ST");  // held-back text flushed, the stop token's text dropped
  EXPECT_EQ(u.stop_reason, "42");
  EXPECT_EQ(u.matched_stop_token, 42);
  EXPECT_EQ(c.num_output_tokens(), 2);
}

TEST(StopCheckerTest, EosEndsUnlessIgnored) {
  {
    StopChecker c(WithStops({}), {kEos, 7});
    EXPECT_EQ(c.Append(kWord, "hi").text, "hi");
    const auto u = c.Append(7, "</s>");
    EXPECT_EQ(u.finish, FinishReason::kStop);
    EXPECT_EQ(u.text, "");
    EXPECT_EQ(u.stop_reason, "");
    EXPECT_FALSE(u.matched_stop_token.has_value());
  }
  {
    SamplingParams p = WithStops({});
    p.ignore_eos = true;
    StopChecker c(p, {kEos});
    const auto u = c.Append(kEos, "</s>");
    EXPECT_EQ(u.finish, FinishReason::kNone);
    EXPECT_EQ(u.text, "</s>");
  }
}

TEST(StopCheckerTest, MaxTokensFlushesHeldBackText) {
  SamplingParams p = WithStops({"STOP"});
  p.max_tokens = 2;
  StopChecker c(p, {kEos});
  EXPECT_EQ(c.Append(kWord, "a").text, "a");
  const auto u = c.Append(kWord, " ST");
  EXPECT_EQ(u.finish, FinishReason::kLength);
  EXPECT_EQ(u.text, " ST");
  EXPECT_EQ(u.stop_reason, "");
}

TEST(StopCheckerTest, StopStringBeatsMaxTokensOnTheSameToken) {
  SamplingParams p = WithStops({"END"});
  p.max_tokens = 1;
  StopChecker c(p, {kEos});
  const auto u = c.Append(kWord, "ok END");
  EXPECT_EQ(u.finish, FinishReason::kStop);
  EXPECT_EQ(u.text, "ok ");
}

TEST(StopCheckerTest, MinTokensSuppressesEveryStopCondition) {
  SamplingParams p = WithStops({"x"});
  p.min_tokens = 3;
  p.stop_token_ids = {42};
  StopChecker c(p, {kEos});
  // ASSERT: appending after an (erroneous) finish would abort the whole test binary.
  ASSERT_EQ(c.Append(kEos, "").finish, FinishReason::kNone);
  ASSERT_EQ(c.Append(42, "").finish, FinishReason::kNone);
  const auto third = c.Append(kWord, "axb");
  ASSERT_EQ(third.finish, FinishReason::kNone);
  EXPECT_EQ(third.text, "axb");  // the stop string completed too early to count
  EXPECT_EQ(c.Append(kEos, "").finish, FinishReason::kStop);  // 4th token: allowed
}

TEST(StopCheckerTest, MinTokensThenStopStringSpanningTheBoundary) {
  SamplingParams p = WithStops({"ab"});
  p.min_tokens = 1;
  StopChecker c(p, {kEos});
  EXPECT_EQ(c.Append(kWord, "a").text, "");  // suppressed, but still a possible prefix
  const auto u = c.Append(kWord, "b");
  EXPECT_EQ(u.finish, FinishReason::kStop);
  EXPECT_EQ(u.text, "");
}

TEST(StopCheckerTest, MultiByteCharactersAreNeverSplit) {
  StopChecker c(WithStops({}), {kEos});
  // "€" is E2 82 AC, delivered one byte per token (byte-fallback tokens).
  const FeedResult r = Feed(c, {"a\xE2", "\x82", "\xAC b"});
  EXPECT_EQ(r.chunks, (std::vector<std::string>{"a", "", "\xE2\x82\xAC b"}));
}

TEST(StopCheckerTest, MultiByteStopStringPrefixIsHeldWhole) {
  StopChecker c(WithStops({"\xE2\x82\xAC!"}), {kEos});  // "€!"
  const FeedResult r = Feed(c, {"5\xE2\x82", "\xAC", "?"});
  EXPECT_EQ(r.chunks, (std::vector<std::string>{"5", "", "\xE2\x82\xAC?"}));
  StopChecker d(WithStops({"\xE2\x82\xAC!"}), {kEos});
  const FeedResult s = Feed(d, {"5\xE2\x82", "\xAC", "!"});
  EXPECT_EQ(s.text, "5");
  EXPECT_EQ(s.last.finish, FinishReason::kStop);
}

TEST(StopCheckerTest, IncompleteCharacterAtLengthBecomesReplacementChar) {
  SamplingParams p = WithStops({});
  p.max_tokens = 2;
  StopChecker c(p, {kEos});
  EXPECT_EQ(c.Append(kWord, "a\xE2").text, "a");
  const auto u = c.Append(kWord, "\x82");
  EXPECT_EQ(u.finish, FinishReason::kLength);
  EXPECT_EQ(u.text, "\xEF\xBF\xBD");
}

// The emitted text depends only on the full text, not on how it was split into tokens, and every
// chunk is valid UTF-8.
TEST(StopCheckerTest, ResultIndependentOfTokenization) {
  const std::string text = "Il \xC3\xA9tait une fois \xE2\x82\xAC\xE2\x82\xAC, ababcab la fin.";
  const std::vector<std::vector<std::string>> stop_sets = {
      {"abc"}, {"\xE2\x82\xAC,"}, {"fin", "une f"}, {"zzz"}, {"ab", "babc"}, {"s \xE2\x82\xAC"}};
  std::mt19937 gen(11);
  for (const auto& stops : stop_sets) {
    // Reference: cut before the earliest-ending match (ties: earliest start).
    size_t best_end = std::string::npos, best_begin = std::string::npos;
    for (const auto& s : stops) {
      const size_t pos = text.find(s);
      if (pos == std::string::npos) continue;
      const size_t end = pos + s.size();
      if (end < best_end || (end == best_end && pos < best_begin)) {
        best_end = end;
        best_begin = pos;
      }
    }
    const std::string want = best_begin == std::string::npos ? text : text.substr(0, best_begin);
    for (int trial = 0; trial < 50; ++trial) {
      std::vector<std::string> deltas;
      for (size_t i = 0; i < text.size();) {
        const size_t len = std::uniform_int_distribution<size_t>(0, 4)(gen);
        deltas.push_back(text.substr(i, len));
        i += len;
      }
      SamplingParams p = WithStops(stops);
      p.max_tokens = static_cast<int32_t>(deltas.size());
      StopChecker c(p, {kEos});
      const FeedResult r = Feed(c, deltas);
      ASSERT_EQ(r.text, want) << "stops[0]=" << stops[0] << " trial " << trial;
      EXPECT_EQ(r.last.finish,
                best_begin == std::string::npos ? FinishReason::kLength : FinishReason::kStop);
      for (const auto& chunk : r.chunks) EXPECT_TRUE(IsValidUtf8(chunk)) << chunk;
    }
  }
}

TEST(StopCheckerTest, FinishReasonNames) {
  EXPECT_STREQ(ToString(FinishReason::kStop), "stop");
  EXPECT_STREQ(ToString(FinishReason::kLength), "length");
  EXPECT_STREQ(ToString(FinishReason::kNone), "none");
}

TEST(StopCheckerDeathTest, AppendAfterFinishIsABug) {
  SamplingParams p = WithStops({});
  p.max_tokens = 1;
  StopChecker c(p, {kEos});
  (void)c.Append(kWord, "a");
  EXPECT_DEATH((void)c.Append(kWord, "b"), "after the sequence finished");
}

}  // namespace
}  // namespace xinfer
