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

// What may follow a number's integer part.
enum class Fraction { kNone, kZero, kNonZero, kAny };

Fraction Both(Fraction a, Fraction b) {
  if (a == Fraction::kAny) return b;
  if (b == Fraction::kAny) return a;
  return a == b ? a : Fraction::kNone;
}

RegexNode FractionOf(Fraction f) {
  const RegexNode digits = RegexRepeat(Digits('0', '9'), 0, -1);
  switch (f) {
    case Fraction::kAny:  // nothing, or '.' and digits
      return RegexRepeat(RegexConcat({AsciiLiteral("."), RegexRepeat(Digits('0', '9'), 1, -1)}), 0,
                         1);
    case Fraction::kZero:  // nothing, or '.' and zeros
      return RegexRepeat(RegexConcat({AsciiLiteral("."), RegexRepeat(Digits('0', '0'), 1, -1)}), 0,
                         1);
    case Fraction::kNonZero:  // '.' and digits, one of them not 0
      return RegexConcat({AsciiLiteral("."), digits, Digits('1', '9'), digits});
    case Fraction::kNone:
      break;
  }
  return RegexNode{};
}

// Magnitudes m = I.F >= 0 (I the integer part) within `lo` (absent: m >= 0) and `hi`, whose
// values are >= 0: for each I, the fractions both bounds allow — any between them, at a bound
// what its strictness leaves.
std::optional<RegexNode> Magnitudes(std::optional<NumberBound> lo, std::optional<NumberBound> hi) {
  const NumberBound l = lo.value_or(NumberBound{0, false});
  const Fraction at_lo = l.strict ? Fraction::kNonZero : Fraction::kAny;
  std::vector<RegexNode> parts;
  auto add = [&](int64_t a, std::optional<int64_t> b, Fraction f) {
    if (f != Fraction::kNone && (!b || a <= *b))
      parts.push_back(RegexConcat({NonNegative(a, b), FractionOf(f)}));
  };
  if (!hi) {
    add(l.value, l.value, at_lo);
    add(l.value + 1, std::nullopt, Fraction::kAny);
  } else {
    const Fraction at_hi = hi->strict ? Fraction::kNone : Fraction::kZero;
    if (l.value == hi->value) {
      add(l.value, l.value, Both(at_lo, at_hi));
    } else if (l.value < hi->value) {
      add(l.value, l.value, at_lo);
      add(l.value + 1, hi->value - 1, Fraction::kAny);
      add(hi->value, hi->value, at_hi);
    }
  }
  if (parts.empty()) return std::nullopt;
  return RegexAlternate(std::move(parts));
}

}  // namespace

RegexNode JsonNumberIn(std::optional<NumberBound> lower, std::optional<NumberBound> upper) {
  std::vector<RegexNode> parts;
  // x >= 0, written as its magnitude: a lower bound above 0 (or x > 0) bounds it; an upper bound
  // below 0 (or x < 0) leaves none.
  if (!upper || upper->value > 0 || (upper->value == 0 && !upper->strict)) {
    std::optional<NumberBound> lo;
    if (lower && (lower->value > 0 || (lower->value == 0 && lower->strict))) lo = lower;
    if (auto m = Magnitudes(lo, upper)) parts.push_back(std::move(*m));
  }
  // x < 0, written "-" and its magnitude m > 0: x >= lo is m <= -lo, x <= hi (hi < 0) is m >= -hi.
  if (!lower || lower->value < 0) {
    std::optional<NumberBound> lo = NumberBound{0, true};
    if (upper && upper->value < 0) lo = NumberBound{-upper->value, upper->strict};
    std::optional<NumberBound> hi;
    if (lower) hi = NumberBound{-lower->value, lower->strict};
    if (auto m = Magnitudes(lo, hi)) parts.push_back(RegexConcat({AsciiLiteral("-"), *m}));
  }
  if (parts.empty()) {  // no number: a set of no characters, which matches no text
    RegexNode none;
    none.kind = RegexNode::Kind::kChars;
    return none;
  }
  return RegexAlternate(std::move(parts));
}

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
