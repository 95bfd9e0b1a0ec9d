#include "chat_template/pystr.h"

#include <utf8proc.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace xinfer::jinja {

uint32_t DecodeUtf8(std::string_view s, size_t* pos) {
  const Utf8Char c = DecodeUtf8Char(s, *pos);
  if (c.valid) {
    *pos += c.size;
    return static_cast<uint32_t>(c.cp);
  }
  return static_cast<unsigned char>(s[(*pos)++]);
}

std::vector<size_t> CodePointOffsets(std::string_view s) {
  std::vector<size_t> offsets;
  offsets.reserve(s.size() + 1);
  size_t pos = 0;
  while (pos < s.size()) {
    offsets.push_back(pos);
    DecodeUtf8(s, &pos);
  }
  offsets.push_back(s.size());
  return offsets;
}

size_t CodePointCount(std::string_view s) {
  size_t n = 0, pos = 0;
  while (pos < s.size()) {
    DecodeUtf8(s, &pos);
    ++n;
  }
  return n;
}

bool IsPyWhitespace(uint32_t cp) {
  return (cp >= 0x1C && cp <= 0x1F) || IsUnicodeWhitespace(static_cast<char32_t>(cp));
}

namespace {

std::vector<uint32_t> ToCodePoints(std::string_view s) {
  std::vector<uint32_t> cps;
  size_t pos = 0;
  while (pos < s.size()) cps.push_back(DecodeUtf8(s, &pos));
  return cps;
}

}  // namespace

std::string PyStrip(std::string_view s, const std::string* chars, bool left, bool right) {
  std::vector<uint32_t> set;
  if (chars != nullptr) set = ToCodePoints(*chars);
  auto strip_it = [&](uint32_t cp) {
    if (chars == nullptr) return IsPyWhitespace(cp);
    for (uint32_t c : set) {
      if (c == cp) return true;
    }
    return false;
  };
  const std::vector<size_t> off = CodePointOffsets(s);
  size_t begin = 0, end = off.size() - 1;  // code point indices
  auto cp_at = [&](size_t i) {
    size_t p = off[i];
    return DecodeUtf8(s, &p);
  };
  if (left) {
    while (begin < end && strip_it(cp_at(begin))) ++begin;
  }
  if (right) {
    while (end > begin && strip_it(cp_at(end - 1))) --end;
  }
  return std::string(s.substr(off[begin], off[end] - off[begin]));
}

std::vector<std::string> PySplit(std::string_view s, const std::string* sep, int64_t maxsplit,
                                 bool from_right) {
  std::vector<std::string> parts;
  if (sep != nullptr) {
    if (!from_right) {
      size_t start = 0;
      while (maxsplit < 0 || static_cast<int64_t>(parts.size()) < maxsplit) {
        const size_t hit = s.find(*sep, start);
        if (hit == std::string_view::npos) break;
        parts.emplace_back(s.substr(start, hit - start));
        start = hit + sep->size();
      }
      parts.emplace_back(s.substr(start));
    } else {
      size_t end = s.size();
      while (maxsplit < 0 || static_cast<int64_t>(parts.size()) < maxsplit) {
        if (end < sep->size()) break;
        const size_t hit = s.rfind(*sep, end - sep->size());
        if (hit == std::string_view::npos) break;
        parts.emplace_back(s.substr(hit + sep->size(), end - hit - sep->size()));
        end = hit;
      }
      parts.emplace_back(s.substr(0, end));
      std::reverse(parts.begin(), parts.end());
    }
    return parts;
  }
  // Whitespace splitting: runs of whitespace separate, leading/trailing runs vanish.
  const std::vector<size_t> off = CodePointOffsets(s);
  const size_t n = off.size() - 1;
  auto is_ws = [&](size_t i) {
    size_t p = off[i];
    return IsPyWhitespace(DecodeUtf8(s, &p));
  };
  if (!from_right) {
    size_t i = 0;
    while (true) {
      while (i < n && is_ws(i)) ++i;
      if (i == n) break;
      if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) >= maxsplit) {
        parts.emplace_back(s.substr(off[i]));
        break;
      }
      size_t j = i;
      while (j < n && !is_ws(j)) ++j;
      parts.emplace_back(s.substr(off[i], off[j] - off[i]));
      i = j;
    }
  } else {
    size_t i = n;
    while (true) {
      while (i > 0 && is_ws(i - 1)) --i;
      if (i == 0) break;
      if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) >= maxsplit) {
        parts.emplace_back(s.substr(0, off[i]));
        break;
      }
      size_t j = i;
      while (j > 0 && !is_ws(j - 1)) --j;
      parts.emplace_back(s.substr(off[j], off[i] - off[j]));
      i = j;
    }
    std::reverse(parts.begin(), parts.end());
  }
  return parts;
}

std::vector<std::string> PySplitLines(std::string_view s) {
  std::vector<std::string> lines;
  size_t start = 0, pos = 0;
  while (pos < s.size()) {
    const size_t cp_start = pos;
    const uint32_t cp = DecodeUtf8(s, &pos);
    const bool brk = cp == '\n' || cp == '\r' || cp == 0x0B || cp == 0x0C || cp == 0x1C ||
                     cp == 0x1D || cp == 0x1E || cp == 0x85 || cp == 0x2028 || cp == 0x2029;
    if (!brk) continue;
    lines.emplace_back(s.substr(start, cp_start - start));
    if (cp == '\r' && pos < s.size() && s[pos] == '\n') ++pos;
    start = pos;
  }
  if (start < s.size()) lines.emplace_back(s.substr(start));
  return lines;
}

std::string PyReplace(std::string_view s, std::string_view old, std::string_view repl,
                      int64_t count) {
  std::string out;
  int64_t done = 0;
  if (old.empty()) {
    // Python inserts `repl` before every code point and at the end.
    size_t pos = 0;
    while (pos < s.size()) {
      if (count < 0 || done < count) {
        out.append(repl);
        ++done;
      }
      const size_t start = pos;
      DecodeUtf8(s, &pos);
      out.append(s.substr(start, pos - start));
    }
    if (count < 0 || done < count) out.append(repl);
    return out;
  }
  size_t start = 0;
  while (count < 0 || done < count) {
    const size_t hit = s.find(old, start);
    if (hit == std::string_view::npos) break;
    out.append(s.substr(start, hit - start));
    out.append(repl);
    start = hit + old.size();
    ++done;
  }
  out.append(s.substr(start));
  return out;
}

namespace {

enum class CaseOp { kUpper, kLower, kTitle };

uint32_t MapCase(uint32_t cp, CaseOp op) {
  if (cp > 0x10FFFF) return cp;
  const auto c = static_cast<utf8proc_int32_t>(cp);
  switch (op) {
    case CaseOp::kUpper:
      return static_cast<uint32_t>(utf8proc_toupper(c));
    case CaseOp::kLower:
      return static_cast<uint32_t>(utf8proc_tolower(c));
    case CaseOp::kTitle:
      return static_cast<uint32_t>(utf8proc_totitle(c));
  }
  return cp;
}

bool IsCased(uint32_t cp) {
  if (cp > 0x10FFFF) return false;
  const auto cat = utf8proc_category(static_cast<utf8proc_int32_t>(cp));
  return cat == UTF8PROC_CATEGORY_LU || cat == UTF8PROC_CATEGORY_LL || cat == UTF8PROC_CATEGORY_LT;
}

// Maps every code point; `op_for(index, cp)` picks the mapping of each.
template <typename F>
std::string MapString(std::string_view s, F op_for) {
  std::string out;
  out.reserve(s.size());
  size_t pos = 0, index = 0;
  while (pos < s.size()) {
    const size_t start = pos;
    const uint32_t cp = DecodeUtf8(s, &pos);
    const bool valid = pos - start > 1 || cp < 0x80;
    if (!valid) {
      out.append(s.substr(start, pos - start));  // keep stray bytes as they are
    } else {
      AppendUtf8(MapCase(cp, op_for(index, cp)), &out);
    }
    ++index;
  }
  return out;
}

}  // namespace

std::string PyUpper(std::string_view s) {
  return MapString(s, [](size_t, uint32_t) { return CaseOp::kUpper; });
}

std::string PyLower(std::string_view s) {
  return MapString(s, [](size_t, uint32_t) { return CaseOp::kLower; });
}

std::string PyCapitalize(std::string_view s) {
  return MapString(s, [](size_t i, uint32_t) { return i == 0 ? CaseOp::kTitle : CaseOp::kLower; });
}

std::string PyTitleMethod(std::string_view s) {
  bool prev_cased = false;
  return MapString(s, [&](size_t, uint32_t cp) {
    const CaseOp op = prev_cased ? CaseOp::kLower : CaseOp::kTitle;
    prev_cased = IsCased(cp);
    return op;
  });
}

std::string PyFloatRepr(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  // sci looks like "-1.2345e+05": split sign, digits, exponent.
  std::string sign;
  size_t i = 0;
  if (sci[0] == '-') {
    sign = "-";
    i = 1;
  }
  const size_t e = sci.find('e');
  std::string digits;
  for (size_t k = i; k < e; ++k) {
    if (sci[k] != '.') digits.push_back(sci[k]);
  }
  const int exp10 = std::stoi(sci.substr(e + 1));
  const int decpt = exp10 + 1;  // value = 0.DIGITS * 10^decpt
  std::string out = sign;
  if (decpt > 16 || decpt <= -4) {
    out += digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char ebuf[16];
    std::snprintf(ebuf, sizeof(ebuf), "e%c%02d", exp10 < 0 ? '-' : '+', std::abs(exp10));
    out += ebuf;
  } else if (decpt <= 0) {
    out += "0." + std::string(static_cast<size_t>(-decpt), '0') + digits;
  } else if (static_cast<size_t>(decpt) >= digits.size()) {
    out += digits + std::string(decpt - digits.size(), '0') + ".0";
  } else {
    out += digits.substr(0, decpt) + "." + digits.substr(decpt);
  }
  return out;
}

namespace {

bool IsPyPrintable(uint32_t cp) {
  if (cp < 0x20 || cp == 0x7F) return false;
  if (cp >= 0x80 && cp <= 0xA0) return false;
  if (cp == 0xAD || cp == 0x1680 || cp == 0x180E || cp == 0x3000 || cp == 0xFEFF) return false;
  if (cp >= 0x2000 && cp <= 0x200F) return false;
  if (cp >= 0x2028 && cp <= 0x202F) return false;
  if (cp >= 0x205F && cp <= 0x206F) return false;
  if (cp >= 0xD800 && cp <= 0xDFFF) return false;
  if (cp >= 0xE000 && cp <= 0xF8FF) return false;
  return true;
}

}  // namespace

std::string PyStrRepr(std::string_view s) {
  const bool has_single = s.find('\'') != std::string_view::npos;
  const bool has_double = s.find('"') != std::string_view::npos;
  const char quote = (has_single && !has_double) ? '"' : '\'';
  std::string out(1, quote);
  size_t pos = 0;
  while (pos < s.size()) {
    const size_t start = pos;
    const uint32_t cp = DecodeUtf8(s, &pos);
    char buf[16];
    if (cp == '\\') {
      out += "\\\\";
    } else if (cp == static_cast<uint32_t>(quote)) {
      out += '\\';
      out += quote;
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (!IsPyPrintable(cp)) {
      if (cp < 0x100) {
        std::snprintf(buf, sizeof(buf), "\\x%02x", cp);
      } else if (cp < 0x10000) {
        std::snprintf(buf, sizeof(buf), "\\u%04x", cp);
      } else {
        std::snprintf(buf, sizeof(buf), "\\U%08x", cp);
      }
      out += buf;
    } else {
      out.append(s.substr(start, pos - start));
    }
  }
  out += quote;
  return out;
}

void AppendJsonString(std::string_view s, bool ensure_ascii, std::string* out) {
  out->push_back('"');
  size_t pos = 0;
  char buf[16];
  while (pos < s.size()) {
    const size_t start = pos;
    const uint32_t cp = DecodeUtf8(s, &pos);
    switch (cp) {
      case '"':
        *out += "\\\"";
        continue;
      case '\\':
        *out += "\\\\";
        continue;
      case '\n':
        *out += "\\n";
        continue;
      case '\r':
        *out += "\\r";
        continue;
      case '\t':
        *out += "\\t";
        continue;
      case '\b':
        *out += "\\b";
        continue;
      case '\f':
        *out += "\\f";
        continue;
      default:
        break;
    }
    if (cp < 0x20) {
      std::snprintf(buf, sizeof(buf), "\\u%04x", cp);
      *out += buf;
    } else if (ensure_ascii && cp >= 0x80) {
      if (cp >= 0x10000) {
        const uint32_t v = cp - 0x10000;
        std::snprintf(buf, sizeof(buf), "\\u%04x\\u%04x", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF));
      } else {
        std::snprintf(buf, sizeof(buf), "\\u%04x", cp);
      }
      *out += buf;
    } else {
      out->append(s.substr(start, pos - start));
    }
  }
  out->push_back('"');
}

}  // namespace xinfer::jinja
