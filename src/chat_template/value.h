// Runtime values of the template engine, modelled on the Python objects Jinja2 handles: None,
// bool, int, float, str, list, tuple, dict (insertion ordered), Jinja2's namespace and
// Undefined, and callables (builtins, bound methods, macros).
//
// Ownership: strings, lists and dicts are immutable once built and shared by pointer, so copying
// a Value is cheap and structural sharing cannot blow up memory. The only mutable container is
// a namespace (its attributes are assigned by `{% set ns.x = ... %}`); a namespace may never
// receive a value that contains a namespace, which rules out reference cycles.
// Values live only inside one render and are not shared between threads.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/status.h"

namespace xinfer::jinja {

class Value;
class Renderer;

// Arguments of a call: positional and keyword, in source order.
struct CallArgs {
  std::vector<Value> pos;
  std::vector<std::pair<std::string, Value>> kw;
};

using NativeFn = std::function<StatusOr<Value>(Renderer&, CallArgs&)>;

struct Function {
  std::string name;
  NativeFn fn;
  bool has_namespace = false;  // a bound receiver holds a namespace
};

struct List;
struct Dict;

class Value {
 public:
  enum class Kind : uint8_t {
    kUndefined,
    kNone,
    kBool,
    kInt,
    kFloat,
    kString,
    kList,
    kDict,
    kFunction
  };

  Value() = default;  // undefined
  static Value Undefined(std::string message);
  static Value None();
  static Value Bool(bool b);
  static Value Int(int64_t i);
  static Value Float(double f);
  static Value Str(std::string s);
  static Value List(std::vector<Value> items, bool tuple = false);
  static Value Dict(std::shared_ptr<jinja::Dict> dict);
  static Value Func(std::string name, NativeFn fn, bool has_namespace = false);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_int() const { return kind_ == Kind::kInt; }  // excludes bool
  bool is_float() const { return kind_ == Kind::kFloat; }
  // Python's numbers.Number: bool, int and float.
  bool is_number() const { return kind_ == Kind::kBool || is_int() || is_float(); }
  bool is_integral() const { return kind_ == Kind::kBool || is_int(); }  // isinstance(x, int)
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_list() const { return kind_ == Kind::kList; }  // list or tuple
  bool is_tuple() const;
  bool is_dict() const;  // a mapping (namespaces are not)
  bool is_namespace() const;
  bool is_function() const { return kind_ == Kind::kFunction; }

  bool as_bool() const { return b_; }
  int64_t as_int() const { return kind_ == Kind::kBool ? (b_ ? 1 : 0) : i_; }
  double as_double() const { return is_float() ? f_ : static_cast<double>(as_int()); }
  const std::string& str() const;
  const jinja::List& list() const;
  const jinja::Dict& dict() const;         // dict or namespace
  jinja::Dict& mutable_namespace() const;  // namespace only
  const Function& func() const;
  // The message UndefinedError would carry ("'x' is undefined").
  std::string undefined_message() const;

  // Nesting depth of containers (scalars 0) and whether a namespace is reachable.
  int depth() const;
  bool has_namespace() const;
  bool Truthy() const;
  // Identity for the `sameas` test: pointer for containers, nullptr for scalars.
  const void* identity() const { return ptr_.get(); }
  // Python type name ("int", "str", "NoneType", ...).
  std::string TypeName() const;

 private:
  Kind kind_ = Kind::kUndefined;
  bool b_ = false;
  int64_t i_ = 0;
  double f_ = 0;
  std::shared_ptr<const void> ptr_;  // string / List / Dict / Function / undefined message
};

struct List {
  std::vector<Value> items;
  bool is_tuple = false;
  int depth = 1;
  bool has_namespace = false;
};

struct Dict {
  const Value* Find(std::string_view key) const;
  void Set(const std::string& key, Value v);
  size_t size() const { return entries.size(); }

  std::vector<std::pair<std::string, Value>> entries;  // insertion order
  bool is_namespace = false;
  bool is_loop = false;  // a for loop's `loop` object; `loop.cycle` is resolved on access
  int depth = 1;
  bool has_namespace = false;

 private:
  std::unordered_map<std::string, size_t> index_;  // kept once the dict grows past a few keys
};

// Work counter shared by everything that can loop over values, so that no expression can run
// for unbounded time.
struct Budget {
  int64_t ops_left = 0;
  Status Charge(int64_t n) {
    ops_left -= n;
    if (ops_left < 0) return ResourceExhausted("template exceeded its operation budget");
    return Status::Ok();
  }
};

// Converts request JSON (key order preserved). Nesting beyond max_depth is refused.
StatusOr<Value> FromJson(const nlohmann::ordered_json& j, int max_depth);

// Python str(v) / repr(v) appended to *out; fails once *out would exceed max_bytes.
Status AppendStr(const Value& v, std::string* out, size_t max_bytes);
Status AppendRepr(const Value& v, std::string* out, size_t max_bytes);

struct JsonOptions {
  bool ensure_ascii = false;
  bool sort_keys = false;
  bool has_indent = false;
  std::string indent;
  std::string item_sep = ", ";
  std::string key_sep = ": ";
};
// json.dumps(v, ...) appended to *out.
Status AppendJson(const Value& v, const JsonOptions& opts, std::string* out, size_t max_bytes);

// Python ==, and ordering (<0, 0, >0) which fails with TypeError text for unorderable types.
StatusOr<bool> Equals(const Value& a, const Value& b, Budget* budget);
StatusOr<int> Compare(const Value& a, const Value& b, Budget* budget);

}  // namespace xinfer::jinja
