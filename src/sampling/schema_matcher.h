// SchemaMatcher: a byte-at-a-time recognizer of one JSON value that follows a compiled JsonSchema
// (json_schema.h), for guided decoding of `response_format: {"type": "json_schema"}`. Like
// JsonMatcher it answers which next bytes keep the output a prefix of a valid value and whether
// the value is complete. Objects are written with their properties in schema order (optional ones
// may be skipped) and no other keys; whitespace between tokens is allowed in bounded runs.
//
// The state is a small stack of frames plus the JsonMatcher of the current leaf value; a copy
// takes only the frames in use, so a guided sampler can try every token on a copy. The schema is
// borrowed and must outlive the matcher. Not thread-safe; copies are independent.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "sampling/json_matcher.h"
#include "sampling/json_schema.h"

namespace xinfer {

class SchemaMatcher {
 public:
  // Schema values nested deeper than this are refused.
  static constexpr int kMaxDepth = 16;

  explicit SchemaMatcher(const JsonSchema* schema);
  SchemaMatcher(const SchemaMatcher& other) { *this = other; }
  SchemaMatcher& operator=(const SchemaMatcher& other);

  bool Advance(uint8_t byte);
  bool Advance(std::string_view bytes);
  // The root value is complete: the output may end here (only whitespace may follow).
  bool complete() const { return depth_ == 0; }
  // Inside a string whose content is free (a string or any-value leaf), between characters.
  bool in_string() const;
  // false: no whitespace between tokens (JsonMatcher::set_whitespace_allowed). Set before the
  // first byte; kept by copies.
  void set_whitespace_allowed(bool allowed) {
    max_ws_run_ = allowed ? JsonMatcher::kMaxWhitespaceRun : 0;
  }
  // Appends bytes that tell this state apart (for the same schema): two matchers with the same key
  // accept the same continuations.
  void AppendStateKey(std::string* key) const;

 private:
  enum class Phase : uint8_t {
    kValue,       // a value of `node` is expected
    kKeyOrClose,  // after '{': a key or '}'
    kKey,         // after ',' in an object: a key
    kInKey,       // inside a key: `candidates` are the properties it may still be
    kColon,       // after a key
    kObjectNext,  // after a property's value: ',' or '}'
    kArrayFirst,  // after '[': an item or ']'
    kArrayNext,   // after an item: ',' or ']'
    kLeaf,        // inside a string / number / boolean / null / any value (leaf_)
    kLiteral,     // inside an enum / const value: `candidates` are those it may still be
    kText,        // inside a value with a text_dfa: `candidates` is its automaton's state
  };
  struct Frame {
    int32_t node = 0;
    Phase phase = Phase::kValue;
    uint16_t count = 0;  // objects: the next property allowed; arrays: items so far
    uint16_t pos = 0;    // kInKey / kLiteral: bytes matched
    uint64_t candidates = 0;
  };

  bool StartValue(Frame& f, uint8_t byte);
  bool Push(int32_t node);
  void Pop() { --depth_; }
  // An enum / const value ended as literal `literal` of its node: pop it, and let a union object
  // that it discriminates go on as the alternative it names.
  void EndLiteral(int literal);
  bool Whitespace() { return ++ws_run_ <= max_ws_run_; }
  // Keys that may come next in an object whose properties before `next` are done: each from
  // `next` on, up to the first required one.
  static uint64_t AllowedKeys(const SchemaNode& n, int next);
  // No required property is left from `next` on.
  static bool CanClose(const SchemaNode& n, int next);
  const SchemaNode& node(const Frame& f) const {
    return schema_->nodes[static_cast<size_t>(f.node)];
  }

  const JsonSchema* schema_;
  std::array<Frame, kMaxDepth> frames_;
  int depth_ = 0;
  uint8_t ws_run_ = 0;
  uint8_t max_ws_run_ = JsonMatcher::kMaxWhitespaceRun;
  JsonMatcher leaf_;
};

}  // namespace xinfer
