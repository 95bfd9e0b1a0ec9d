#include "sampling/gbnf.h"

#include <string>
#include <utility>
#include <vector>

#include "base/hex.h"
#include "base/utf8.h"
#include "sampling/regex_syntax.h"

namespace xinfer {
namespace {

using Sequence = GrammarBuilder::Sequence;

// Nesting of parenthesized groups (each level one stack frame of the parser).
constexpr int kMaxGroupDepth = 200;

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_';
}

class GbnfParser {
 public:
  GbnfParser(std::string_view text, std::string_view what)
      : text_(text), what_(what), builder_(what) {}

  StatusOr<std::shared_ptr<const Grammar>> Parse() {
    if (text_.size() > kMaxGbnfBytes)
      return InvalidArgument("{}: the grammar is longer than {} bytes", what_, kMaxGbnfBytes);
    SkipSpace();
    if (pos_ == text_.size()) return Error("the grammar is empty (it needs a 'root' rule)");
    while (pos_ < text_.size()) {
      const size_t name_start = pos_;
      const std::string_view name = Name();
      if (name.empty()) return Error("expected a rule name");
      SkipSpace();
      if (text_.substr(pos_, 3) != "::=") return Error("expected '::=' after the rule name");
      pos_ += 3;
      const uint32_t rule = builder_.RuleNamed(name);
      if (builder_.defined(rule)) {
        pos_ = name_start;
        return Error("rule '" + std::string(name) + "' is defined twice");
      }
      XI_ASSIGN_OR_RETURN(std::vector<Sequence> alternatives, Alternatives(rule, 0));
      if (pos_ < text_.size() && text_[pos_] == ')') return Error("unmatched ')'");
      XI_RETURN_IF_ERROR(Wrap(builder_.Define(rule, std::move(alternatives))));
    }
    return builder_.Finish("root");
  }

 private:
  // Error at the current position, as "what: line L, column C: message".
  Status Error(const std::string& message) const {
    size_t line = 1, column = 1;
    for (size_t i = 0; i < pos_ && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    return InvalidArgument("{}: line {}, column {}: {}", what_, line, column, message);
  }
  Status Wrap(const Status& s) const { return s.ok() ? s : Error(s.message()); }

  // Whitespace (newlines included) and comments.
  void SkipSpace() {
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++pos_;
      } else if (c == '#') {
        while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
      } else {
        break;
      }
    }
  }

  std::string_view Name() {
    const size_t start = pos_;
    while (pos_ < text_.size() && IsNameChar(text_[pos_])) ++pos_;
    return text_.substr(start, pos_ - start);
  }

  // At `name ::=`: the next rule begins, which ends the current one.
  bool AtRuleStart() const {
    size_t p = pos_;
    while (p < text_.size() && IsNameChar(text_[p])) ++p;
    if (p == pos_) return false;
    while (p < text_.size() && (text_[p] == ' ' || text_[p] == '\t')) ++p;
    return text_.substr(p, 3) == "::=";
  }

  StatusOr<std::vector<Sequence>> Alternatives(uint32_t rule, int depth) {
    std::vector<Sequence> alternatives;
    while (true) {
      XI_ASSIGN_OR_RETURN(Sequence seq, SequenceOf(rule, depth));
      alternatives.push_back(std::move(seq));
      SkipSpace();
      if (pos_ < text_.size() && text_[pos_] == '|') {
        ++pos_;
        continue;
      }
      return alternatives;
    }
  }

  StatusOr<Sequence> SequenceOf(uint32_t rule, int depth) {
    Sequence seq;
    while (true) {
      SkipSpace();
      if (pos_ == text_.size() || text_[pos_] == '|' || text_[pos_] == ')' || AtRuleStart())
        return seq;
      const size_t item_start = seq.size();
      XI_RETURN_IF_ERROR(Item(rule, depth, &seq));
      // A quantifier applies to the item just read (a whole literal, as in llama.cpp).
      if (pos_ < text_.size() &&
          (text_[pos_] == '*' || text_[pos_] == '+' || text_[pos_] == '?' || text_[pos_] == '{')) {
        int32_t min = 0, max = -1;
        XI_RETURN_IF_ERROR(Quantifier(&min, &max));
        Sequence item(seq.begin() + static_cast<std::ptrdiff_t>(item_start), seq.end());
        seq.resize(item_start);
        XI_ASSIGN_OR_RETURN(Sequence repeated,
                            Wrap(builder_.Repeat(std::move(item), min, max, rule)));
        seq.insert(seq.end(), repeated.begin(), repeated.end());
        if (pos_ < text_.size() &&
            (text_[pos_] == '*' || text_[pos_] == '+' || text_[pos_] == '?' || text_[pos_] == '{'))
          return Error("a quantifier must follow an item, not another quantifier");
      }
    }
  }

  template <class T>
  StatusOr<T> Wrap(StatusOr<T> s) const {
    if (!s.ok()) return Error(s.status().message());
    return s;
  }

  Status Quantifier(int32_t* min, int32_t* max) {
    const char c = text_[pos_++];
    if (c == '*') return Status::Ok();
    if (c == '+') {
      *min = 1;
      return Status::Ok();
    }
    if (c == '?') {
      *max = 1;
      return Status::Ok();
    }
    // {m} {m,} {m,n} {,n}
    auto number = [&](int32_t* out) {
      const size_t start = pos_;
      int64_t v = 0;
      while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
        v = std::min<int64_t>(v * 10 + (text_[pos_] - '0'), int64_t{1} << 40);
        ++pos_;
      }
      if (pos_ == start) return false;
      *out = static_cast<int32_t>(std::min<int64_t>(v, kMaxGbnfRepeat + 1));
      return true;
    };
    SkipSpace();
    const bool has_min = number(min);
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == ',') {
      ++pos_;
      SkipSpace();
      if (!number(max)) *max = -1;
    } else {
      if (!has_min) return Error("expected a count in '{...}'");
      *max = *min;
    }
    SkipSpace();
    if (pos_ == text_.size() || text_[pos_] != '}') return Error("expected '}' to end the count");
    ++pos_;
    if (*min > kMaxGbnfRepeat || *max > kMaxGbnfRepeat)
      return Error("a count above " + std::to_string(kMaxGbnfRepeat) + " is not supported");
    if (*max != -1 && *max < *min) return Error("the count's maximum is below its minimum");
    return Status::Ok();
  }

  Status Item(uint32_t rule, int depth, Sequence* seq) {
    const char c = text_[pos_];
    if (c == '"') return Literal(seq);
    if (c == '[') return Class(seq);
    if (c == '.') {
      ++pos_;
      return Wrap(builder_.AppendCharacters({{0, 0x10FFFF}}, seq));
    }
    if (c == '(') {
      if (depth >= kMaxGroupDepth) return Error("groups are nested too deep");
      ++pos_;
      const uint32_t group = builder_.NewRule(rule);
      XI_ASSIGN_OR_RETURN(std::vector<Sequence> alternatives, Alternatives(group, depth + 1));
      if (pos_ == text_.size() || text_[pos_] != ')') return Error("expected ')'");
      ++pos_;
      XI_RETURN_IF_ERROR(Wrap(builder_.Define(group, std::move(alternatives))));
      seq->push_back({Grammar::Kind::kRule, group});
      return Status::Ok();
    }
    if (IsNameChar(c)) {
      seq->push_back({Grammar::Kind::kRule, builder_.RuleNamed(Name())});
      return Status::Ok();
    }
    if (c == '<') return Error("token references (<...>) are not supported");
    if (c == '\'') return Error("literals are written in double quotes");
    if (c == ':' && text_.substr(pos_, 3) == "::=")
      return Error("expected a rule name before '::='");
    return Error(std::string("unexpected character '") + c + "'");
  }

  // One character of a literal (after an opening quote): an escape or a UTF-8 character.
  Status Character(char32_t* cp) {
    if (text_[pos_] != '\\') {
      const Utf8Char ch = DecodeUtf8Char(text_, pos_);
      if (!ch.valid) return Error("the grammar is not valid UTF-8");
      pos_ += ch.size;
      *cp = ch.cp;
      return Status::Ok();
    }
    if (pos_ + 1 >= text_.size()) return Error("unterminated escape");
    const char e = text_[pos_ + 1];
    pos_ += 2;
    // One-character escapes: (escape, character); punctuation escapes itself.
    static constexpr std::pair<char, char32_t> kSimple[] = {{'n', '\n'}, {'r', '\r'}, {'t', '\t'},
                                                            {'f', '\f'}, {'v', '\v'}, {'0', 0}};
    for (const auto& [name, value] : kSimple)
      if (e == name) {
        *cp = value;
        return Status::Ok();
      }
    if (std::string_view("\\\"'[]-/^.").find(e) != std::string_view::npos) {
      *cp = static_cast<char32_t>(e);
      return Status::Ok();
    }
    const int digits = e == 'x' ? 2 : e == 'u' ? 4 : e == 'U' ? 8 : 0;
    if (digits == 0) {
      pos_ -= 2;
      return Error(std::string("unknown escape '\\") + e + "'");
    }
    uint32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      const int h = pos_ < text_.size() ? HexDigitValue(text_[pos_]) : -1;
      if (h < 0) return Error("expected " + std::to_string(digits) + " hex digits");
      v = v * 16 + static_cast<uint32_t>(h);
      ++pos_;
    }
    if (v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
      return Error("the escape is not a Unicode scalar value");
    *cp = v;
    return Status::Ok();
  }

  Status Literal(Sequence* seq) {
    const size_t start = pos_;
    ++pos_;  // the opening quote
    std::string bytes;
    while (true) {
      if (pos_ == text_.size() || text_[pos_] == '\n') {
        pos_ = start;
        return Error("unterminated literal");
      }
      if (text_[pos_] == '"') break;
      char32_t cp = 0;
      XI_RETURN_IF_ERROR(Character(&cp));
      AppendUtf8(cp, &bytes);
    }
    ++pos_;
    builder_.AppendLiteral(bytes, seq);
    return Status::Ok();
  }

  // [...] / [^...]: the bracket's text read as a Python-regex class (the same escapes and ranges).
  Status Class(Sequence* seq) {
    const size_t start = pos_;
    size_t p = pos_ + 1;
    if (p < text_.size() && text_[p] == '^') ++p;
    bool closed = false;
    for (; p < text_.size() && text_[p] != '\n'; ++p) {
      if (text_[p] == '\\') {
        ++p;
        continue;
      }
      if (text_[p] == ']') {
        closed = true;
        break;
      }
    }
    if (!closed) return Error("unterminated character class");
    const std::string_view cls = text_.substr(start, p + 1 - start);
    if (cls == "[]" || cls == "[^]") return Error("empty character class");
    auto node = ParseRegex(cls, "character class");
    if (!node.ok()) return Error(node.status().message());
    if (node->kind != RegexNode::Kind::kChars) return Error("not a character class");
    pos_ = p + 1;
    return Wrap(builder_.AppendCharacters(node->ranges, seq));
  }

  std::string_view text_;
  std::string what_;
  GrammarBuilder builder_;
  size_t pos_ = 0;
};

}  // namespace

StatusOr<std::shared_ptr<const Grammar>> ParseGbnf(std::string_view text, std::string_view what) {
  return GbnfParser(text, what).Parse();
}

}  // namespace xinfer
