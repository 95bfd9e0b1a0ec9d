// Methods of str and dict values (`s.startswith(...)`, `d.items()`, ...) with Python's
// semantics. Only methods that do not mutate are offered, as in Hugging Face's immutable
// sandbox.
#include "chat_template/methods.h"

#include <algorithm>
#include <unordered_map>

#include "chat_template/builtins.h"
#include "chat_template/evaluator.h"
#include "chat_template/pystr.h"

namespace xinfer::jinja {
namespace {

StatusOr<std::string> StrArg(const Value& v, const char* what) {
  if (!v.is_string()) {
    return InvalidArgument("{} must be str, not {}", what, v.TypeName());
  }
  return v.str();
}

// ---- str methods ----

StatusOr<Value> StartsEnds(const Value& self, CallArgs& args, bool starts) {
  XI_RETURN_IF_ERROR(CheckArgs(args, starts ? "startswith" : "endswith", 1, {}));
  const Value what = Arg(args, 0, "");
  std::vector<Value> options;
  if (what.is_tuple()) {
    options = what.list().items;
  } else {
    options.push_back(what);
  }
  const std::string& s = self.str();
  for (const Value& o : options) {
    if (!o.is_string()) {
      return InvalidArgument("{} first arg must be str or a tuple of str, not {}",
                             starts ? "startswith" : "endswith", o.TypeName());
    }
    const std::string& p = o.str();
    if (p.size() <= s.size() && (starts ? s.compare(0, p.size(), p) == 0
                                        : s.compare(s.size() - p.size(), p.size(), p) == 0)) {
      return Value::Bool(true);
    }
  }
  return Value::Bool(false);
}

StatusOr<Value> SplitImpl(Renderer& r, const Value& self, CallArgs& args, bool right) {
  XI_RETURN_IF_ERROR(CheckArgs(args, "split", 2, {"sep", "maxsplit"}));
  const Value sep = Arg(args, 0, "sep");
  const Value maxsplit = Arg(args, 1, "maxsplit", Value::Int(-1));
  if (!maxsplit.is_integral()) return InvalidArgument("maxsplit must be an integer");
  std::vector<std::string> parts;
  if (sep.is_none() || sep.is_undefined()) {
    parts = PySplit(self.str(), nullptr, maxsplit.as_int(), right);
  } else {
    XI_ASSIGN_OR_RETURN(std::string s, StrArg(sep, "separator"));
    if (s.empty()) return InvalidArgument("empty separator");
    parts = PySplit(self.str(), &s, maxsplit.as_int(), right);
  }
  XI_RETURN_IF_ERROR(r.budget()->Charge(static_cast<int64_t>(parts.size())));
  if (parts.size() > r.limits().max_list_items) {
    return ResourceExhausted("list would exceed the limit of {} items", r.limits().max_list_items);
  }
  std::vector<Value> items;
  items.reserve(parts.size());
  for (auto& p : parts) items.push_back(Value::Str(std::move(p)));
  return Value::List(std::move(items));
}

StatusOr<Value> StripImpl(const Value& self, CallArgs& args, bool left, bool right) {
  XI_RETURN_IF_ERROR(CheckArgs(args, "strip", 1, {"chars"}));
  const Value chars = Arg(args, 0, "chars");
  if (chars.is_none() || chars.is_undefined())
    return Value::Str(PyStrip(self.str(), nullptr, left, right));
  XI_ASSIGN_OR_RETURN(std::string c, StrArg(chars, "strip arg"));
  return Value::Str(PyStrip(self.str(), &c, left, right));
}

StatusOr<Value> FindImpl(const Value& self, CallArgs& args, bool reverse, bool count) {
  XI_RETURN_IF_ERROR(CheckArgs(args, "find", 1, {}));
  XI_ASSIGN_OR_RETURN(std::string sub, StrArg(Arg(args, 0, ""), "substring"));
  const std::string& s = self.str();
  if (count) {
    if (sub.empty()) return Value::Int(static_cast<int64_t>(CodePointCount(s) + 1));
    int64_t n = 0;
    for (size_t p = s.find(sub); p != std::string::npos; p = s.find(sub, p + sub.size())) ++n;
    return Value::Int(n);
  }
  const size_t p = reverse ? s.rfind(sub) : s.find(sub);
  if (p == std::string::npos) return Value::Int(-1);
  return Value::Int(static_cast<int64_t>(CodePointCount(std::string_view(s).substr(0, p))));
}

// str.format with automatic/explicit positional fields, named fields and !r/!s conversions.
StatusOr<Value> FormatImpl(Renderer& r, const Value& self, CallArgs& args) {
  const std::string& f = self.str();
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < f.size(); ++i) {
    const char c = f[i];
    if (c == '}') {
      if (i + 1 < f.size() && f[i + 1] == '}')
        ++i;
      else
        return InvalidArgument("Single '}}' encountered in format string");
      out += '}';
      continue;
    }
    if (c != '{') {
      out += c;
      continue;
    }
    if (i + 1 < f.size() && f[i + 1] == '{') {
      out += '{';
      ++i;
      continue;
    }
    const size_t close = f.find('}', i);
    if (close == std::string::npos)
      return InvalidArgument("Single '{{' encountered in format string");
    std::string field = f.substr(i + 1, close - i - 1);
    i = close;
    char conv = 's';
    if (const size_t bang = field.find('!'); bang != std::string::npos) {
      conv = bang + 1 < field.size() ? field[bang + 1] : 's';
      field.resize(bang);
    }
    if (field.find(':') != std::string::npos) {
      return InvalidArgument("format specifications are not supported in str.format");
    }
    Value v;
    if (field.empty()) {
      if (auto_index >= args.pos.size()) {
        return InvalidArgument("Replacement index {} out of range for positional args tuple",
                               auto_index);
      }
      v = args.pos[auto_index++];
    } else if (std::all_of(field.begin(), field.end(),
                           [](char d) { return d >= '0' && d <= '9'; })) {
      const size_t idx = field.size() > 6 ? SIZE_MAX : std::stoul(field);
      if (idx >= args.pos.size()) {
        return InvalidArgument("Replacement index {} out of range for positional args tuple",
                               field);
      }
      v = args.pos[idx];
    } else {
      bool found = false;
      for (auto& [k, kv] : args.kw) {
        if (k == field) {
          v = kv;
          found = true;
        }
      }
      if (!found) return InvalidArgument("KeyError: {}", PyStrRepr(field));
    }
    XI_RETURN_IF_ERROR(conv == 'r' ? AppendRepr(v, &out, r.limits().max_output_bytes)
                                   : AppendStr(v, &out, r.limits().max_output_bytes));
  }
  return r.NewString(std::move(out));
}

StatusOr<Value> JoinMethod(Renderer& r, const Value& self, CallArgs& args) {
  XI_RETURN_IF_ERROR(CheckArgs(args, "join", 1, {}));
  XI_ASSIGN_OR_RETURN(std::vector<Value> items,
                      Iterate(Arg(args, 0, ""), r.limits().max_list_items));
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (!items[i].is_string()) {
      return InvalidArgument("sequence item {}: expected str instance, {} found", i,
                             items[i].TypeName());
    }
    if (i > 0) out += self.str();
    out += items[i].str();
    XI_RETURN_IF_ERROR(r.CheckNewString(out.size()));
  }
  return r.NewString(std::move(out));
}

StatusOr<Value> CharClass(const Value& self, int which) {
  const std::string& s = self.str();
  if (s.empty()) return Value::Bool(false);
  bool any_cased = false;
  for (unsigned char c : s) {
    const bool digit = c >= '0' && c <= '9';
    const bool lower = c >= 'a' && c <= 'z', upper = c >= 'A' && c <= 'Z';
    const bool space = c == ' ' || (c >= 9 && c <= 13);
    any_cased = any_cased || lower || upper;
    bool ok = true;
    switch (which) {
      case 0:
        ok = digit;
        break;
      case 1:
        ok = lower || upper || c >= 0x80;
        break;
      case 2:
        ok = lower || upper || digit || c >= 0x80;
        break;
      case 3:
        ok = space;
        break;
      case 4:
        ok = !upper;
        break;
      case 5:
        ok = !lower;
        break;
    }
    if (!ok) return Value::Bool(false);
  }
  return Value::Bool(which < 4 || any_cased);
}

const std::unordered_map<std::string, Method>& StrMethods() {
  static const auto* methods = new std::unordered_map<std::string, Method>{
      {"startswith", [](Renderer&, const Value& s, CallArgs& a) { return StartsEnds(s, a, true); }},
      {"endswith", [](Renderer&, const Value& s, CallArgs& a) { return StartsEnds(s, a, false); }},
      {"split", [](Renderer& r, const Value& s, CallArgs& a) { return SplitImpl(r, s, a, false); }},
      {"rsplit", [](Renderer& r, const Value& s, CallArgs& a) { return SplitImpl(r, s, a, true); }},
      {"strip", [](Renderer&, const Value& s, CallArgs& a) { return StripImpl(s, a, true, true); }},
      {"lstrip",
       [](Renderer&, const Value& s, CallArgs& a) { return StripImpl(s, a, true, false); }},
      {"rstrip",
       [](Renderer&, const Value& s, CallArgs& a) { return StripImpl(s, a, false, true); }},
      {"upper",
       [](Renderer&, const Value& s, CallArgs&) -> StatusOr<Value> {
         return Value::Str(PyUpper(s.str()));
       }},
      {"lower",
       [](Renderer&, const Value& s, CallArgs&) -> StatusOr<Value> {
         return Value::Str(PyLower(s.str()));
       }},
      {"title",
       [](Renderer&, const Value& s, CallArgs&) -> StatusOr<Value> {
         return Value::Str(PyTitleMethod(s.str()));
       }},
      {"capitalize",
       [](Renderer&, const Value& s, CallArgs&) -> StatusOr<Value> {
         return Value::Str(PyCapitalize(s.str()));
       }},
      {"find", [](Renderer&, const Value& s, CallArgs& a) { return FindImpl(s, a, false, false); }},
      {"rfind", [](Renderer&, const Value& s, CallArgs& a) { return FindImpl(s, a, true, false); }},
      {"count", [](Renderer&, const Value& s, CallArgs& a) { return FindImpl(s, a, false, true); }},
      {"format", FormatImpl},
      {"join", JoinMethod},
      {"isdigit", [](Renderer&, const Value& s, CallArgs&) { return CharClass(s, 0); }},
      {"isalpha", [](Renderer&, const Value& s, CallArgs&) { return CharClass(s, 1); }},
      {"isalnum", [](Renderer&, const Value& s, CallArgs&) { return CharClass(s, 2); }},
      {"isspace", [](Renderer&, const Value& s, CallArgs&) { return CharClass(s, 3); }},
      {"islower", [](Renderer&, const Value& s, CallArgs&) { return CharClass(s, 4); }},
      {"isupper", [](Renderer&, const Value& s, CallArgs&) { return CharClass(s, 5); }},
      {"replace",
       [](Renderer& r, const Value& s, CallArgs& a) -> StatusOr<Value> {
         XI_RETURN_IF_ERROR(CheckArgs(a, "replace", 3, {}));
         XI_ASSIGN_OR_RETURN(std::string old, StrArg(Arg(a, 0, ""), "replace() argument 1"));
         XI_ASSIGN_OR_RETURN(std::string rep, StrArg(Arg(a, 1, ""), "replace() argument 2"));
         const Value count = Arg(a, 2, "", Value::Int(-1));
         if (!count.is_integral()) return InvalidArgument("replace() count must be an integer");
         XI_RETURN_IF_ERROR(r.CheckNewString(s.str().size() + rep.size() * (s.str().size() + 1)));
         return r.NewString(PyReplace(s.str(), old, rep, count.as_int()));
       }},
      {"splitlines",
       [](Renderer&, const Value& s, CallArgs&) -> StatusOr<Value> {
         std::vector<Value> items;
         for (auto& line : PySplitLines(s.str())) items.push_back(Value::Str(std::move(line)));
         return Value::List(std::move(items));
       }},
      {"removeprefix",
       [](Renderer&, const Value& s, CallArgs& a) -> StatusOr<Value> {
         XI_ASSIGN_OR_RETURN(std::string p, StrArg(Arg(a, 0, ""), "removeprefix() argument"));
         if (s.str().compare(0, p.size(), p) == 0) return Value::Str(s.str().substr(p.size()));
         return s;
       }},
      {"removesuffix",
       [](Renderer&, const Value& s, CallArgs& a) -> StatusOr<Value> {
         XI_ASSIGN_OR_RETURN(std::string p, StrArg(Arg(a, 0, ""), "removesuffix() argument"));
         const std::string& t = s.str();
         if (!p.empty() && p.size() <= t.size() &&
             t.compare(t.size() - p.size(), p.size(), p) == 0) {
           return Value::Str(t.substr(0, t.size() - p.size()));
         }
         return s;
       }},
  };
  return *methods;
}

const std::unordered_map<std::string, Method>& DictMethods() {
  static const auto* methods = new std::unordered_map<std::string, Method>{
      {"items",
       [](Renderer& r, const Value& d, CallArgs&) -> StatusOr<Value> {
         XI_RETURN_IF_ERROR(r.budget()->Charge(static_cast<int64_t>(d.dict().size())));
         std::vector<Value> items;
         for (const auto& [k, v] : d.dict().entries) {
           items.push_back(Value::List({Value::Str(k), v}, /*tuple=*/true));
         }
         return Value::List(std::move(items));
       }},
      {"keys",
       [](Renderer& r, const Value& d, CallArgs&) -> StatusOr<Value> {
         XI_RETURN_IF_ERROR(r.budget()->Charge(static_cast<int64_t>(d.dict().size())));
         std::vector<Value> items;
         for (const auto& [k, v] : d.dict().entries) items.push_back(Value::Str(k));
         return Value::List(std::move(items));
       }},
      {"values",
       [](Renderer& r, const Value& d, CallArgs&) -> StatusOr<Value> {
         XI_RETURN_IF_ERROR(r.budget()->Charge(static_cast<int64_t>(d.dict().size())));
         std::vector<Value> items;
         for (const auto& [k, v] : d.dict().entries) items.push_back(v);
         return Value::List(std::move(items));
       }},
      {"get",
       [](Renderer&, const Value& d, CallArgs& a) -> StatusOr<Value> {
         XI_RETURN_IF_ERROR(CheckArgs(a, "get", 2, {}));
         const Value key = Arg(a, 0, "");
         if (key.is_string()) {
           if (const Value* v = d.dict().Find(key.str())) return *v;
         }
         return Arg(a, 1, "", Value::None());
       }},
  };
  return *methods;
}

StatusOr<Value> ListCountIndex(Renderer& r, const Value& self, CallArgs& args, bool index) {
  XI_RETURN_IF_ERROR(CheckArgs(args, index ? "index" : "count", 1, {}));
  const Value needle = Arg(args, 0, "");
  int64_t count = 0;
  const auto& items = self.list().items;
  for (size_t i = 0; i < items.size(); ++i) {
    XI_ASSIGN_OR_RETURN(bool eq, Equals(items[i], needle, r.budget()));
    if (eq && index) return Value::Int(static_cast<int64_t>(i));
    if (eq) ++count;
  }
  if (index) return InvalidArgument("value is not in list");
  return Value::Int(count);
}

}  // namespace

Method FindListMethod(const std::string& name) {
  if (name == "count") {
    return [](Renderer& r, const Value& s, CallArgs& a) { return ListCountIndex(r, s, a, false); };
  }
  if (name == "index") {
    return [](Renderer& r, const Value& s, CallArgs& a) { return ListCountIndex(r, s, a, true); };
  }
  return nullptr;
}

Method FindStrMethod(const std::string& name) {
  const auto& m = StrMethods();
  auto it = m.find(name);
  return it == m.end() ? nullptr : it->second;
}

Method FindDictMethod(const std::string& name) {
  const auto& m = DictMethods();
  auto it = m.find(name);
  return it == m.end() ? nullptr : it->second;
}

}  // namespace xinfer::jinja
