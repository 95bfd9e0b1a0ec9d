#include "sampling/json_regex.h"

#include <algorithm>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/check.h"

namespace xinfer {
namespace {

RegexNode Digits(char lo, char hi) {
  return CharRange(static_cast<char32_t>(lo), static_cast<char32_t>(hi));
}

// The decimal strings of the same length from lo to hi (lo <= hi, both that long), digit by
// digit: the ones that keep lo's first digit, those strictly between, those that keep hi's.
RegexNode SameLength(const std::string& lo, const std::string& hi) {
  const size_t rest = lo.size() - 1;
  if (rest == 0) return Digits(lo[0], hi[0]);
  const std::string lo_rest = lo.substr(1), hi_rest = hi.substr(1);
  if (lo_rest == std::string(rest, '0') && hi_rest == std::string(rest, '9'))
    return RegexConcat(
        {Digits(lo[0], hi[0]),
         RegexRepeat(Digits('0', '9'), static_cast<int32_t>(rest), static_cast<int32_t>(rest))});
  if (lo[0] == hi[0]) return RegexConcat({Digits(lo[0], lo[0]), SameLength(lo_rest, hi_rest)});
  std::vector<RegexNode> parts;
  parts.push_back(RegexConcat({Digits(lo[0], lo[0]), SameLength(lo_rest, std::string(rest, '9'))}));
  if (lo[0] + 1 <= hi[0] - 1)
    parts.push_back(RegexConcat(
        {Digits(static_cast<char>(lo[0] + 1), static_cast<char>(hi[0] - 1)),
         RegexRepeat(Digits('0', '9'), static_cast<int32_t>(rest), static_cast<int32_t>(rest))}));
  parts.push_back(RegexConcat({Digits(hi[0], hi[0]), SameLength(std::string(rest, '0'), hi_rest)}));
  return RegexAlternate(std::move(parts));
}

// The decimal strings of a..b (0 <= a <= b; b nullopt: no bound), length by length.
RegexNode NonNegative(int64_t a, std::optional<int64_t> b) {
  const std::string sa = std::to_string(a);
  const size_t longest = b ? std::to_string(*b).size() : sa.size();
  std::vector<RegexNode> parts;
  for (size_t len = sa.size(); len <= longest; ++len) {
    std::string lo = sa;
    if (len > sa.size()) {  // 10^(len-1) (built in place: GCC 12 misreads "1" + string as overlap)
      lo.assign(len, '0');
      lo[0] = '1';
    }
    const std::string hi = b && len == longest ? std::to_string(*b) : std::string(len, '9');
    parts.push_back(SameLength(lo, hi));
  }
  if (!b)  // every longer number
    parts.push_back(RegexConcat(
        {Digits('1', '9'), RegexRepeat(Digits('0', '9'), static_cast<int32_t>(sa.size()), -1)}));
  return RegexAlternate(std::move(parts));
}

}  // namespace

RegexNode JsonStringOf(const RegexNode& content) {
  struct Spell {
    static RegexNode Of(const RegexNode& node) {
      if (node.kind != RegexNode::Kind::kChars) {
        RegexNode out = node;
        for (RegexNode& child : out.children) child = Of(child);
        return out;
      }
      static constexpr std::pair<char32_t, std::string_view> kEscapes[] = {
          {U'"', "\\\""}, {U'\\', "\\\\"}, {U'\b', "\\b"}, {U'\f', "\\f"},
          {U'\n', "\\n"}, {U'\r', "\\r"},  {U'\t', "\\t"}};
      RegexNode raw;
      raw.kind = RegexNode::Kind::kChars;
      for (auto [lo, hi] : node.ranges) {
        lo = std::max<char32_t>(lo, 0x20);  // control characters only by their escapes
        for (char32_t cut : {char32_t{'"'}, char32_t{'\\'}}) {  // only escaped
          if (lo <= cut && cut <= hi) {
            if (lo < cut) raw.ranges.emplace_back(lo, cut - 1);
            lo = cut + 1;
          }
        }
        if (lo <= hi) raw.ranges.emplace_back(lo, hi);
      }
      std::vector<RegexNode> spellings;
      if (!raw.ranges.empty()) spellings.push_back(std::move(raw));
      for (const auto& [c, escape] : kEscapes)
        for (const auto& [lo, hi] : node.ranges)
          if (lo <= c && c <= hi) spellings.push_back(AsciiLiteral(escape));
      if (spellings.empty()) return raw;  // no character can be written: matches nothing
      return RegexAlternate(std::move(spellings));
    }
  };
  return RegexConcat({AsciiLiteral("\""), Spell::Of(content), AsciiLiteral("\"")});
}

RegexNode JsonIntegerIn(std::optional<int64_t> lo, std::optional<int64_t> hi) {
  XI_CHECK(!lo || !hi || *lo <= *hi);
  // Magnitudes are negated below; the callers' bounds stay far from the int64 edges.
  XI_CHECK((!lo || *lo > INT64_MIN) && (!hi || *hi > INT64_MIN));
  std::vector<RegexNode> parts;
  if (!lo || *lo < 0) {  // the negative ones: "-" and magnitudes from max(-hi, 1) to -lo
    const int64_t smallest = hi && *hi < 0 ? -*hi : 1;
    std::optional<int64_t> largest;
    if (lo) largest = -*lo;
    parts.push_back(RegexConcat({AsciiLiteral("-"), NonNegative(smallest, largest)}));
  }
  if (!hi || *hi >= 0) parts.push_back(NonNegative(lo ? std::max<int64_t>(*lo, 0) : 0, hi));
  return RegexAlternate(std::move(parts));
}

}  // namespace xinfer
