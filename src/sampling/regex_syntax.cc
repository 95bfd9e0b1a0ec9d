#include "sampling/regex_syntax.h"

#include <algorithm>
#include <optional>
#include <string>
#include <tuple>

#include "base/hex.h"
#include "base/utf8.h"

namespace xinfer {
namespace {

using Ranges = std::vector<std::pair<char32_t, char32_t>>;

constexpr char32_t kMaxCodepoint = 0x10FFFF;
// Nesting of groups (each level one stack frame of the parser and of the compiler).
constexpr int kMaxDepth = 200;

Ranges Normalized(Ranges r) {
  std::sort(r.begin(), r.end());
  Ranges out;
  for (const auto& [lo, hi] : r) {
    if (!out.empty() && lo <= out.back().second + 1) {
      out.back().second = std::max(out.back().second, hi);
    } else {
      out.emplace_back(lo, hi);
    }
  }
  return out;
}

Ranges Complement(const Ranges& normalized) {
  Ranges out;
  char32_t next = 0;
  for (const auto& [lo, hi] : normalized) {
    if (lo > next) out.emplace_back(next, lo - 1);
    next = hi + 1;
  }
  if (next <= kMaxCodepoint) out.emplace_back(next, kMaxCodepoint);
  return out;
}

RegexNode CharsNode(Ranges ranges) {
  RegexNode n;
  n.kind = RegexNode::Kind::kChars;
  n.ranges = Normalized(std::move(ranges));
  return n;
}

class Parser {
 public:
  Parser(std::u32string pattern, std::string_view what) : p_(std::move(pattern)), what_(what) {}

  StatusOr<RegexNode> Parse(RegexAnchors* anchors) {
    // Anchors at the very ends only restate fullmatch.
    RegexAnchors found;
    size_t end = p_.size();
    if (end >= 1 && p_[end - 1] == U'$' && !EscapedAt(end - 1)) {
      --end;
      found.end = true;
    } else if (end >= 2 && p_[end - 2] == U'\\' && p_[end - 1] == U'Z' && !EscapedAt(end - 2)) {
      end -= 2;
      found.end = true;
    }
    p_.resize(end);
    if (Peek(U'^')) {
      ++pos_;
      found.start = true;
    } else if (pos_ + 1 < p_.size() && p_[0] == U'\\' && p_[1] == U'A') {
      pos_ += 2;
      found.start = true;
    }
    if (anchors != nullptr) *anchors = found;
    XI_ASSIGN_OR_RETURN(RegexNode node, Alternation(0));
    if (pos_ < p_.size()) return Error("unbalanced ')'");
    return node;
  }

 private:
  // Whether p_[i] is escaped by an odd run of backslashes before it.
  bool EscapedAt(size_t i) const {
    size_t n = 0;
    while (i > n && p_[i - n - 1] == U'\\') ++n;
    return n % 2 == 1;
  }
  bool Peek(char32_t c) const { return pos_ < p_.size() && p_[pos_] == c; }
  Status Error(std::string_view message) const {
    return InvalidArgument("{}: {} at position {}", what_, message, pos_);
  }
  Status Refuse(std::string_view construct) const {
    return Unimplemented("{}: {} (at position {}) is not supported in guided decoding", what_,
                         construct, pos_);
  }

  StatusOr<RegexNode> Alternation(int depth) {
    if (depth > kMaxDepth) return Error("groups nested too deep");
    RegexNode alt;
    alt.kind = RegexNode::Kind::kAlternate;
    while (true) {
      XI_ASSIGN_OR_RETURN(RegexNode branch, Sequence(depth));
      alt.children.push_back(std::move(branch));
      if (!Peek(U'|')) break;
      ++pos_;
    }
    if (alt.children.size() == 1) return std::move(alt.children[0]);
    return alt;
  }

  StatusOr<RegexNode> Sequence(int depth) {
    RegexNode seq;
    seq.kind = RegexNode::Kind::kConcat;
    while (pos_ < p_.size() && p_[pos_] != U'|' && p_[pos_] != U')') {
      XI_ASSIGN_OR_RETURN(RegexNode atom, Atom(depth));
      XI_ASSIGN_OR_RETURN(atom, Quantified(std::move(atom)));
      seq.children.push_back(std::move(atom));
    }
    if (seq.children.empty()) return RegexNode{};
    if (seq.children.size() == 1) return std::move(seq.children[0]);
    return seq;
  }

  // {m}, {m,}, {,n}, {m,n} at pos_ (on '{'): the bounds, or nothing when it is a literal '{'.
  std::optional<std::pair<int64_t, int64_t>> Braces(size_t* after) const {
    size_t i = pos_ + 1;
    auto number = [&](int64_t* v) {
      const size_t start = i;
      *v = 0;
      while (i < p_.size() && p_[i] >= U'0' && p_[i] <= U'9') {
        *v = std::min<int64_t>(*v * 10 + (p_[i] - U'0'), int64_t{1} << 40);
        ++i;
      }
      return i > start;
    };
    int64_t lo = 0, hi = 0;
    const bool has_lo = number(&lo);
    if (i < p_.size() && p_[i] == U'}') {
      if (!has_lo) return std::nullopt;
      *after = i + 1;
      return std::make_pair(lo, lo);
    }
    if (i >= p_.size() || p_[i] != U',') return std::nullopt;
    ++i;
    const bool has_hi = number(&hi);
    if (i >= p_.size() || p_[i] != U'}') return std::nullopt;
    *after = i + 1;
    return std::make_pair(has_lo ? lo : 0, has_hi ? hi : -1);
  }

  StatusOr<RegexNode> Quantified(RegexNode atom) {
    bool quantified = false;
    while (pos_ < p_.size()) {
      int64_t lo = 0, hi = -1;
      size_t after = pos_ + 1;
      const char32_t c = p_[pos_];
      if (c == U'*') {
        lo = 0;
      } else if (c == U'+') {
        lo = 1;
      } else if (c == U'?') {
        hi = 1;
      } else if (c == U'{') {
        auto bounds = Braces(&after);
        if (!bounds) return atom;  // a literal '{', read as the next atom
        std::tie(lo, hi) = *bounds;
        if (hi >= 0 && hi < lo) return Error("quantifier's maximum is below its minimum");
        if (lo > kMaxRegexRepeat || hi > kMaxRegexRepeat)
          return Refuse(fmt::format("a repeat count above {}", kMaxRegexRepeat));
      } else {
        return atom;
      }
      if (quantified) return Error("multiple repeat");
      quantified = true;
      pos_ = after;
      // Lazy forms match the same strings; possessive ones would not.
      if (Peek(U'?')) {
        ++pos_;
      } else if (Peek(U'+')) {
        return Refuse("a possessive quantifier");
      }
      RegexNode r;
      r.kind = RegexNode::Kind::kRepeat;
      r.min_repeat = static_cast<int32_t>(lo);
      r.max_repeat = static_cast<int32_t>(hi);
      r.children.push_back(std::move(atom));
      atom = std::move(r);
    }
    return atom;
  }

  StatusOr<RegexNode> Atom(int depth) {
    const char32_t c = p_[pos_];
    switch (c) {
      case U'(':
        return Group(depth);
      case U'[':
        return Class();
      case U'.':
        ++pos_;
        return CharsNode(Complement({{U'\n', U'\n'}}));
      case U'^':
        return Refuse("'^' other than at the start");
      case U'$':
        return Refuse("'$' other than at the end");
      case U'*':
      case U'+':
      case U'?':
        return Error("nothing to repeat");
      case U'\\': {
        XI_ASSIGN_OR_RETURN(Ranges r, Escape(/*in_class=*/false));
        return CharsNode(std::move(r));
      }
      default:
        ++pos_;
        return CharsNode({{c, c}});
    }
  }

  StatusOr<RegexNode> Group(int depth) {
    ++pos_;  // '('
    if (Peek(U'?')) {
      ++pos_;
      if (Peek(U':')) {
        ++pos_;
      } else if (Peek(U'P') || Peek(U'<')) {
        if (Peek(U'P')) ++pos_;
        if (Peek(U'=')) return Refuse("a named backreference");
        if (!Peek(U'<')) return Error("unknown extension (?P");
        if (pos_ + 1 < p_.size() && (p_[pos_ + 1] == U'=' || p_[pos_ + 1] == U'!'))
          return Refuse("lookbehind");
        const size_t close = p_.find(U'>', pos_);
        if (close == std::u32string::npos || close == pos_ + 1) return Error("bad group name");
        pos_ = close + 1;
      } else if (Peek(U'=') || Peek(U'!')) {
        return Refuse("lookahead");
      } else {
        return Refuse("an inline flag or group extension");
      }
    }
    XI_ASSIGN_OR_RETURN(RegexNode inner, Alternation(depth + 1));
    if (!Peek(U')')) return Error("missing ')'");
    ++pos_;
    return inner;
  }

  StatusOr<RegexNode> Class() {
    ++pos_;  // '['
    bool negated = false;
    if (Peek(U'^')) {
      negated = true;
      ++pos_;
    }
    Ranges ranges;
    bool first = true;
    while (true) {
      if (pos_ >= p_.size()) return Error("unterminated character set");
      if (p_[pos_] == U']' && !first) break;
      first = false;
      // One item: a character, an escape (a character or a set such as \d), or a range.
      XI_ASSIGN_OR_RETURN(Ranges lo, ClassAtom());
      if (lo.size() == 1 && lo[0].first == lo[0].second && pos_ + 1 < p_.size() &&
          p_[pos_] == U'-' && p_[pos_ + 1] != U']') {
        ++pos_;
        XI_ASSIGN_OR_RETURN(Ranges hi, ClassAtom());
        if (hi.size() != 1 || hi[0].first != hi[0].second) return Error("bad character range");
        if (hi[0].first < lo[0].first) return Error("bad character range");
        ranges.emplace_back(lo[0].first, hi[0].first);
      } else {
        ranges.insert(ranges.end(), lo.begin(), lo.end());
      }
    }
    ++pos_;  // ']'
    Ranges normalized = Normalized(std::move(ranges));
    return CharsNode(negated ? Complement(normalized) : std::move(normalized));
  }

  StatusOr<Ranges> ClassAtom() {
    if (p_[pos_] == U'\\') return Escape(/*in_class=*/true);
    const char32_t c = p_[pos_++];
    return Ranges{{c, c}};
  }

  // pos_ on the backslash.
  StatusOr<Ranges> Escape(bool in_class) {
    ++pos_;
    if (pos_ >= p_.size()) return Error("bad escape (end of pattern)");
    const char32_t c = p_[pos_++];
    auto one = [](char32_t v) { return Ranges{{v, v}}; };
    const Ranges digit = {{U'0', U'9'}};
    const Ranges word = Normalized({{U'0', U'9'}, {U'A', U'Z'}, {U'_', U'_'}, {U'a', U'z'}});
    const Ranges space = Normalized({{U'\t', U'\r'}, {U' ', U' '}});
    // Escapes of one character (\b only inside a class: outside it is a word boundary).
    static constexpr std::pair<char32_t, char32_t> kCharacters[] = {
        {U'n', U'\n'}, {U't', U'\t'}, {U'r', U'\r'}, {U'f', U'\f'},
        {U'v', U'\v'}, {U'a', U'\a'}, {U'0', 0}};
    for (const auto& [letter, character] : kCharacters)
      if (c == letter) return one(character);
    switch (c) {
      case U'd':
        return digit;
      case U'D':
        return Complement(digit);
      case U'w':
        return word;
      case U'W':
        return Complement(word);
      case U's':
        return space;
      case U'S':
        return Complement(space);
      case U'x':
        return Hex(2);
      case U'u':
        return Hex(4);
      case U'U':
        return Hex(8);
      case U'b':
        if (in_class) return one(U'\b');
        return Refuse("a word boundary \\b");
      case U'B':
        return Refuse("\\B");
      case U'A':
      case U'Z':
        return Refuse("an anchor other than at the ends");
      default:
        break;
    }
    if (c >= U'1' && c <= U'9') return Refuse("a backreference");
    if ((c >= U'a' && c <= U'z') || (c >= U'A' && c <= U'Z'))
      return Error(fmt::format("bad escape \\{}", static_cast<char>(c)));
    return one(c);  // escaped punctuation (or any other character) stands for itself
  }

  StatusOr<Ranges> Hex(int digits) {
    char32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      if (pos_ >= p_.size()) return Error("incomplete hex escape");
      const int d = HexDigitValue(p_[pos_++]);
      if (d < 0) return Error("incomplete hex escape");
      v = v * 16 + static_cast<char32_t>(d);
    }
    if (v > kMaxCodepoint || (v >= 0xD800 && v <= 0xDFFF))
      return Error("escape is not a Unicode scalar value");
    return Ranges{{v, v}};
  }

  std::u32string p_;
  std::string_view what_;
  size_t pos_ = 0;
};

StatusOr<std::u32string> Decode(std::string_view text, std::string_view what) {
  if (!IsValidUtf8(text)) return InvalidArgument("{} is not valid UTF-8", what);
  std::u32string out;
  size_t pos = 0;
  while (pos < text.size()) out.push_back(NextCodepoint(text, &pos));
  return out;
}

}  // namespace

StatusOr<RegexNode> ParseRegex(std::string_view pattern, std::string_view what,
                               RegexAnchors* anchors) {
  XI_ASSIGN_OR_RETURN(std::u32string decoded, Decode(pattern, what));
  return Parser(std::move(decoded), what).Parse(anchors);
}

RegexNode AnyCharacter() { return CharsNode({{0, kMaxCodepoint}}); }

RegexNode CharRange(char32_t lo, char32_t hi) { return CharsNode({{lo, hi}}); }

RegexNode AsciiLiteral(std::string_view ascii) {
  std::vector<RegexNode> chars;
  for (char c : ascii)
    chars.push_back(CharRange(static_cast<char32_t>(c), static_cast<char32_t>(c)));
  return RegexConcat(std::move(chars));
}

RegexNode RegexConcat(std::vector<RegexNode> parts) {
  RegexNode n;
  n.kind = RegexNode::Kind::kConcat;
  n.children = std::move(parts);
  return n;
}

RegexNode RegexAlternate(std::vector<RegexNode> alternatives) {
  RegexNode n;
  n.kind = RegexNode::Kind::kAlternate;
  n.children = std::move(alternatives);
  return n;
}

RegexNode RegexRepeat(RegexNode node, int32_t min, int32_t max) {
  RegexNode n;
  n.kind = RegexNode::Kind::kRepeat;
  n.min_repeat = min;
  n.max_repeat = max;
  n.children.push_back(std::move(node));
  return n;
}

StatusOr<RegexNode> LiteralRegex(std::string_view text, std::string_view what) {
  XI_ASSIGN_OR_RETURN(std::u32string decoded, Decode(text, what));
  std::vector<RegexNode> chars;
  for (char32_t c : decoded) chars.push_back(CharRange(c, c));
  return RegexConcat(std::move(chars));
}

}  // namespace xinfer
