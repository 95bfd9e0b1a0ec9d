// Attribute/item access, iteration, globals and the methods of str and dict values.
#include "chat_template/builtins.h"

#include <algorithm>
#include <ctime>
#include <unordered_map>

#include "chat_template/evaluator.h"
#include "chat_template/methods.h"
#include "chat_template/pystr.h"

namespace xinfer::jinja {

Value Arg(CallArgs& args, size_t index, const char* name, Value def) {
  if (index < args.pos.size()) return args.pos[index];
  for (auto& [k, v] : args.kw) {
    if (k == name) return v;
  }
  return def;
}

Status CheckArgs(const CallArgs& args, const char* fn, size_t max_pos,
                 std::initializer_list<const char*> names) {
  if (args.pos.size() > max_pos) {
    return InvalidArgument("{}() takes at most {} positional argument(s) ({} given)", fn, max_pos,
                           args.pos.size());
  }
  for (const auto& [k, v] : args.kw) {
    if (std::find_if(names.begin(), names.end(), [&](const char* n) { return k == n; }) ==
        names.end()) {
      return InvalidArgument("{}() got an unexpected keyword argument '{}'", fn, k);
    }
  }
  return Status::Ok();
}

namespace {

std::string ObjectName(const Value& v) {
  return v.is_namespace() ? "Namespace object" : v.TypeName() + " object";
}

Value NoAttribute(const Value& obj, const std::string& name) {
  if (obj.is_none())
    return Value::Undefined(fmt::format("'None' has no attribute {}", PyStrRepr(name)));
  return Value::Undefined(
      fmt::format("'{}' has no attribute {}", ObjectName(obj), PyStrRepr(name)));
}

Value BindMethod(const Value& self, const std::string& name, Method m) {
  return Value::Func(
      name, [self, m](Renderer& r, CallArgs& args) { return m(r, self, args); },
      self.has_namespace());
}

Value NoElement(const Value& obj, const Value& key) {
  std::string k;
  (void)AppendRepr(key, &k, 256);
  if (obj.is_none()) return Value::Undefined(fmt::format("None has no element {}", k));
  return Value::Undefined(fmt::format("{} has no element {}", ObjectName(obj), k));
}

}  // namespace

StatusOr<Value> GetAttr(const Value& obj, const std::string& name) {
  switch (obj.kind()) {
    case Value::Kind::kUndefined:
      return InvalidArgument("{}", obj.undefined_message());
    case Value::Kind::kString: {
      if (Method m = FindStrMethod(name)) return BindMethod(obj, name, m);
      return NoAttribute(obj, name);
    }
    case Value::Kind::kDict: {
      if (obj.is_namespace()) {
        if (const Value* v = obj.dict().Find(name)) return *v;
        return NoAttribute(obj, name);
      }
      if (obj.dict().is_loop && name == "cycle") {
        const Value* index0 = obj.dict().Find("index0");
        const int64_t i = index0 != nullptr ? index0->as_int() : 0;
        return Value::Func("cycle", [i](Renderer&, CallArgs& args) -> StatusOr<Value> {
          if (args.pos.empty()) return InvalidArgument("no items for cycling given");
          return args.pos[static_cast<size_t>(i) % args.pos.size()];
        });
      }
      if (Method m = FindDictMethod(name)) return BindMethod(obj, name, m);
      if (name == "pop" || name == "popitem" || name == "setdefault" || name == "update" ||
          name == "clear") {
        // The immutable sandbox Hugging Face uses hides mutating methods.
        return Value::Undefined(
            fmt::format("access to attribute '{}' of 'dict' object is unsafe.", name));
      }
      if (const Value* v = obj.dict().Find(name)) return *v;
      return NoAttribute(obj, name);
    }
    case Value::Kind::kList:
      if (Method m = FindListMethod(name)) return BindMethod(obj, name, m);
      return NoAttribute(obj, name);
    default:
      return NoAttribute(obj, name);
  }
}

StatusOr<Value> GetItem(const Value& obj, const Value& key) {
  switch (obj.kind()) {
    case Value::Kind::kUndefined:
      return InvalidArgument("{}", obj.undefined_message());
    case Value::Kind::kDict:
      if (key.is_string()) {
        if (!obj.is_namespace()) {
          if (const Value* v = obj.dict().Find(key.str())) return *v;
        }
        return GetAttr(obj, key.str());
      }
      return NoElement(obj, key);
    case Value::Kind::kList:
    case Value::Kind::kString: {
      if (key.is_string()) return GetAttr(obj, key.str());
      if (!key.is_integral()) return NoElement(obj, key);
      int64_t idx = key.as_int();
      if (obj.is_list()) {
        const auto& items = obj.list().items;
        const auto n = static_cast<int64_t>(items.size());
        if (idx < 0) idx += n;
        if (idx < 0 || idx >= n) return NoElement(obj, key);
        return items[static_cast<size_t>(idx)];
      }
      const std::vector<size_t> off = CodePointOffsets(obj.str());
      const auto n = static_cast<int64_t>(off.size()) - 1;
      if (idx < 0) idx += n;
      if (idx < 0 || idx >= n) return NoElement(obj, key);
      const auto i = static_cast<size_t>(idx);
      return Value::Str(obj.str().substr(off[i], off[i + 1] - off[i]));
    }
    default:
      if (key.is_string()) return GetAttr(obj, key.str());
      return NoElement(obj, key);
  }
}

StatusOr<Value> Slice(const Value& obj, const Value& start_v, const Value& stop_v,
                      const Value& step_v) {
  if (obj.is_undefined()) return InvalidArgument("{}", obj.undefined_message());
  if (!obj.is_list() && !obj.is_string()) {
    return InvalidArgument("'{}' object is not subscriptable", obj.TypeName());
  }
  auto bound = [](const Value& v, int64_t* out) -> StatusOr<bool> {
    if (v.is_none() || v.is_undefined()) return false;
    if (!v.is_integral()) return InvalidArgument("slice indices must be integers or None");
    *out = v.as_int();
    return true;
  };
  int64_t step = 1;
  XI_ASSIGN_OR_RETURN(bool has_step, bound(step_v, &step));
  if (has_step && step == 0) return InvalidArgument("slice step cannot be zero");
  std::vector<size_t> off;
  int64_t len;
  if (obj.is_string()) {
    off = CodePointOffsets(obj.str());
    len = static_cast<int64_t>(off.size()) - 1;
  } else {
    len = static_cast<int64_t>(obj.list().items.size());
  }
  const int64_t lower = step > 0 ? 0 : -1, upper = step > 0 ? len : len - 1;
  auto adjust = [&](const Value& v, bool is_start) -> StatusOr<int64_t> {
    int64_t x = 0;
    XI_ASSIGN_OR_RETURN(bool has, bound(v, &x));
    if (!has) return (step < 0) == is_start ? upper : lower;
    if (x < 0) return std::max(x + len, lower);
    return std::min(x, upper);
  };
  XI_ASSIGN_OR_RETURN(int64_t start, adjust(start_v, true));
  XI_ASSIGN_OR_RETURN(int64_t stop, adjust(stop_v, false));
  std::vector<size_t> picked;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    picked.push_back(static_cast<size_t>(i));
  }
  if (obj.is_string()) {
    std::string out;
    for (size_t i : picked) out.append(obj.str(), off[i], off[i + 1] - off[i]);
    return Value::Str(std::move(out));
  }
  std::vector<Value> items;
  items.reserve(picked.size());
  for (size_t i : picked) items.push_back(obj.list().items[i]);
  return Value::List(std::move(items), obj.is_tuple());
}

StatusOr<std::vector<Value>> Iterate(const Value& v, size_t max_items) {
  std::vector<Value> items;
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return items;
    case Value::Kind::kList:
      return v.list().items;
    case Value::Kind::kDict:
      if (v.is_namespace()) break;
      for (const auto& [k, x] : v.dict().entries) items.push_back(Value::Str(k));
      return items;
    case Value::Kind::kString: {
      const std::string& s = v.str();
      size_t pos = 0;
      while (pos < s.size()) {
        const size_t start = pos;
        DecodeUtf8(s, &pos);
        if (items.size() >= max_items) {
          return ResourceExhausted("list would exceed the limit of {} items", max_items);
        }
        items.push_back(Value::Str(s.substr(start, pos - start)));
      }
      return items;
    }
    default:
      break;
  }
  return InvalidArgument("'{}' object is not iterable", v.TypeName());
}

StatusOr<int64_t> Length(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return 0;
    case Value::Kind::kString:
      return static_cast<int64_t>(CodePointCount(v.str()));
    case Value::Kind::kList:
      return static_cast<int64_t>(v.list().items.size());
    case Value::Kind::kDict:
      if (!v.is_namespace()) return static_cast<int64_t>(v.dict().size());
      break;
    default:
      break;
  }
  return InvalidArgument("object of type '{}' has no len()", v.TypeName());
}

namespace {

StatusOr<Value> RangeFn(Renderer& r, CallArgs& args) {
  XI_RETURN_IF_ERROR(CheckArgs(args, "range", 3, {}));
  if (args.pos.empty()) return InvalidArgument("range expected at least 1 argument, got 0");
  for (const Value& v : args.pos) {
    if (!v.is_integral()) {
      return InvalidArgument("'{}' object cannot be interpreted as an integer", v.TypeName());
    }
  }
  int64_t start = 0, stop, step = 1;
  if (args.pos.size() == 1) {
    stop = args.pos[0].as_int();
  } else {
    start = args.pos[0].as_int();
    stop = args.pos[1].as_int();
    if (args.pos.size() == 3) step = args.pos[2].as_int();
  }
  if (step == 0) return InvalidArgument("range() arg 3 must not be zero");
  // Computed in long double so that extreme bounds cannot overflow.
  const long double span =
      step > 0 ? static_cast<long double>(stop) - start : static_cast<long double>(start) - stop;
  const long double abs_step = step > 0 ? step : -static_cast<long double>(step);
  const long double count = span <= 0 ? 0 : (span + abs_step - 1) / abs_step;
  if (count > static_cast<long double>(r.limits().max_range)) {
    return ResourceExhausted("Range too big. The sandbox blocks ranges larger than MAX_RANGE ({}).",
                             r.limits().max_range);
  }
  const auto n = static_cast<int64_t>(count);
  XI_RETURN_IF_ERROR(r.budget()->Charge(n));
  std::vector<Value> items;
  items.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) items.push_back(Value::Int(start + i * step));
  return Value::List(std::move(items));
}

StatusOr<Value> MakeDictFn(CallArgs& args, bool is_namespace) {
  auto dict = std::make_shared<Dict>();
  dict->is_namespace = is_namespace;
  if (args.pos.size() > 1) return InvalidArgument("expected at most 1 positional argument");
  if (args.pos.size() == 1) {
    const Value& init = args.pos[0];
    if (!init.is_dict()) return InvalidArgument("cannot build a dict from '{}'", init.TypeName());
    for (const auto& [k, v] : init.dict().entries) dict->Set(k, v);
  }
  for (auto& [k, v] : args.kw) dict->Set(k, v);
  return Value::Dict(std::move(dict));
}

}  // namespace

Value LookupGlobal(const std::string& name) {
  static const auto* globals = new std::unordered_map<std::string, Value>{
      {"range", Value::Func("range", RangeFn)},
      {"namespace",
       Value::Func("namespace", [](Renderer&, CallArgs& a) { return MakeDictFn(a, true); })},
      {"dict", Value::Func("dict", [](Renderer&, CallArgs& a) { return MakeDictFn(a, false); })},
      {"raise_exception", Value::Func("raise_exception",
                                      [](Renderer& r, CallArgs& a) -> StatusOr<Value> {
                                        std::string msg;
                                        XI_RETURN_IF_ERROR(AppendStr(Arg(a, 0, "message"), &msg,
                                                                     r.limits().max_output_bytes));
                                        return r.RaiseException(std::move(msg));
                                      })},
      {"strftime_now", Value::Func("strftime_now",
                                   [](Renderer&, CallArgs& a) -> StatusOr<Value> {
                                     const Value f = Arg(a, 0, "format");
                                     if (!f.is_string())
                                       return InvalidArgument("strftime_now() format must be str");
                                     const std::time_t now = std::time(nullptr);
                                     std::tm tm{};
                                     localtime_r(&now, &tm);
                                     char buf[256];
                                     const size_t n =
                                         std::strftime(buf, sizeof(buf), f.str().c_str(), &tm);
                                     return Value::Str(std::string(buf, n));
                                   })},
  };
  auto it = globals->find(name);
  if (it == globals->end()) return Value::Undefined(fmt::format("'{}' is undefined", name));
  return it->second;
}

}  // namespace xinfer::jinja
