// Jinja2's built-in filters over sequences, mappings and attributes, and the lookup of every
// filter by name. Text and number filters are in filters_string.cc.
#include <algorithm>

#include "chat_template/filters.h"
#include "chat_template/pystr.h"

namespace xinfer::jinja {
namespace {

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

StatusOr<Value> FLength(Renderer&, const Value& in, CallArgs&) {
  XI_ASSIGN_OR_RETURN(int64_t n, Length(in));
  return Value::Int(n);
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

StatusOr<Value> FAttr(Renderer& r, const Value& in, CallArgs& a) {
  XI_ASSIGN_OR_RETURN(std::string name, ToStr(r, Arg(a, 0, "name")));
  if (in.is_dict() && in.dict().Find(name) != nullptr) {
    return Value::Undefined(fmt::format("'dict object' has no attribute '{}'", name));
  }
  return GetAttr(in, name);
}

}  // namespace

void AddCollectionFilters(FilterTable* table) {
  table->insert({
      {"length", FLength},
      {"count", FLength},
      {"items", FItems},
      {"list", FList},
      {"first", [](Renderer& r, const Value& in, CallArgs&) { return FFirstLast(r, in, true); }},
      {"last", [](Renderer& r, const Value& in, CallArgs&) { return FFirstLast(r, in, false); }},
      {"join", FJoin},
      {"selectattr",
       [](Renderer& r, const Value& in, CallArgs& a) { return SelectImpl(r, in, a, true, true); }},
      {"rejectattr",
       [](Renderer& r, const Value& in, CallArgs& a) { return SelectImpl(r, in, a, true, false); }},
      {"select",
       [](Renderer& r, const Value& in, CallArgs& a) { return SelectImpl(r, in, a, false, true); }},
      {"reject", [](Renderer& r, const Value& in,
                    CallArgs& a) { return SelectImpl(r, in, a, false, false); }},
      {"map", FMap},
      {"unique", FUnique},
      {"dictsort", FDictSort},
      {"sort", FSort},
      {"reverse", FReverse},
      {"min", [](Renderer& r, const Value& in, CallArgs& a) { return FMinMax(r, in, a, false); }},
      {"max", [](Renderer& r, const Value& in, CallArgs& a) { return FMinMax(r, in, a, true); }},
      {"sum", FSum},
      {"attr", FAttr},
  });
}

FilterFn FindFilter(std::string_view name) {
  static const FilterTable* filters = [] {
    auto* table = new FilterTable;
    AddStringFilters(table);
    AddCollectionFilters(table);
    return table;
  }();
  auto it = filters->find(std::string(name));
  return it == filters->end() ? nullptr : it->second;
}

}  // namespace xinfer::jinja
