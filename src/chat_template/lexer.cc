#include "chat_template/lexer.h"

#include <algorithm>
#include <cstdlib>

#include "base/hex.h"
#include "base/utf8.h"
#include "chat_template/pystr.h"

namespace xinfer::jinja {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsNameStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsNameChar(char c) { return IsNameStart(c) || IsDigit(c); }

class Lexer {
 public:
  explicit Lexer(std::string_view source) {
    // Like Jinja2: every \r\n, \r and \n becomes \n, and one trailing newline is dropped.
    src_.reserve(source.size());
    for (size_t i = 0; i < source.size(); ++i) {
      if (source[i] == '\r') {
        src_.push_back('\n');
        if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
      } else {
        src_.push_back(source[i]);
      }
    }
    if (!src_.empty() && src_.back() == '\n') src_.pop_back();
    map_ = SourceMap(src_);
  }

  StatusOr<LexResult> Run() {
    const size_t n = src_.size();
    size_t pos = 0;
    bool line_starting = true;
    while (pos < n) {
      const size_t t = FindTagStart(pos);
      if (t == std::string::npos) {
        Emit(Tok::kData, pos, src_.substr(pos));
        break;
      }
      const char kind = src_[t + 1];
      size_t p = t + 2;
      char sign = 0;
      if (p < n && (src_[p] == '-' || src_[p] == '+')) sign = src_[p++];
      size_t raw_body = 0;
      const bool raw = kind == '%' && MatchRawBegin(p, &raw_body);
      EmitText(pos, t, sign, kind == '{', line_starting);
      if (raw) {
        XI_ASSIGN_OR_RETURN(pos, LexRaw(t, raw_body));
      } else if (kind == '#') {
        const size_t e = src_.find("#}", p);
        if (e == std::string::npos) return Error(t, "Missing end of comment tag");
        pos = TagEnd(e, e > p ? src_[e - 1] : 0, /*trim=*/true);
      } else {
        XI_ASSIGN_OR_RETURN(pos, LexTag(t, p, kind == '%'));
      }
      line_starting = pos > 0 && src_[pos - 1] == '\n';
    }
    Token eof;
    eof.type = Tok::kEof;
    SetPos(&eof, n);
    toks_.push_back(eof);
    LexResult result;
    result.tokens = std::move(toks_);
    result.map = std::move(map_);
    return result;
  }

 private:
  size_t FindTagStart(size_t from) const {
    for (size_t i = src_.find('{', from); i != std::string::npos; i = src_.find('{', i + 1)) {
      if (i + 1 < src_.size() && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) {
        return i;
      }
    }
    return std::string::npos;
  }

  size_t SkipWs(size_t p) const {
    while (p < src_.size()) {
      size_t q = p;
      if (!IsPyWhitespace(DecodeUtf8(src_, &q))) break;
      p = q;
    }
    return p;
  }

  bool StartsWith(size_t p, std::string_view s) const { return src_.compare(p, s.size(), s) == 0; }

  // After the closing delimiter starting at `e` ("#}" / "%}" / "}}" already located), applies
  // '-' (strip all following whitespace), '+' (keep) or trim_blocks (drop one newline).
  size_t TagEnd(size_t e, char sign_before, bool trim) const {
    size_t after = e + 2;
    if (sign_before == '-') return SkipWs(after);
    if (sign_before != '+' && trim && after < src_.size() && src_[after] == '\n') ++after;
    return after;
  }

  bool MatchRawBegin(size_t p, size_t* body) const {
    size_t q = SkipWs(p);
    if (!StartsWith(q, "raw")) return false;
    q = SkipWs(q + 3);
    if (StartsWith(q, "-%}")) {
      *body = SkipWs(q + 3);
      return true;
    }
    if (StartsWith(q, "%}")) {
      *body = q + 2;  // Jinja2 applies no trim_blocks after {% raw %}
      return true;
    }
    return false;
  }

  StatusOr<size_t> LexRaw(size_t tag_start, size_t body) {
    for (size_t r = src_.find("{%", body); r != std::string::npos; r = src_.find("{%", r + 1)) {
      size_t q = r + 2;
      char sign = 0;
      if (q < src_.size() && (src_[q] == '-' || src_[q] == '+')) sign = src_[q++];
      q = SkipWs(q);
      if (!StartsWith(q, "endraw")) continue;
      q = SkipWs(q + 6);
      size_t end;
      if (StartsWith(q, "+%}")) {
        end = q + 3;
      } else if (StartsWith(q, "-%}")) {
        end = SkipWs(q + 3);
      } else if (StartsWith(q, "%}")) {
        end = TagEnd(q, 0, true);
      } else {
        continue;
      }
      const bool line_starting = body > 0 && src_[body - 1] == '\n';
      EmitText(body, r, sign, false, line_starting);
      return end;
    }
    return Error(tag_start, "Missing end of raw directive");
  }

  // Emits src_[begin, end) as data after Jinja2's '-' / lstrip_blocks handling.
  void EmitText(size_t begin, size_t end, char sign, bool is_variable, bool line_starting) {
    std::string_view text(src_.data() + begin, end - begin);
    if (sign == '-') {
      size_t keep = text.size();
      // rstrip(): walk back over whitespace code points.
      while (keep > 0) {
        size_t start = keep - 1;
        while (start > 0 && IsUtf8Continuation(text[start])) --start;
        size_t q = start;
        if (!IsPyWhitespace(DecodeUtf8(text, &q)) || q != keep) break;
        keep = start;
      }
      text = text.substr(0, keep);
    } else if (sign != '+' && !is_variable) {
      const size_t nl = text.rfind('\n');
      const size_t l_pos = nl == std::string_view::npos ? 0 : nl + 1;
      if ((l_pos > 0 || line_starting) && l_pos < text.size()) {
        size_t q = l_pos;
        bool all_ws = true;
        while (q < text.size() && all_ws) all_ws = IsPyWhitespace(DecodeUtf8(text, &q));
        if (all_ws) text = text.substr(0, l_pos);
      }
    }
    if (!text.empty()) Emit(Tok::kData, begin, std::string(text));
  }

  StatusOr<size_t> LexTag(size_t tag_start, size_t p, bool block) {
    Emit(block ? Tok::kBlockBegin : Tok::kVarBegin, tag_start, "");
    std::vector<char> balance;
    const size_t n = src_.size();
    while (true) {
      if (p >= n) {
        return Error(tag_start, block
                                    ? "unexpected end of template, expected '%}' to close the tag"
                                    : "unexpected end of template, expected '}}' to close the tag");
      }
      if (balance.empty()) {
        const char* close = block ? "%}" : "}}";
        if (block && StartsWith(p, "+%}")) {
          Emit(Tok::kBlockEnd, p, "");
          return p + 3;
        }
        if (src_[p] == '-' && StartsWith(p + 1, close)) {
          Emit(block ? Tok::kBlockEnd : Tok::kVarEnd, p, "");
          return TagEnd(p + 1, '-', block);
        }
        if (StartsWith(p, close)) {
          Emit(block ? Tok::kBlockEnd : Tok::kVarEnd, p, "");
          return TagEnd(p, 0, block);
        }
      }
      const char c = src_[p];
      size_t q = p;
      if (IsPyWhitespace(DecodeUtf8(src_, &q))) {
        p = q;
        continue;
      }
      if (IsDigit(c)) {
        XI_ASSIGN_OR_RETURN(p, LexNumber(p));
      } else if (IsNameStart(c)) {
        size_t e = p;
        while (e < n && IsNameChar(src_[e])) ++e;
        Emit(Tok::kName, p, src_.substr(p, e - p));
        p = e;
      } else if (c == '\'' || c == '"') {
        XI_ASSIGN_OR_RETURN(p, LexString(p));
      } else {
        static constexpr std::string_view kTwo[] = {"//", "**", "==", "!=", ">=", "<="};
        std::string op;
        for (std::string_view two : kTwo) {
          if (StartsWith(p, two)) op = std::string(two);
        }
        if (op.empty()) {
          if (std::string_view("+-/*%~[](){}><=.:|,;").find(c) == std::string_view::npos) {
            return Error(p, "unexpected char " + PyStrRepr(src_.substr(p, q - p)));
          }
          op = std::string(1, c);
        }
        if (c == '(' || c == '[' || c == '{') {
          balance.push_back(c == '(' ? ')' : (c == '[' ? ']' : '}'));
        } else if (c == ')' || c == ']' || c == '}') {
          if (balance.empty()) return Error(p, fmt::format("unexpected '{}'", c));
          if (balance.back() != c) {
            return Error(p, fmt::format("unexpected '{}', expected '{}'", c, balance.back()));
          }
          balance.pop_back();
        }
        Emit(Tok::kOp, p, op);
        p += op.size();
      }
    }
  }

  StatusOr<size_t> LexNumber(size_t p) {
    const size_t n = src_.size();
    auto digits = [&](size_t q) {  // (\d+_)*\d+ ; returns end or q when no match
      size_t e = q;
      while (e < n && IsDigit(src_[e])) {
        while (e < n && IsDigit(src_[e])) ++e;
        if (e + 1 < n && src_[e] == '_' && IsDigit(src_[e + 1])) ++e;
      }
      return e;
    };
    const bool after_dot = p > 0 && src_[p - 1] == '.';
    size_t e = digits(p);
    size_t float_end = 0;
    if (!after_dot) {
      size_t f = e;
      bool frac = false;
      if (f + 1 < n && src_[f] == '.' && IsDigit(src_[f + 1])) {
        f = digits(f + 1);
        frac = true;
      }
      size_t x = f;
      if (x < n && (src_[x] == 'e' || src_[x] == 'E')) {
        ++x;
        if (x < n && (src_[x] == '+' || src_[x] == '-')) ++x;
        if (x < n && IsDigit(src_[x])) {
          f = digits(x);
          frac = true;
        }
      }
      if (frac) float_end = f;
    }
    std::string clean;
    if (float_end > 0) {
      for (size_t i = p; i < float_end; ++i) {
        if (src_[i] != '_') clean.push_back(src_[i]);
      }
      Token& t = Emit(Tok::kFloat, p, clean);
      t.fval = std::strtod(clean.c_str(), nullptr);
      return float_end;
    }
    int base = 10;
    size_t q = p;
    if (src_[p] == '0' && p + 1 < n) {
      const char b = static_cast<char>(src_[p + 1] | 0x20);
      if (b == 'x' || b == 'o' || b == 'b') {
        base = b == 'x' ? 16 : (b == 'o' ? 8 : 2);
        q = p + 2;
      }
    }
    uint64_t value = 0;
    size_t i = q;
    bool any = false;
    for (; i < n; ++i) {
      const char c = src_[i];
      if (c == '_' && i + 1 < n && HexDigitValue(src_[i + 1]) >= 0 &&
          HexDigitValue(src_[i + 1]) < base) {
        continue;
      }
      const int d = HexDigitValue(c);
      if (d < 0 || d >= base) break;
      if (base == 10 && src_[p] == '0' && d != 0) break;  // "0(_?0)*" only
      any = true;
      if (value > (static_cast<uint64_t>(INT64_MAX) - static_cast<uint64_t>(d)) / base) {
        return Error(p, "integer literal is too large");
      }
      value = value * base + static_cast<uint64_t>(d);
    }
    if (base != 10 && !any) return Error(p, "invalid integer literal");
    Token& t = Emit(Tok::kInt, p, src_.substr(p, i - p));
    t.ival = static_cast<int64_t>(value);
    return i;
  }

  StatusOr<size_t> LexString(size_t p) {
    const char quote = src_[p];
    std::string out;
    size_t i = p + 1;
    const size_t n = src_.size();
    while (true) {
      if (i >= n) return Error(p, "unterminated string literal");
      const char c = src_[i];
      if (c == quote) break;
      if (c != '\\') {
        out.push_back(c);
        ++i;
        continue;
      }
      if (i + 1 >= n) return Error(p, "unterminated string literal");
      const char e = src_[i + 1];
      i += 2;
      switch (e) {
        case '\n':
          break;  // line continuation
        case '\\':
          out.push_back('\\');
          break;
        case '\'':
          out.push_back('\'');
          break;
        case '"':
          out.push_back('"');
          break;
        case 'a':
          out.push_back('\a');
          break;
        case 'b':
          out.push_back('\b');
          break;
        case 'f':
          out.push_back('\f');
          break;
        case 'n':
          out.push_back('\n');
          break;
        case 'r':
          out.push_back('\r');
          break;
        case 't':
          out.push_back('\t');
          break;
        case 'v':
          out.push_back('\v');
          break;
        case 'x':
        case 'u':
        case 'U': {
          const int len = e == 'x' ? 2 : (e == 'u' ? 4 : 8);
          uint32_t cp = 0;
          for (int k = 0; k < len; ++k) {
            const int d = i + k < n ? HexDigitValue(src_[i + k]) : -1;
            if (d < 0) return Error(i - 2, fmt::format("truncated \\{} escape in string", e));
            cp = cp * 16 + static_cast<uint32_t>(d);
          }
          if (cp > 0x10FFFF) return Error(i - 2, "illegal Unicode character in string");
          i += len;
          AppendUtf8(cp, &out);
          break;
        }
        default:
          if (e >= '0' && e <= '7') {
            uint32_t cp = static_cast<uint32_t>(e - '0');
            for (int k = 0; k < 2 && i < n && src_[i] >= '0' && src_[i] <= '7'; ++k, ++i) {
              cp = cp * 8 + static_cast<uint32_t>(src_[i] - '0');
            }
            AppendUtf8(cp, &out);
          } else {
            out.push_back('\\');  // unknown escapes stay as written, like Python
            out.push_back(e);
          }
      }
    }
    Emit(Tok::kString, p, std::move(out));
    return i + 1;
  }

  void SetPos(Token* t, size_t pos) const {
    t->pos = pos;
    t->line = map_.Line(pos);
  }

  Token& Emit(Tok type, size_t pos, std::string text) {
    Token t;
    t.type = type;
    t.text = std::move(text);
    SetPos(&t, pos);
    toks_.push_back(std::move(t));
    return toks_.back();
  }

  Status Error(size_t pos, const std::string& msg) const {
    return InvalidArgument("{}: {}", map_.Where(pos), msg);
  }

  std::string src_;
  SourceMap map_;
  std::vector<Token> toks_;
};

}  // namespace

SourceMap::SourceMap(std::string source) : src_(std::move(source)) {
  line_starts_.push_back(0);
  for (size_t i = 0; i < src_.size(); ++i) {
    if (src_[i] == '\n') line_starts_.push_back(i + 1);
  }
}

int SourceMap::Line(size_t pos) const {
  const auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), pos);
  return static_cast<int>(it - line_starts_.begin());
}

std::string SourceMap::Where(size_t pos) const {
  pos = std::min(pos, src_.size());
  const int line = Line(pos);
  const size_t start = line_starts_[static_cast<size_t>(line - 1)];
  const size_t col = 1 + CodePointCount(std::string_view(src_).substr(start, pos - start));
  return fmt::format("line {}, column {}", line, col);
}

StatusOr<LexResult> Lex(std::string_view source) { return Lexer(source).Run(); }

}  // namespace xinfer::jinja
