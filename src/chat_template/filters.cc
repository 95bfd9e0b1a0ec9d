// Jinja2's built-in filters, plus Hugging Face's tojson (json.dumps with ensure_ascii=False).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <unordered_map>

#include "chat_template/builtins.h"
#include "chat_template/evaluator.h"
#include "chat_template/pystr.h"

namespace xinfer::jinja {
namespace {

StatusOr<std::string> ToStr(Renderer& r, const Value& v) {
  if (v.is_string()) return v.str();
  std::string s;
  XI_RETURN_IF_ERROR(AppendStr(v, &s, r.limits().max_output_bytes));
  return s;
}

StatusOr<std::vector<Value>> Items(Renderer& r, const Value& v) {
  XI_ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(v, r.limits().max_list_items));
  XI_RETURN_IF_ERROR(r.budget()->Charge(static_cast<int64_t>(items.size())));
  return items;
}

// Jinja2's make_attrgetter: "a.b.0" looks up item-then-attribute at each step.
StatusOr<Value> AttrPath(const Value& item, const std::string& path) {
  Value v = item;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string part =
        path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    Value key = Value::Str(part);
    if (!part.empty() && part.size() < 18 &&
        std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      key = Value::Int(std::stoll(part));
    }
    XI_ASSIGN_OR_RETURN(v, GetItem(v, key));
    if (dot == std::string::npos) return v;
    start = dot + 1;
  }
}

StatusOr<Value> ListOf(Renderer& r, std::vector<Value> items) {
  XI_RETURN_IF_ERROR(r.budget()->Charge(static_cast<int64_t>(items.size())));
  return Value::List(std::move(items));
}

// ---- filters ----

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

StatusOr<Value> FLength(Renderer&, const Value& in, CallArgs&) {
  XI_ASSIGN_OR_RETURN(int64_t n, Length(in));
  return Value::Int(n);
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

StatusOr<Value> FItems(Renderer& r, const Value& in, CallArgs&) {
  if (in.is_undefined()) return Value::List({});
  if (!in.is_dict()) return InvalidArgument("Can only get item pairs from a mapping.");
  std::vector<Value> items;
  for (const auto& [k, v] : in.dict().entries)
    items.push_back(Value::List({Value::Str(k), v}, true));
  return ListOf(r, std::move(items));
}

StatusOr<Value> FList(Renderer& r, const Value& in, CallArgs&) {
  XI_ASSIGN_OR_RETURN(std::vector<Value> items, Items(r, in));
  return Value::List(std::move(items));
}

StatusOr<Value> FFirstLast(Renderer& r, const Value& in, bool first) {
  XI_ASSIGN_OR_RETURN(std::vector<Value> items, Items(r, in));
  if (items.empty()) {
    return Value::Undefined(first ? "No first item, sequence was empty."
                                  : "No last item, sequence was empty.");
  }
  return first ? items.front() : items.back();
}

StatusOr<Value> FJoin(Renderer& r, const Value& in, CallArgs& a) {
  XI_RETURN_IF_ERROR(CheckArgs(a, "join", 2, {"d", "attribute"}));
  XI_ASSIGN_OR_RETURN(std::string sep, ToStr(r, Arg(a, 0, "d", Value::Str(""))));
  const Value attribute = Arg(a, 1, "attribute", Value::None());
  XI_ASSIGN_OR_RETURN(std::vector<Value> items, Items(r, in));
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    Value item = items[i];
    if (!attribute.is_none()) {
      XI_ASSIGN_OR_RETURN(std::string path, ToStr(r, attribute));
      XI_ASSIGN_OR_RETURN(item, AttrPath(item, path));
    }
    if (i > 0) out += sep;
    XI_RETURN_IF_ERROR(AppendStr(item, &out, r.limits().max_output_bytes));
  }
  return r.NewString(std::move(out));
}

StatusOr<Value> FDefault(Renderer&, const Value& in, CallArgs& a) {
  XI_RETURN_IF_ERROR(CheckArgs(a, "default", 2, {"default_value", "boolean"}));
  const Value def = Arg(a, 0, "default_value", Value::Str(""));
  const bool boolean = Arg(a, 1, "boolean", Value::Bool(false)).Truthy();
  if (in.is_undefined() || (boolean && !in.Truthy())) return def;
  return in;
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

StatusOr<Value> FReplace(Renderer& r, const Value& in, CallArgs& a) {
  XI_RETURN_IF_ERROR(CheckArgs(a, "replace", 3, {"old", "new", "count"}));
  XI_ASSIGN_OR_RETURN(std::string s, ToStr(r, in));
  XI_ASSIGN_OR_RETURN(std::string old, ToStr(r, Arg(a, 0, "old")));
  XI_ASSIGN_OR_RETURN(std::string rep, ToStr(r, Arg(a, 1, "new")));
  const Value count = Arg(a, 2, "count", Value::None());
  XI_RETURN_IF_ERROR(r.CheckNewString(s.size() + rep.size() * (s.size() + 1)));
  return r.NewString(PyReplace(s, old, rep, count.is_integral() ? count.as_int() : -1));
}

StatusOr<Value> FSafe(Renderer&, const Value& in, CallArgs&) { return in; }

StatusOr<Value> SelectImpl(Renderer& r, const Value& in, CallArgs& a, bool by_attr, bool keep) {
  if (!in.Truthy()) return Value::List({});  // Jinja2 checks `if seq:` before iterating
  XI_ASSIGN_OR_RETURN(std::vector<Value> items, Items(r, in));
  size_t next = 0;
  std::string attr;
  if (by_attr) {
    if (a.pos.empty()) return InvalidArgument("selectattr/rejectattr need an attribute name");
    XI_ASSIGN_OR_RETURN(attr, ToStr(r, a.pos[next++]));
  }
  TestFn test = nullptr;
  if (next < a.pos.size()) {
    if (!a.pos[next].is_string()) return InvalidArgument("test name must be a string");
    test = FindTest(a.pos[next].str());
    if (test == nullptr) return InvalidArgument("no test named '{}'", a.pos[next].str());
    ++next;
  }
  CallArgs test_args;
  test_args.pos.assign(a.pos.begin() + static_cast<std::ptrdiff_t>(next), a.pos.end());
  test_args.kw = a.kw;
  std::vector<Value> out;
  for (const Value& item : items) {
    Value v = item;
    if (by_attr) {
      XI_ASSIGN_OR_RETURN(v, AttrPath(item, attr));
    }
    bool pass;
    if (test != nullptr) {
      CallArgs call = test_args;
      XI_ASSIGN_OR_RETURN(pass, test(r, v, call));
    } else {
      pass = v.Truthy();
    }
    if (pass == keep) out.push_back(item);
  }
  return Value::List(std::move(out));
}

StatusOr<Value> FMap(Renderer& r, const Value& in, CallArgs& a) {
  if (!in.Truthy()) return Value::List({});  // Jinja2 checks `if value:` before iterating
  XI_ASSIGN_OR_RETURN(std::vector<Value> items, Items(r, in));
  std::vector<Value> out;
  out.reserve(items.size());
  if (a.pos.empty()) {
    const Value attribute = Arg(a, 99, "attribute");
    if (!attribute.is_string()) return InvalidArgument("map needs a filter name or attribute=");
    const Value def = Arg(a, 99, "default");
    for (const Value& item : items) {
      XI_ASSIGN_OR_RETURN(Value v, AttrPath(item, attribute.str()));
      if (v.is_undefined() && !def.is_undefined()) v = def;
      out.push_back(std::move(v));
    }
    return Value::List(std::move(out));
  }
  if (!a.pos[0].is_string()) return InvalidArgument("map filter name must be a string");
  const FilterFn f = FindFilter(a.pos[0].str());
  if (f == nullptr) return InvalidArgument("no filter named '{}'", a.pos[0].str());
  CallArgs rest;
  rest.pos.assign(a.pos.begin() + 1, a.pos.end());
  rest.kw = a.kw;
  for (const Value& item : items) {
    CallArgs call = rest;
    XI_ASSIGN_OR_RETURN(Value v, f(r, item, call));
    out.push_back(std::move(v));
  }
  return Value::List(std::move(out));
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

// Sort key handling shared by sort/unique/min/max/dictsort: optional attribute and
// case-insensitive string comparison.
StatusOr<Value> SortKey(const Value& item, const std::string& attr, bool case_sensitive) {
  Value v = item;
  if (!attr.empty()) {
    XI_ASSIGN_OR_RETURN(v, AttrPath(item, attr));
  }
  if (!case_sensitive && v.is_string()) return Value::Str(PyLower(v.str()));
  return v;
}

StatusOr<std::vector<Value>> SortedItems(Renderer& r, std::vector<Value> items,
                                         const std::vector<Value>& keys, bool reverse) {
  std::vector<size_t> order(items.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  Status error;
  // stable_sort tolerates a comparator that stops being consistent after an error.
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    if (!error.ok()) return false;
    auto c = Compare(keys[x], keys[y], r.budget());
    if (!c.ok()) {
      error = c.status();
      return false;
    }
    return reverse ? *c > 0 : *c < 0;
  });
  XI_RETURN_IF_ERROR(error);
  std::vector<Value> out;
  out.reserve(items.size());
  for (size_t i : order) out.push_back(items[i]);
  return out;
}

StatusOr<Value> FSort(Renderer& r, const Value& in, CallArgs& a) {
  XI_RETURN_IF_ERROR(CheckArgs(a, "sort", 3, {"reverse", "case_sensitive", "attribute"}));
  const bool reverse = Arg(a, 0, "reverse", Value::Bool(false)).Truthy();
  const bool cs = Arg(a, 1, "case_sensitive", Value::Bool(false)).Truthy();
  const Value attr = Arg(a, 2, "attribute", Value::None());
  XI_ASSIGN_OR_RETURN(std::vector<Value> items, Items(r, in));
  std::vector<Value> keys;
  for (const Value& item : items) {
    XI_ASSIGN_OR_RETURN(Value k, SortKey(item, attr.is_string() ? attr.str() : "", cs));
    keys.push_back(std::move(k));
  }
  XI_ASSIGN_OR_RETURN(std::vector<Value> sorted, SortedItems(r, std::move(items), keys, reverse));
  return Value::List(std::move(sorted));
}

StatusOr<Value> FDictSort(Renderer& r, const Value& in, CallArgs& a) {
  XI_RETURN_IF_ERROR(CheckArgs(a, "dictsort", 3, {"case_sensitive", "by", "reverse"}));
  const bool cs = Arg(a, 0, "case_sensitive", Value::Bool(false)).Truthy();
  const Value by = Arg(a, 1, "by", Value::Str("key"));
  const bool reverse = Arg(a, 2, "reverse", Value::Bool(false)).Truthy();
  if (!in.is_dict()) return InvalidArgument("dictsort needs a mapping");
  const size_t pos = by.is_string() && by.str() == "value" ? 1 : 0;
  std::vector<Value> items, keys;
  for (const auto& [k, v] : in.dict().entries) {
    items.push_back(Value::List({Value::Str(k), v}, true));
    XI_ASSIGN_OR_RETURN(Value key, SortKey(pos == 0 ? Value::Str(k) : v, "", cs));
    keys.push_back(std::move(key));
  }
  XI_ASSIGN_OR_RETURN(std::vector<Value> sorted, SortedItems(r, std::move(items), keys, reverse));
  return Value::List(std::move(sorted));
}

StatusOr<Value> FUnique(Renderer& r, const Value& in, CallArgs& a) {
  const bool cs = Arg(a, 0, "case_sensitive", Value::Bool(false)).Truthy();
  const Value attr = Arg(a, 1, "attribute", Value::None());
  XI_ASSIGN_OR_RETURN(std::vector<Value> items, Items(r, in));
  std::vector<Value> out, seen;
  for (const Value& item : items) {
    XI_ASSIGN_OR_RETURN(Value key, SortKey(item, attr.is_string() ? attr.str() : "", cs));
    bool dup = false;
    for (const Value& s : seen) {
      XI_ASSIGN_OR_RETURN(dup, Equals(s, key, r.budget()));
      if (dup) break;
    }
    if (!dup) {
      seen.push_back(key);
      out.push_back(item);
    }
  }
  return Value::List(std::move(out));
}

StatusOr<Value> FMinMax(Renderer& r, const Value& in, CallArgs& a, bool want_max) {
  const bool cs = Arg(a, 0, "case_sensitive", Value::Bool(false)).Truthy();
  const Value attr = Arg(a, 1, "attribute", Value::None());
  XI_ASSIGN_OR_RETURN(std::vector<Value> items, Items(r, in));
  if (items.empty()) return Value::Undefined("No aggregated item, sequence was empty.");
  size_t best = 0;
  XI_ASSIGN_OR_RETURN(Value best_key, SortKey(items[0], attr.is_string() ? attr.str() : "", cs));
  for (size_t i = 1; i < items.size(); ++i) {
    XI_ASSIGN_OR_RETURN(Value key, SortKey(items[i], attr.is_string() ? attr.str() : "", cs));
    XI_ASSIGN_OR_RETURN(int c, Compare(key, best_key, r.budget()));
    if (want_max ? c > 0 : c < 0) {
      best = i;
      best_key = key;
    }
  }
  return items[best];
}

StatusOr<Value> FSum(Renderer& r, const Value& in, CallArgs& a) {
  const Value attr = Arg(a, 0, "attribute", Value::None());
  Value total = Arg(a, 1, "start", Value::Int(0));
  XI_ASSIGN_OR_RETURN(std::vector<Value> items, Items(r, in));
  for (const Value& item : items) {
    Value v = item;
    if (attr.is_string()) {
      XI_ASSIGN_OR_RETURN(v, AttrPath(item, attr.str()));
    }
    if (!v.is_number() || !total.is_number()) {
      return InvalidArgument("unsupported operand type(s) for +: '{}' and '{}'", total.TypeName(),
                             v.TypeName());
    }
    if (total.is_integral() && v.is_integral()) {
      int64_t s;
      if (__builtin_add_overflow(total.as_int(), v.as_int(), &s))
        return InvalidArgument("integer overflow");
      total = Value::Int(s);
    } else {
      total = Value::Float(total.as_double() + v.as_double());
    }
  }
  return total;
}

StatusOr<Value> FReverse(Renderer& r, const Value& in, CallArgs&) {
  if (in.is_string()) return Slice(in, Value(), Value(), Value::Int(-1));
  XI_ASSIGN_OR_RETURN(std::vector<Value> items, Items(r, in));
  std::reverse(items.begin(), items.end());
  return Value::List(std::move(items));
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

StatusOr<Value> FAttr(Renderer& r, const Value& in, CallArgs& a) {
  XI_ASSIGN_OR_RETURN(std::string name, ToStr(r, Arg(a, 0, "name")));
  if (in.is_dict() && in.dict().Find(name) != nullptr) {
    return Value::Undefined(fmt::format("'dict object' has no attribute '{}'", name));
  }
  return GetAttr(in, name);
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

std::string Capitalize(std::string_view s) { return PyCapitalize(s); }
std::string Upper(std::string_view s) { return PyUpper(s); }
std::string Lower(std::string_view s) { return PyLower(s); }

const std::unordered_map<std::string, FilterFn>& Filters() {
  static const auto* filters = new std::unordered_map<std::string, FilterFn>{
      {"tojson", FTojson},
      {"length", FLength},
      {"count", FLength},
      {"string", FString},
      {"trim", FTrim},
      {"items", FItems},
      {"list", FList},
      {"first", [](Renderer& r, const Value& in, CallArgs&) { return FFirstLast(r, in, true); }},
      {"last", [](Renderer& r, const Value& in, CallArgs&) { return FFirstLast(r, in, false); }},
      {"join", FJoin},
      {"default", FDefault},
      {"d", FDefault},
      {"upper", FStrMap<Upper>},
      {"lower", FStrMap<Lower>},
      {"capitalize", FStrMap<Capitalize>},
      {"title", FStrMap<JinjaTitle>},
      {"replace", FReplace},
      {"safe", FSafe},
      {"selectattr",
       [](Renderer& r, const Value& in, CallArgs& a) { return SelectImpl(r, in, a, true, true); }},
      {"rejectattr",
       [](Renderer& r, const Value& in, CallArgs& a) { return SelectImpl(r, in, a, true, false); }},
      {"select",
       [](Renderer& r, const Value& in, CallArgs& a) { return SelectImpl(r, in, a, false, true); }},
      {"reject", [](Renderer& r, const Value& in,
                    CallArgs& a) { return SelectImpl(r, in, a, false, false); }},
      {"map", FMap},
      {"int", FInt},
      {"float", FFloat},
      {"abs", FAbs},
      {"round", FRound},
      {"unique", FUnique},
      {"indent", FIndent},
      {"dictsort", FDictSort},
      {"sort", FSort},
      {"reverse", FReverse},
      {"min", [](Renderer& r, const Value& in, CallArgs& a) { return FMinMax(r, in, a, false); }},
      {"max", [](Renderer& r, const Value& in, CallArgs& a) { return FMinMax(r, in, a, true); }},
      {"sum", FSum},
      {"e", FEscape},
      {"escape", FEscape},
      {"attr", FAttr},
      {"format", FFormat},
  };
  return *filters;
}

}  // namespace

FilterFn FindFilter(std::string_view name) {
  const auto& f = Filters();
  auto it = f.find(std::string(name));
  return it == f.end() ? nullptr : it->second;
}

}  // namespace xinfer::jinja
