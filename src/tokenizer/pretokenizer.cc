#include "tokenizer/pretokenizer.h"

#include <algorithm>

#include "base/utf8.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/char_class.h"
#include "tokenizer/normalizer.h"

namespace xinfer::tok {
namespace {

// The GPT-2 pattern used by ByteLevel(use_regex=true).
constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// Turns sorted, non-overlapping match ranges into segments covering the whole text.
std::vector<Segment> ToSegments(size_t size, const std::vector<std::pair<size_t, size_t>>& m,
                                bool invert) {
  std::vector<Segment> segs;
  segs.reserve(m.size() * 2 + 1);
  size_t prev = 0;
  for (auto [b, e] : m) {
    if (prev < b) segs.push_back({prev, b, invert});
    segs.push_back({b, e, !invert});
    prev = e;
  }
  if (prev < size) segs.push_back({prev, size, invert});
  return segs;
}

// Segments from a per-character predicate: runs of characters for which `pred` holds are
// matches; with `individual` each such character is its own match.
template <typename Pred>
std::vector<Segment> CharSegments(std::string_view text, bool individual, Pred pred) {
  std::vector<std::pair<size_t, size_t>> m;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t start = pos;
    bool hit = pred(NextCodepoint(text, &pos));
    if (!hit) continue;
    if (!individual && !m.empty() && m.back().second == start) {
      m.back().second = pos;
    } else {
      m.emplace_back(start, pos);
    }
  }
  return ToSegments(text.size(), m, false);
}

}  // namespace

void SplitWithBehavior(std::string_view text, const std::vector<Segment>& segments,
                       SplitBehavior behavior, std::vector<std::string>* out) {
  std::vector<std::pair<size_t, size_t>> ranges;
  ranges.reserve(segments.size());
  switch (behavior) {
    case SplitBehavior::kRemoved:
      for (const Segment& s : segments) {
        if (!s.matched) ranges.emplace_back(s.begin, s.end);
      }
      break;
    case SplitBehavior::kIsolated:
      for (const Segment& s : segments) ranges.emplace_back(s.begin, s.end);
      break;
    case SplitBehavior::kMergedWithPrevious: {
      bool prev_matched = false;
      for (const Segment& s : segments) {
        if (s.matched && !prev_matched && !ranges.empty()) {
          ranges.back().second = s.end;
        } else {
          ranges.emplace_back(s.begin, s.end);
        }
        prev_matched = s.matched;
      }
      break;
    }
    case SplitBehavior::kMergedWithNext: {
      bool prev_matched = false;  // walking backwards: "previous" is the segment to the right
      for (auto it = segments.rbegin(); it != segments.rend(); ++it) {
        if (it->matched && !prev_matched && !ranges.empty()) {
          ranges.back().first = it->begin;
        } else {
          ranges.emplace_back(it->begin, it->end);
        }
        prev_matched = it->matched;
      }
      std::reverse(ranges.begin(), ranges.end());
      break;
    }
    case SplitBehavior::kContiguous: {
      int prev = -1;
      for (const Segment& s : segments) {
        if (prev == static_cast<int>(s.matched) && !ranges.empty()) {
          ranges.back().second = s.end;
        } else {
          ranges.emplace_back(s.begin, s.end);
        }
        prev = s.matched;
      }
      break;
    }
  }
  for (auto [b, e] : ranges) {
    if (e > b) out->emplace_back(text.substr(b, e - b));
  }
}

Status SplitPreTokenizer::PreTokenize(std::vector<std::string>* pieces, bool) const {
  std::vector<std::string> out;
  out.reserve(pieces->size() * 4);
  std::vector<std::pair<size_t, size_t>> matches;
  for (const std::string& piece : *pieces) {
    matches.clear();
    if (regex_ != nullptr) {
      XI_RETURN_IF_ERROR(regex_->FindAll(piece, &matches));
    } else if (!literal_.empty()) {
      for (size_t p = piece.find(literal_); p != std::string::npos;
           p = piece.find(literal_, p + literal_.size())) {
        matches.emplace_back(p, p + literal_.size());
      }
    }
    SplitWithBehavior(piece, ToSegments(piece.size(), matches, invert_), behavior_, &out);
  }
  *pieces = std::move(out);
  return Status::Ok();
}

StatusOr<std::unique_ptr<ByteLevelPreTokenizer>> ByteLevelPreTokenizer::Create(
    bool add_prefix_space, bool use_regex) {
  std::unique_ptr<SplitPreTokenizer> split;
  if (use_regex) {
    XI_ASSIGN_OR_RETURN(auto re, Regex::Compile(kGpt2Pattern));
    split = std::make_unique<SplitPreTokenizer>("", std::move(re), SplitBehavior::kIsolated, false);
  }
  return std::unique_ptr<ByteLevelPreTokenizer>(
      new ByteLevelPreTokenizer(add_prefix_space, std::move(split)));
}

Status ByteLevelPreTokenizer::PreTokenize(std::vector<std::string>* pieces,
                                          bool at_text_start) const {
  if (add_prefix_space_) {
    for (std::string& p : *pieces) {
      if (!p.empty() && p[0] != ' ') p.insert(p.begin(), ' ');
    }
  }
  if (split_ != nullptr) XI_RETURN_IF_ERROR(split_->PreTokenize(pieces, at_text_start));
  std::string mapped;
  for (std::string& p : *pieces) {
    mapped.clear();
    ByteLevelEncode(p, &mapped);
    p.swap(mapped);
  }
  return Status::Ok();
}

Status MetaspacePreTokenizer::PreTokenize(std::vector<std::string>* pieces,
                                          bool at_text_start) const {
  std::vector<std::string> out;
  for (size_t i = 0; i < pieces->size(); ++i) {
    std::string p = ReplaceAll((*pieces)[i], " ", replacement_);
    bool prepend = scheme_ == PrependScheme::kAlways ||
                   (scheme_ == PrependScheme::kFirst && i == 0 && at_text_start);
    if (prepend && p.compare(0, replacement_.size(), replacement_) != 0) {
      p.insert(0, replacement_);
    }
    if (!split_) {
      if (!p.empty()) out.push_back(std::move(p));
      continue;
    }
    std::vector<std::pair<size_t, size_t>> m;
    for (size_t q = p.find(replacement_); q != std::string::npos;
         q = p.find(replacement_, q + replacement_.size())) {
      m.emplace_back(q, q + replacement_.size());
    }
    SplitWithBehavior(p, ToSegments(p.size(), m, false), SplitBehavior::kMergedWithNext, &out);
  }
  *pieces = std::move(out);
  return Status::Ok();
}

Status WhitespaceSplitPreTokenizer::PreTokenize(std::vector<std::string>* pieces, bool) const {
  std::vector<std::string> out;
  for (const std::string& p : *pieces) {
    SplitWithBehavior(p, CharSegments(p, false, IsWhitespace), SplitBehavior::kRemoved, &out);
  }
  *pieces = std::move(out);
  return Status::Ok();
}

Status DigitsPreTokenizer::PreTokenize(std::vector<std::string>* pieces, bool) const {
  std::vector<std::string> out;
  for (const std::string& p : *pieces) {
    SplitWithBehavior(p, CharSegments(p, individual_, IsNumeric),
                      individual_ ? SplitBehavior::kIsolated : SplitBehavior::kContiguous, &out);
  }
  *pieces = std::move(out);
  return Status::Ok();
}

Status SequencePreTokenizer::PreTokenize(std::vector<std::string>* pieces,
                                         bool at_text_start) const {
  for (const auto& step : steps_) XI_RETURN_IF_ERROR(step->PreTokenize(pieces, at_text_start));
  return Status::Ok();
}

}  // namespace xinfer::tok
