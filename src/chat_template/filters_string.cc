// Jinja2's built-in filters on text and numbers, plus Hugging Face's tojson (json.dumps with
// ensure_ascii=False). Filters over sequences and mappings are in filters_collection.cc.
#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "chat_template/filters.h"
#include "chat_template/pystr.h"

namespace xinfer::jinja {

StatusOr<std::string> ToStr(Renderer& r, const Value& v) {
  if (v.is_string()) return v.str();
  std::string s;
  XI_RETURN_IF_ERROR(AppendStr(v, &s, r.limits().max_output_bytes));
  return s;
}

namespace {

StatusOr<Value> FTojson(Renderer& r, const Value& in, CallArgs& a) {
  XI_RETURN_IF_ERROR(
      CheckArgs(a, "tojson", 4, {"ensure_ascii", "indent", "separators", "sort_keys"}));
  JsonOptions o;
  o.ensure_ascii = Arg(a, 0, "ensure_ascii", Value::Bool(false)).Truthy();
  const Value indent = Arg(a, 1, "indent", Value::None());
  const Value seps = Arg(a, 2, "separators", Value::None());
  o.sort_keys = Arg(a, 3, "sort_keys", Value::Bool(false)).Truthy();
  if (indent.is_integral()) {
    o.has_indent = true;
    o.indent = std::string(static_cast<size_t>(std::clamp<int64_t>(indent.as_int(), 0, 64)), ' ');
  } else if (indent.is_string()) {
    o.has_indent = true;
    o.indent = indent.str();
  } else if (!indent.is_none() && !indent.is_undefined()) {
    return InvalidArgument("tojson indent must be an int or a string");
  }
  if (o.has_indent) o.item_sep.assign(1, ',');  // json.dumps drops the space when indenting
  if (seps.is_list()) {
    const auto& items = seps.list().items;
    if (items.size() != 2 || !items[0].is_string() || !items[1].is_string()) {
      return InvalidArgument("tojson separators must be a pair of strings");
    }
    o.item_sep = items[0].str();
    o.key_sep = items[1].str();
  }
  std::string out;
  XI_RETURN_IF_ERROR(AppendJson(in, o, &out, r.limits().max_output_bytes));
  return r.NewString(std::move(out));
}

StatusOr<Value> FString(Renderer& r, const Value& in, CallArgs&) {
  if (in.is_string()) return in;
  XI_ASSIGN_OR_RETURN(std::string s, ToStr(r, in));
  return r.NewString(std::move(s));
}

StatusOr<Value> FTrim(Renderer& r, const Value& in, CallArgs& a) {
  XI_ASSIGN_OR_RETURN(std::string s, ToStr(r, in));
  const Value chars = Arg(a, 0, "chars", Value::None());
  if (chars.is_string()) return Value::Str(PyStrip(s, &chars.str(), true, true));
  return Value::Str(PyStrip(s, nullptr, true, true));
}

template <std::string (*F)(std::string_view)>
StatusOr<Value> FStrMap(Renderer& r, const Value& in, CallArgs&) {
  XI_ASSIGN_OR_RETURN(std::string s, ToStr(r, in));
  return Value::Str(F(s));
}

std::string JinjaTitle(std::string_view s) {
  // Jinja2 splits words at runs of [-\s({[<] and capitalizes each piece.
  std::string out;
  bool word_start = true;
  size_t pos = 0;
  while (pos < s.size()) {
    const size_t start = pos;
    const uint32_t cp = DecodeUtf8(s, &pos);
    const bool sep =
        IsPyWhitespace(cp) || cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<';
    std::string ch(s.substr(start, pos - start));
    if (sep) {
      out += ch;
      word_start = true;
      continue;
    }
    out += word_start ? PyUpper(ch) : PyLower(ch);
    word_start = false;
  }
  return out;
}

std::string Capitalize(std::string_view s) { return PyCapitalize(s); }
std::string Upper(std::string_view s) { return PyUpper(s); }
std::string Lower(std::string_view s) { return PyLower(s); }

StatusOr<Value> FReplace(Renderer& r, const Value& in, CallArgs& a) {
  XI_RETURN_IF_ERROR(CheckArgs(a, "replace", 3, {"old", "new", "count"}));
  XI_ASSIGN_OR_RETURN(std::string s, ToStr(r, in));
  XI_ASSIGN_OR_RETURN(std::string old, ToStr(r, Arg(a, 0, "old")));
  XI_ASSIGN_OR_RETURN(std::string rep, ToStr(r, Arg(a, 1, "new")));
  const Value count = Arg(a, 2, "count", Value::None());
  XI_RETURN_IF_ERROR(r.CheckNewString(s.size() + rep.size() * (s.size() + 1)));
  return r.NewString(PyReplace(s, old, rep, count.is_integral() ? count.as_int() : -1));
}

StatusOr<Value> FIndent(Renderer& r, const Value& in, CallArgs& a) {
  XI_RETURN_IF_ERROR(CheckArgs(a, "indent", 3, {"width", "first", "blank"}));
  const Value width = Arg(a, 0, "width", Value::Int(4));
  const bool first = Arg(a, 1, "first", Value::Bool(false)).Truthy();
  const bool blank = Arg(a, 2, "blank", Value::Bool(false)).Truthy();
  std::string pad;
  if (width.is_string()) {
    pad = width.str();
  } else if (width.is_integral()) {
    pad.assign(static_cast<size_t>(std::clamp<int64_t>(width.as_int(), 0, 1024)), ' ');
  } else {
    return InvalidArgument("indent width must be an int or a string");
  }
  XI_ASSIGN_OR_RETURN(std::string s, ToStr(r, in));
  s += "\n";  // Jinja2 appends a newline so that splitlines keeps a trailing empty line
  const std::vector<std::string> lines = PySplitLines(s);
  XI_RETURN_IF_ERROR(r.CheckNewString(s.size() + (pad.size() + 1) * lines.size()));
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) {
      out += '\n';
      if (blank || !lines[i].empty()) out += pad;
    }
    out += lines[i];
  }
  if (first) out = pad + out;
  return r.NewString(std::move(out));
}

StatusOr<Value> FEscape(Renderer& r, const Value& in, CallArgs&) {
  XI_ASSIGN_OR_RETURN(std::string s, ToStr(r, in));
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return r.NewString(std::move(out));
}

StatusOr<Value> FFormat(Renderer& r, const Value& in, CallArgs& a) {
  XI_ASSIGN_OR_RETURN(std::string f, ToStr(r, in));
  Value arg;
  if (!a.kw.empty()) {
    auto d = std::make_shared<Dict>();
    for (auto& [k, v] : a.kw) d->Set(k, v);
    arg = Value::Dict(std::move(d));
  } else {
    arg = Value::List(a.pos, /*tuple=*/true);
  }
  XI_ASSIGN_OR_RETURN(std::string out, PercentFormat(f, arg, r.limits().max_output_bytes));
  return r.NewString(std::move(out));
}

bool ParsePyInt(std::string s, int64_t base, int64_t* out) {
  s = PyStrip(s, nullptr, true, true);
  s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
  if (s.empty() || base < 2 || base > 36) return false;
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, static_cast<int>(base));
  if (errno != 0 || end != s.c_str() + s.size()) return false;
  *out = v;
  return true;
}

bool ParsePyFloat(const std::string& text, double* out) {
  std::string s = PyStrip(text, nullptr, true, true);
  s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
  if (s.empty() || s.find_first_of("xXpP") != std::string::npos) return false;
  char* end = nullptr;
  *out = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size();
}

StatusOr<Value> FInt(Renderer&, const Value& in, CallArgs& a) {
  const Value def = Arg(a, 0, "default", Value::Int(0));
  const Value base = Arg(a, 1, "base", Value::Int(10));
  if (in.is_undefined()) return InvalidArgument("{}", in.undefined_message());
  if (in.is_integral()) return Value::Int(in.as_int());
  if (in.is_float()) {
    const double f = in.as_double();
    if (!std::isfinite(f) || std::fabs(f) >= 9.2e18) return def;
    return Value::Int(static_cast<int64_t>(f));
  }
  if (in.is_string()) {
    int64_t v;
    if (ParsePyInt(in.str(), base.is_integral() ? base.as_int() : 10, &v)) return Value::Int(v);
    double f;
    if (ParsePyFloat(in.str(), &f) && std::isfinite(f) && std::fabs(f) < 9.2e18) {
      return Value::Int(static_cast<int64_t>(f));
    }
  }
  return def;
}

StatusOr<Value> FFloat(Renderer&, const Value& in, CallArgs& a) {
  const Value def = Arg(a, 0, "default", Value::Float(0.0));
  if (in.is_undefined()) return InvalidArgument("{}", in.undefined_message());
  if (in.is_number()) return Value::Float(in.as_double());
  double f;
  if (in.is_string() && ParsePyFloat(in.str(), &f)) return Value::Float(f);
  return def;
}

StatusOr<Value> FAbs(Renderer&, const Value& in, CallArgs&) {
  if (in.is_float()) return Value::Float(std::fabs(in.as_double()));
  if (in.is_integral()) {
    if (in.as_int() == INT64_MIN) return InvalidArgument("integer overflow");
    return Value::Int(std::abs(in.as_int()));
  }
  return InvalidArgument("bad operand type for abs(): '{}'", in.TypeName());
}

StatusOr<Value> FRound(Renderer&, const Value& in, CallArgs& a) {
  XI_RETURN_IF_ERROR(CheckArgs(a, "round", 2, {"precision", "method"}));
  const Value prec_v = Arg(a, 0, "precision", Value::Int(0));
  const Value method = Arg(a, 1, "method", Value::Str("common"));
  if (!prec_v.is_integral() || !method.is_string())
    return InvalidArgument("invalid round() arguments");
  if (!in.is_number()) return InvalidArgument("round() needs a number, not '{}'", in.TypeName());
  const int64_t prec = std::clamp<int64_t>(prec_v.as_int(), -300, 300);
  const double x = in.as_double();
  const std::string& m = method.str();
  if (m == "common") {
    if (in.is_integral() && prec >= 0) return Value::Int(in.as_int());
    if (prec == 0) return Value::Float(std::nearbyint(x));
    if (prec > 0 && std::isfinite(x)) {
      char buf[512];
      std::snprintf(buf, sizeof(buf), "%.*f", static_cast<int>(std::min<int64_t>(prec, 100)), x);
      return Value::Float(std::strtod(buf, nullptr));
    }
    const double scale = std::pow(10.0, static_cast<double>(-prec));
    return Value::Float(std::nearbyint(x / scale) * scale);
  }
  if (m != "ceil" && m != "floor") return InvalidArgument("method must be common, ceil or floor");
  const double scale = std::pow(10.0, static_cast<double>(prec));
  return Value::Float((m == "ceil" ? std::ceil(x * scale) : std::floor(x * scale)) / scale);
}

StatusOr<Value> FDefault(Renderer&, const Value& in, CallArgs& a) {
  XI_RETURN_IF_ERROR(CheckArgs(a, "default", 2, {"default_value", "boolean"}));
  const Value def = Arg(a, 0, "default_value", Value::Str(""));
  const bool boolean = Arg(a, 1, "boolean", Value::Bool(false)).Truthy();
  if (in.is_undefined() || (boolean && !in.Truthy())) return def;
  return in;
}

StatusOr<Value> FSafe(Renderer&, const Value& in, CallArgs&) { return in; }

}  // namespace

void AddStringFilters(FilterTable* table) {
  table->insert({
      {"tojson", FTojson},
      {"string", FString},
      {"trim", FTrim},
      {"default", FDefault},
      {"d", FDefault},
      {"upper", FStrMap<Upper>},
      {"lower", FStrMap<Lower>},
      {"capitalize", FStrMap<Capitalize>},
      {"title", FStrMap<JinjaTitle>},
      {"replace", FReplace},
      {"safe", FSafe},
      {"int", FInt},
      {"float", FFloat},
      {"abs", FAbs},
      {"round", FRound},
      {"indent", FIndent},
      {"e", FEscape},
      {"escape", FEscape},
      {"format", FFormat},
  });
}

}  // namespace xinfer::jinja
