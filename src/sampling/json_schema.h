// A JSON Schema compiled for guided decoding (`response_format: {"type": "json_schema"}`,
// vLLM's `guided_json`): the subset structured outputs use — objects with properties (in schema
// order; optional ones may be left out; no other keys), arrays with items and min/maxItems,
// string (with `pattern` and `minLength` / `maxLength`) / integer (with `minimum`, `maximum` and
// their exclusive forms) / number (the same bounds, whole numbers) / boolean / null, enum and
// const, anyOf / oneOf / type lists whose alternatives start with different characters or are
// objects told apart by the value of a shared first property, $ref into $defs / definitions
// (recursion included). Annotations (title, description, default, examples, format, ...) are
// ignored as JSON Schema allows; assertions outside the subset (a number's fractional bound,
// multipleOf, minProperties, ...) are refused rather than silently not enforced.
//
// Immutable once compiled; shared read-only by every sequence that uses it (any thread).
#pragma once

#include <array>
#include <bitset>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"
#include "sampling/regex_dfa.h"

namespace xinfer {

struct SchemaNode {
  enum class Kind : uint8_t {
    kAny,     // any JSON value (any_open: one that starts with that byte, e.g. '{')
    kObject,  // keys / values / required
    kArray,   // values[0]: the items; min_items, max_items
    kString,
    kNumber,
    kInteger,
    kBoolean,
    kNull,
    kLiterals,  // one of `literals` (enum, const)
    kAnyOf,     // one of `values`, told apart by their first byte
  };
  Kind kind = Kind::kAny;
  char any_open = 0;
  std::vector<std::string> keys;  // kObject: each property's key as JSON text, quotes included
  std::vector<int32_t> values;    // kObject: each property's node; kArray: {items}; kAnyOf
  uint64_t required = 0;          // kObject: bit i set when property i is required
  int32_t min_items = 0;
  int32_t max_items = -1;             // -1: no limit
  std::vector<std::string> literals;  // kLiterals: compact JSON text of each allowed value
  std::bitset<256> first_bytes;       // the bytes a value of this node can start with
  // The automaton of the value's JSON text when its type's assertions need one (json_regex.h):
  // kString with `pattern` or `minLength` / `maxLength` (quotes included, characters raw or by
  // their short escapes, no \uXXXX), kInteger and kNumber with bounds. Null: any such value.
  std::shared_ptr<const RegexDfa> text_dfa;
  std::array<int8_t, 256> alternative_by_first_byte{};  // kAnyOf: index into values, or -1
  // kObject made of an anyOf of objects that all start with the same required property holding
  // an enum / const of values no two share (a discriminated union, e.g. tool calls told apart by
  // "name"): keys / values hold that property alone, with every alternative's values; once the
  // value is known (literal i), the object goes on as union_alternatives[union_owner[i]].
  std::vector<int32_t> union_alternatives;
  std::vector<int32_t> union_owner;
};

struct JsonSchema {
  // Limits that keep a matcher's state fixed-size: properties per object and values per enum
  // (one bit each), the length of a key or literal.
  static constexpr int kMaxProperties = 64;
  static constexpr int kMaxLiterals = 64;
  static constexpr int kMaxLiteralBytes = 4096;
  static constexpr int kMaxNodes = 4096;

  std::vector<SchemaNode> nodes;
  int32_t root = 0;
};

// Compiles `schema` (an object, or true for any value). InvalidArgument for what is not a schema,
// Unimplemented naming the keyword or construct outside the subset; the message starts with
// `what` (e.g. "response_format json_schema") so that a server can name the field.
StatusOr<std::shared_ptr<const JsonSchema>> CompileJsonSchema(const nlohmann::ordered_json& schema,
                                                              const std::string& what);

}  // namespace xinfer
