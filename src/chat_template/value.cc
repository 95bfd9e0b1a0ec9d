#include "chat_template/value.h"

#include <algorithm>
#include <cmath>

#include "base/check.h"
#include "chat_template/pystr.h"

namespace xinfer::jinja {

Value Value::Undefined(std::string message) {
  Value v;
  if (!message.empty()) v.ptr_ = std::make_shared<const std::string>(std::move(message));
  return v;
}

Value Value::None() {
  Value v;
  v.kind_ = Kind::kNone;
  return v;
}

Value Value::Bool(bool b) {
  Value v;
  v.kind_ = Kind::kBool;
  v.b_ = b;
  return v;
}

Value Value::Int(int64_t i) {
  Value v;
  v.kind_ = Kind::kInt;
  v.i_ = i;
  return v;
}

Value Value::Float(double f) {
  Value v;
  v.kind_ = Kind::kFloat;
  v.f_ = f;
  return v;
}

Value Value::Str(std::string s) {
  Value v;
  v.kind_ = Kind::kString;
  v.ptr_ = std::make_shared<const std::string>(std::move(s));
  return v;
}

Value Value::List(std::vector<Value> items, bool tuple) {
  auto list = std::make_shared<jinja::List>();
  list->is_tuple = tuple;
  for (const Value& item : items) {
    list->depth = std::max(list->depth, item.depth() + 1);
    list->has_namespace = list->has_namespace || item.has_namespace();
  }
  list->items = std::move(items);
  Value v;
  v.kind_ = Kind::kList;
  v.ptr_ = std::move(list);
  return v;
}

Value Value::Dict(std::shared_ptr<jinja::Dict> dict) {
  Value v;
  v.kind_ = Kind::kDict;
  v.ptr_ = std::move(dict);
  return v;
}

Value Value::Func(std::string name, NativeFn fn, bool has_namespace) {
  auto f = std::make_shared<Function>();
  f->name = std::move(name);
  f->fn = std::move(fn);
  f->has_namespace = has_namespace;
  Value v;
  v.kind_ = Kind::kFunction;
  v.ptr_ = std::move(f);
  return v;
}

bool Value::is_tuple() const { return is_list() && list().is_tuple; }
bool Value::is_dict() const { return kind_ == Kind::kDict && !dict().is_namespace; }
bool Value::is_namespace() const { return kind_ == Kind::kDict && dict().is_namespace; }

const std::string& Value::str() const {
  XI_CHECK(is_string());
  return *static_cast<const std::string*>(ptr_.get());
}
const List& Value::list() const {
  XI_CHECK(is_list());
  return *static_cast<const jinja::List*>(ptr_.get());
}
const Dict& Value::dict() const {
  XI_CHECK(kind_ == Kind::kDict);
  return *static_cast<const jinja::Dict*>(ptr_.get());
}
Dict& Value::mutable_namespace() const {
  XI_CHECK(is_namespace());
  // Namespaces are the one container mutated after construction (see the header comment).
  return *const_cast<jinja::Dict*>(static_cast<const jinja::Dict*>(ptr_.get()));
}
const Function& Value::func() const {
  XI_CHECK(is_function());
  return *static_cast<const Function*>(ptr_.get());
}

std::string Value::undefined_message() const {
  if (!is_undefined() || ptr_ == nullptr) return "value is undefined";
  return *static_cast<const std::string*>(ptr_.get());
}

int Value::depth() const {
  if (is_list()) return list().depth;
  if (kind_ == Kind::kDict) return dict().depth;
  return 0;
}

bool Value::has_namespace() const {
  if (is_list()) return list().has_namespace;
  if (kind_ == Kind::kDict) return dict().is_namespace || dict().has_namespace;
  if (is_function()) return func().has_namespace;
  return false;
}

bool Value::Truthy() const {
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone:
      return false;
    case Kind::kBool:
      return b_;
    case Kind::kInt:
      return i_ != 0;
    case Kind::kFloat:
      return f_ != 0;
    case Kind::kString:
      return !str().empty();
    case Kind::kList:
      return !list().items.empty();
    case Kind::kDict:
      return is_namespace() || dict().size() > 0;
    case Kind::kFunction:
      return true;
  }
  return false;
}

std::string Value::TypeName() const {
  switch (kind_) {
    case Kind::kUndefined:
      return "Undefined";
    case Kind::kNone:
      return "NoneType";
    case Kind::kBool:
      return "bool";
    case Kind::kInt:
      return "int";
    case Kind::kFloat:
      return "float";
    case Kind::kString:
      return "str";
    case Kind::kList:
      return is_tuple() ? "tuple" : "list";
    case Kind::kDict:
      return is_namespace() ? "Namespace" : "dict";
    case Kind::kFunction:
      return "function";
  }
  return "object";
}

const Value* Dict::Find(std::string_view key) const {
  if (!index_.empty()) {
    auto it = index_.find(std::string(key));
    return it == index_.end() ? nullptr : &entries[it->second].second;
  }
  for (const auto& [k, v] : entries) {
    if (k == key) return &v;
  }
  return nullptr;
}

void Dict::Set(const std::string& key, Value v) {
  depth = std::max(depth, v.depth() + 1);
  has_namespace = has_namespace || v.has_namespace();
  if (index_.empty()) {
    for (auto& [k, old] : entries) {
      if (k == key) {
        old = std::move(v);
        return;
      }
    }
  } else if (auto it = index_.find(key); it != index_.end()) {
    entries[it->second].second = std::move(v);
    return;
  }
  entries.emplace_back(key, std::move(v));
  constexpr size_t kIndexAbove = 16;  // linear search wins below this
  if (entries.size() > kIndexAbove) {
    if (index_.empty()) {
      for (size_t i = 0; i < entries.size(); ++i) index_.emplace(entries[i].first, i);
    } else {
      index_.emplace(key, entries.size() - 1);
    }
  }
}

StatusOr<Value> FromJson(const nlohmann::ordered_json& j, int max_depth) {
  if (max_depth < 0) return InvalidArgument("template context is nested too deeply");
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null:
      return Value::None();
    case nlohmann::ordered_json::value_t::boolean:
      return Value::Bool(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer:
      return Value::Int(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      const uint64_t u = j.get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX)) return Value::Float(static_cast<double>(u));
      return Value::Int(static_cast<int64_t>(u));
    }
    case nlohmann::ordered_json::value_t::number_float:
      return Value::Float(j.get<double>());
    case nlohmann::ordered_json::value_t::string:
      return Value::Str(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      std::vector<Value> items;
      items.reserve(j.size());
      for (const auto& e : j) {
        XI_ASSIGN_OR_RETURN(Value v, FromJson(e, max_depth - 1));
        items.push_back(std::move(v));
      }
      return Value::List(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      auto dict = std::make_shared<Dict>();
      for (const auto& [k, e] : j.items()) {
        XI_ASSIGN_OR_RETURN(Value v, FromJson(e, max_depth - 1));
        dict->Set(k, std::move(v));
      }
      return Value::Dict(std::move(dict));
    }
    default:
      return InvalidArgument("unsupported JSON value in template context");
  }
}

namespace {

Status CheckSize(const std::string& out, size_t max_bytes) {
  if (out.size() > max_bytes) {
    return ResourceExhausted("template output exceeds the limit of {} bytes", max_bytes);
  }
  return Status::Ok();
}

Status AppendPy(const Value& v, bool repr, std::string* out, size_t max_bytes) {
  XI_RETURN_IF_ERROR(CheckSize(*out, max_bytes));
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      *out += repr ? "Undefined" : "";
      break;
    case Value::Kind::kNone:
      *out += "None";
      break;
    case Value::Kind::kBool:
      *out += v.as_bool() ? "True" : "False";
      break;
    case Value::Kind::kInt:
      *out += std::to_string(v.as_int());
      break;
    case Value::Kind::kFloat:
      *out += PyFloatRepr(v.as_double());
      break;
    case Value::Kind::kString:
      if (repr) {
        *out += PyStrRepr(v.str());
      } else {
        *out += v.str();
      }
      break;
    case Value::Kind::kList: {
      const auto& l = v.list();
      *out += l.is_tuple ? '(' : '[';
      for (size_t i = 0; i < l.items.size(); ++i) {
        if (i > 0) *out += ", ";
        XI_RETURN_IF_ERROR(AppendPy(l.items[i], true, out, max_bytes));
      }
      if (l.is_tuple && l.items.size() == 1) *out += ',';
      *out += l.is_tuple ? ')' : ']';
      break;
    }
    case Value::Kind::kDict: {
      const auto& d = v.dict();
      if (d.is_namespace) *out += "<Namespace ";
      *out += '{';
      for (size_t i = 0; i < d.entries.size(); ++i) {
        if (i > 0) *out += ", ";
        *out += PyStrRepr(d.entries[i].first);
        *out += ": ";
        XI_RETURN_IF_ERROR(AppendPy(d.entries[i].second, true, out, max_bytes));
      }
      *out += '}';
      if (d.is_namespace) *out += '>';
      break;
    }
    case Value::Kind::kFunction:
      *out += "<function " + v.func().name + ">";
      break;
  }
  return CheckSize(*out, max_bytes);
}

Status AppendJsonImpl(const Value& v, const JsonOptions& o, int level, std::string* out,
                      size_t max_bytes) {
  XI_RETURN_IF_ERROR(CheckSize(*out, max_bytes));
  auto newline = [&](int lvl) {
    *out += '\n';
    for (int i = 0; i < lvl; ++i) *out += o.indent;
  };
  switch (v.kind()) {
    case Value::Kind::kNone:
      *out += "null";
      break;
    case Value::Kind::kBool:
      *out += v.as_bool() ? "true" : "false";
      break;
    case Value::Kind::kInt:
      *out += std::to_string(v.as_int());
      break;
    case Value::Kind::kFloat: {
      const double f = v.as_double();
      if (std::isnan(f)) {
        *out += "NaN";
      } else if (std::isinf(f)) {
        *out += f > 0 ? "Infinity" : "-Infinity";
      } else {
        *out += PyFloatRepr(f);
      }
      break;
    }
    case Value::Kind::kString:
      AppendJsonString(v.str(), o.ensure_ascii, out);
      break;
    case Value::Kind::kList: {
      const auto& items = v.list().items;
      if (items.empty()) {
        *out += "[]";
        break;
      }
      *out += '[';
      for (size_t i = 0; i < items.size(); ++i) {
        if (i > 0) *out += o.item_sep;
        if (o.has_indent) newline(level + 1);
        XI_RETURN_IF_ERROR(AppendJsonImpl(items[i], o, level + 1, out, max_bytes));
      }
      if (o.has_indent) newline(level);
      *out += ']';
      break;
    }
    case Value::Kind::kDict: {
      if (v.is_namespace())
        return InvalidArgument("Object of type Namespace is not JSON serializable");
      std::vector<const std::pair<std::string, Value>*> entries;
      for (const auto& e : v.dict().entries) entries.push_back(&e);
      if (entries.empty()) {
        *out += "{}";
        break;
      }
      if (o.sort_keys) {
        std::stable_sort(entries.begin(), entries.end(),
                         [](const auto* a, const auto* b) { return a->first < b->first; });
      }
      *out += '{';
      for (size_t i = 0; i < entries.size(); ++i) {
        if (i > 0) *out += o.item_sep;
        if (o.has_indent) newline(level + 1);
        AppendJsonString(entries[i]->first, o.ensure_ascii, out);
        *out += o.key_sep;
        XI_RETURN_IF_ERROR(AppendJsonImpl(entries[i]->second, o, level + 1, out, max_bytes));
      }
      if (o.has_indent) newline(level);
      *out += '}';
      break;
    }
    case Value::Kind::kUndefined:
    case Value::Kind::kFunction:
      return InvalidArgument("Object of type {} is not JSON serializable", v.TypeName());
  }
  return CheckSize(*out, max_bytes);
}

}  // namespace

Status AppendStr(const Value& v, std::string* out, size_t max_bytes) {
  return AppendPy(v, false, out, max_bytes);
}
Status AppendRepr(const Value& v, std::string* out, size_t max_bytes) {
  return AppendPy(v, true, out, max_bytes);
}
Status AppendJson(const Value& v, const JsonOptions& opts, std::string* out, size_t max_bytes) {
  return AppendJsonImpl(v, opts, 0, out, max_bytes);
}

StatusOr<bool> Equals(const Value& a, const Value& b, Budget* budget) {
  XI_RETURN_IF_ERROR(budget->Charge(1));
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_double() == b.as_double();
    return a.as_int() == b.as_int();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone:
      return true;
    case Value::Kind::kString:
      return a.str() == b.str();
    case Value::Kind::kList: {
      if (a.identity() == b.identity()) return true;
      const auto& x = a.list();
      const auto& y = b.list();
      if (x.is_tuple != y.is_tuple || x.items.size() != y.items.size()) return false;
      for (size_t i = 0; i < x.items.size(); ++i) {
        XI_ASSIGN_OR_RETURN(bool eq, Equals(x.items[i], y.items[i], budget));
        if (!eq) return false;
      }
      return true;
    }
    case Value::Kind::kDict: {
      if (a.identity() == b.identity()) return true;
      if (a.is_namespace() || b.is_namespace()) return false;
      const auto& x = a.dict();
      const auto& y = b.dict();
      if (x.size() != y.size()) return false;
      for (const auto& [k, v] : x.entries) {
        const Value* other = y.Find(k);
        if (other == nullptr) return false;
        XI_ASSIGN_OR_RETURN(bool eq, Equals(v, *other, budget));
        if (!eq) return false;
      }
      return true;
    }
    default:
      return a.identity() == b.identity();
  }
}

StatusOr<int> Compare(const Value& a, const Value& b, Budget* budget) {
  XI_RETURN_IF_ERROR(budget->Charge(1));
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) {
      const double x = a.as_double(), y = b.as_double();
      return x < y ? -1 : (x > y ? 1 : 0);
    }
    return a.as_int() < b.as_int() ? -1 : (a.as_int() > b.as_int() ? 1 : 0);
  }
  if (a.is_string() && b.is_string()) {
    const int c = a.str().compare(b.str());  // UTF-8 byte order is code point order
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
    const auto& x = a.list().items;
    const auto& y = b.list().items;
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      XI_ASSIGN_OR_RETURN(bool eq, Equals(x[i], y[i], budget));
      if (!eq) return Compare(x[i], y[i], budget);
    }
    return x.size() < y.size() ? -1 : (x.size() > y.size() ? 1 : 0);
  }
  if (a.is_undefined()) return InvalidArgument("{}", a.undefined_message());
  if (b.is_undefined()) return InvalidArgument("{}", b.undefined_message());
  return InvalidArgument("'<' not supported between instances of '{}' and '{}'", a.TypeName(),
                         b.TypeName());
}

}  // namespace xinfer::jinja
