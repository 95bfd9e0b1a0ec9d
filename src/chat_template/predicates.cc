// Jinja2's built-in tests (`x is defined`, `x is divisibleby 3`, ...).
#include <cmath>
#include <unordered_map>

#include "chat_template/builtins.h"
#include "chat_template/evaluator.h"

namespace xinfer::jinja {
namespace {

StatusOr<bool> CompareTest(Renderer& r, const Value& in, CallArgs& a, int want_lo, int want_hi) {
  XI_ASSIGN_OR_RETURN(int c, Compare(in, Arg(a, 0, "other"), r.budget()));
  return c >= want_lo && c <= want_hi;
}

StatusOr<bool> EqTest(Renderer& r, const Value& in, CallArgs& a) {
  return Equals(in, Arg(a, 0, "other"), r.budget());
}

// odd/even/divisibleby: Python's `value % n` on ints or floats.
StatusOr<bool> IntTest(const Value& in, const Value& n, bool divisible) {
  if (!in.is_number() || !n.is_number()) {
    return InvalidArgument("unsupported operand type(s) for %: '{}' and '{}'", in.TypeName(),
                           n.TypeName());
  }
  if (n.as_double() == 0) return InvalidArgument("integer division or modulo by zero");
  double m;
  if (in.is_integral() && n.is_integral()) {
    m = n.as_int() == -1 ? 0 : static_cast<double>(in.as_int() % n.as_int());
  } else {
    m = std::fmod(in.as_double(), n.as_double());
  }
  if (m != 0 && ((m < 0) != (n.as_double() < 0))) m += n.as_double();
  return divisible ? m == 0 : m == 1;
}

StatusOr<bool> CaseTest(Renderer& r, const Value& in, bool lower) {
  std::string s;
  XI_RETURN_IF_ERROR(AppendStr(in, &s, r.limits().max_output_bytes));
  bool cased = false;
  for (char c : s) {
    if ((lower && c >= 'A' && c <= 'Z') || (!lower && c >= 'a' && c <= 'z')) return false;
    cased = cased || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  }
  return cased;
}

using T = StatusOr<bool>;
const std::unordered_map<std::string, TestFn>& Tests() {
  static const auto* tests = new std::unordered_map<std::string, TestFn>{
      {"defined", [](Renderer&, const Value& v, CallArgs&) -> T { return !v.is_undefined(); }},
      {"undefined", [](Renderer&, const Value& v, CallArgs&) -> T { return v.is_undefined(); }},
      {"none", [](Renderer&, const Value& v, CallArgs&) -> T { return v.is_none(); }},
      {"string", [](Renderer&, const Value& v, CallArgs&) -> T { return v.is_string(); }},
      {"mapping", [](Renderer&, const Value& v, CallArgs&) -> T { return v.is_dict(); }},
      {"sequence",
       [](Renderer&, const Value& v, CallArgs&) -> T {
         return v.is_string() || v.is_list() || v.is_dict() || v.is_undefined();
       }},
      {"iterable",
       [](Renderer&, const Value& v, CallArgs&) -> T {
         return v.is_string() || v.is_list() || v.is_dict() || v.is_undefined();
       }},
      {"number", [](Renderer&, const Value& v, CallArgs&) -> T { return v.is_number(); }},
      {"integer", [](Renderer&, const Value& v, CallArgs&) -> T { return v.is_int(); }},
      {"float", [](Renderer&, const Value& v, CallArgs&) -> T { return v.is_float(); }},
      {"boolean", [](Renderer&, const Value& v, CallArgs&) -> T { return v.is_bool(); }},
      {"true",
       [](Renderer&, const Value& v, CallArgs&) -> T { return v.is_bool() && v.as_bool(); }},
      {"false",
       [](Renderer&, const Value& v, CallArgs&) -> T { return v.is_bool() && !v.as_bool(); }},
      {"callable", [](Renderer&, const Value& v, CallArgs&) -> T { return v.is_function(); }},
      {"equalto", EqTest},
      {"eq", EqTest},
      {"==", EqTest},
      {"ne",
       [](Renderer& r, const Value& v, CallArgs& a) -> T {
         XI_ASSIGN_OR_RETURN(bool eq, EqTest(r, v, a));
         return !eq;
       }},
      {"lt", [](Renderer& r, const Value& v, CallArgs& a) { return CompareTest(r, v, a, -1, -1); }},
      {"lessthan",
       [](Renderer& r, const Value& v, CallArgs& a) { return CompareTest(r, v, a, -1, -1); }},
      {"le", [](Renderer& r, const Value& v, CallArgs& a) { return CompareTest(r, v, a, -1, 0); }},
      {"gt", [](Renderer& r, const Value& v, CallArgs& a) { return CompareTest(r, v, a, 1, 1); }},
      {"greaterthan",
       [](Renderer& r, const Value& v, CallArgs& a) { return CompareTest(r, v, a, 1, 1); }},
      {"ge", [](Renderer& r, const Value& v, CallArgs& a) { return CompareTest(r, v, a, 0, 1); }},
      {"in",
       [](Renderer& r, const Value& v, CallArgs& a) -> T {
         const Value seq = Arg(a, 0, "seq");
         if (seq.is_string()) {
           if (!v.is_string())
             return InvalidArgument("'in <string>' requires string as left operand");
           return seq.str().find(v.str()) != std::string::npos;
         }
         if (seq.is_dict()) return v.is_string() && seq.dict().Find(v.str()) != nullptr;
         XI_ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(seq, r.limits().max_list_items));
         for (const Value& x : items) {
           XI_ASSIGN_OR_RETURN(bool eq, Equals(x, v, r.budget()));
           if (eq) return true;
         }
         return false;
       }},
      {"odd",
       [](Renderer&, const Value& v, CallArgs&) -> T { return IntTest(v, Value::Int(2), false); }},
      {"even",
       [](Renderer&, const Value& v, CallArgs&) -> T { return IntTest(v, Value::Int(2), true); }},
      {"divisibleby",
       [](Renderer&, const Value& v, CallArgs& a) -> T {
         return IntTest(v, Arg(a, 0, "num"), true);
       }},
      {"sameas",
       [](Renderer& r, const Value& v, CallArgs& a) -> T {
         const Value other = Arg(a, 0, "other");
         if (v.identity() != nullptr || other.identity() != nullptr)
           return v.identity() == other.identity();
         if (v.kind() != other.kind()) return false;
         return Equals(v, other, r.budget());
       }},
      {"lower", [](Renderer& r, const Value& v, CallArgs&) { return CaseTest(r, v, true); }},
      {"upper", [](Renderer& r, const Value& v, CallArgs&) { return CaseTest(r, v, false); }},
      {"escaped", [](Renderer&, const Value&, CallArgs&) -> T { return false; }},
      {"filter",
       [](Renderer&, const Value& v, CallArgs&) -> T {
         return v.is_string() && FindFilter(v.str()) != nullptr;
       }},
      {"test",
       [](Renderer&, const Value& v, CallArgs&) -> T {
         return v.is_string() && FindTest(v.str()) != nullptr;
       }},
  };
  return *tests;
}

}  // namespace

TestFn FindTest(std::string_view name) {
  const auto& t = Tests();
  auto it = t.find(std::string(name));
  return it == t.end() ? nullptr : it->second;
}

}  // namespace xinfer::jinja
