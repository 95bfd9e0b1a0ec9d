// Built-in filters, tests, global functions and the methods of str/dict/list values, with
// Jinja2's (and Python's) semantics. All tables are immutable after static initialization and
// safe to use from any thread.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"
#include "chat_template/value.h"

namespace xinfer::jinja {

using FilterFn = StatusOr<Value> (*)(Renderer& r, const Value& input, CallArgs& args);
using TestFn = StatusOr<bool> (*)(Renderer& r, const Value& input, CallArgs& args);

// nullptr when unknown (an unknown filter or test is a syntax error, as in Jinja2).
FilterFn FindFilter(std::string_view name);
TestFn FindTest(std::string_view name);

// Globals: range, namespace, dict, raise_exception, strftime_now. Undefined when unknown.
Value LookupGlobal(const std::string& name);

// `obj.name`: attribute (bound method) first, then item, like Jinja2's getattr.
StatusOr<Value> GetAttr(const Value& obj, const std::string& name);
// `obj[key]`: item first, then attribute for string keys. Slices are handled by the caller.
StatusOr<Value> GetItem(const Value& obj, const Value& key);
// Python slicing obj[start:stop:step] of str/list/tuple; missing bounds are Undefined.
StatusOr<Value> Slice(const Value& obj, const Value& start, const Value& stop, const Value& step);

// Iterates like Python `for x in v`: list items, dict keys, string code points; Undefined
// yields nothing. Other types fail with "'int' object is not iterable".
// Fails when the result would exceed max_items.
StatusOr<std::vector<Value>> Iterate(const Value& v, size_t max_items);

// Python `len(v)`.
StatusOr<int64_t> Length(const Value& v);

// Helpers for keyword/positional argument handling shared by builtins.
// Takes the argument at position `index` or keyword `name`; returns `def` when absent.
Value Arg(CallArgs& args, size_t index, const char* name, Value def = Value());
// Fails when args hold anything beyond `max_pos` positionals or keywords outside `names`.
Status CheckArgs(const CallArgs& args, const char* fn, size_t max_pos,
                 std::initializer_list<const char*> names);

}  // namespace xinfer::jinja

namespace xinfer::jinja {
// Python's `fmt % arg` (printf-style formatting); a tuple supplies several arguments.
StatusOr<std::string> PercentFormat(const std::string& fmt, const Value& arg, size_t max_bytes);
}  // namespace xinfer::jinja
