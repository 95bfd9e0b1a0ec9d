#include "sampling/json_schema.h"

#include <algorithm>
#include <bitset>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string_view>
#include <utility>

#include "sampling/json_regex.h"

namespace xinfer {
namespace {

using json = nlohmann::ordered_json;
using FirstBytes = std::bitset<256>;

// Keywords enforced on some types (meaningless on the others, refused there): a string's, a
// number's or an integer's.
constexpr std::string_view kStringKeywords[] = {"pattern", "minLength", "maxLength"};
constexpr std::string_view kBoundKeywords[] = {"minimum", "maximum", "exclusiveMinimum",
                                               "exclusiveMaximum"};

// Keywords that assert something the matcher does not enforce: refused, never ignored.
constexpr std::string_view kUnsupported[] = {"multipleOf",
                                             "minProperties",
                                             "maxProperties",
                                             "patternProperties",
                                             "propertyNames",
                                             "dependentRequired",
                                             "dependentSchemas",
                                             "if",
                                             "then",
                                             "else",
                                             "not",
                                             "prefixItems",
                                             "contains",
                                             "minContains",
                                             "maxContains",
                                             "unevaluatedProperties",
                                             "unevaluatedItems",
                                             "additionalItems",
                                             "dependencies"};

// Keywords that only describe (JSON Schema lets validators ignore them).
bool IsAnnotation(const std::string& key) {
  static const std::set<std::string> kAnnotations = {
      "title",       "description", "default",         "examples",        "$schema", "$id",
      "$comment",    "deprecated",  "readOnly",        "writeOnly",       "format",  "$defs",
      "definitions", "$anchor",     "contentEncoding", "contentMediaType"};
  return kAnnotations.count(key) != 0;
}

class Compiler {
 public:
  Compiler(const json& root, const std::string& what) : root_(root), what_(what) {}

  StatusOr<int32_t> Compile(const json& s, int depth) {
    if (depth > 64) return InvalidArgument("{}: the schema nests deeper than 64 levels", what_);
    if (static_cast<int>(out_.nodes.size()) >= JsonSchema::kMaxNodes)
      return Unimplemented("{}: the schema has more than {} parts", what_, JsonSchema::kMaxNodes);
    if (s.is_boolean()) {
      if (!s.get<bool>()) return Unimplemented("{}: the schema false admits no value", what_);
      return Add(SchemaNode{});
    }
    if (!s.is_object())
      return InvalidArgument("{}: a schema must be an object or a boolean", what_);
    // A type list is split below, each alternative keeping a type's keywords only if of it.
    auto has_type = [&](const char* type) {
      if (!s.contains("type")) return false;
      const json& t = s["type"];
      return t == type || (t.is_array() && std::find(t.begin(), t.end(), type) != t.end());
    };
    for (std::string_view k : kStringKeywords)
      if (s.contains(std::string(k)) && !has_type("string"))
        return Unimplemented("{}: '{}' is not supported on a schema other than type \"string\"",
                             what_, k);
    for (std::string_view k : kBoundKeywords)
      if (s.contains(std::string(k)) && !has_type("integer") && !has_type("number"))
        return Unimplemented(
            "{}: '{}' is not supported on a schema other than type \"integer\" or \"number\"",
            what_, k);
    for (std::string_view k : kUnsupported)
      if (s.contains(std::string(k)))
        return Unimplemented(
            "{}: '{}' is not supported by guided decoding (it enforces type, properties, required, "
            "items, minItems, maxItems, enum, const, anyOf, oneOf and $ref)",
            what_, k);
    if (s.contains("uniqueItems") && s["uniqueItems"] == true)
      return Unimplemented("{}: 'uniqueItems' is not supported by guided decoding", what_);
    if (s.contains("$ref")) return Ref(s, depth);
    if (s.contains("nullable") && s["nullable"] == true) {
      json inner = s;
      inner.erase("nullable");
      return AnyOf({inner, json{{"type", "null"}}}, depth);
    }
    if (s.contains("allOf")) {
      const json& all = s["allOf"];
      if (!all.is_array() || all.size() != 1)
        return Unimplemented("{}: 'allOf' with other than one schema is not supported", what_);
      return Compile(all[0], depth + 1);
    }
    for (const char* key : {"anyOf", "oneOf"}) {
      if (!s.contains(key)) continue;
      if (!s[key].is_array() || s[key].empty())
        return InvalidArgument("{}: '{}' must be a non-empty list of schemas", what_, key);
      return AnyOf(std::vector<json>(s[key].begin(), s[key].end()), depth);
    }
    if (s.contains("const")) return Literals(json::array({s["const"]}));
    if (s.contains("enum")) {
      if (!s["enum"].is_array() || s["enum"].empty())
        return InvalidArgument("{}: 'enum' must be a non-empty list", what_);
      return Literals(s["enum"]);
    }
    if (s.contains("type") && s["type"].is_array()) {
      std::vector<json> alternatives;
      for (const json& t : s["type"]) {
        json one = s;
        one["type"] = t;
        // A type's keywords say nothing of the other types' values.
        if (t != "string")
          for (std::string_view k : kStringKeywords) one.erase(std::string(k));
        if (t != "integer" && t != "number")
          for (std::string_view k : kBoundKeywords) one.erase(std::string(k));
        alternatives.push_back(std::move(one));
      }
      if (alternatives.empty()) return InvalidArgument("{}: 'type' must not be empty", what_);
      return AnyOf(alternatives, depth);
    }
    std::string type;
    if (s.contains("type")) {
      if (!s["type"].is_string())
        return InvalidArgument("{}: 'type' must be a string or a list of strings", what_);
      type = s["type"].get<std::string>();
    } else if (s.contains("properties") || s.contains("required")) {
      type = "object";
    } else if (s.contains("items") || s.contains("minItems") || s.contains("maxItems")) {
      type = "array";
    }
    SchemaNode n;
    if (type.empty()) return Add(n);
    if (type == "object") return Object(s, depth);
    if (type == "array") return Array(s, depth);
    static const std::map<std::string, SchemaNode::Kind> kScalars = {
        {"string", SchemaNode::Kind::kString},
        {"number", SchemaNode::Kind::kNumber},
        {"integer", SchemaNode::Kind::kInteger},
        {"boolean", SchemaNode::Kind::kBoolean},
        {"null", SchemaNode::Kind::kNull}};
    auto it = kScalars.find(type);
    if (it == kScalars.end()) return InvalidArgument("{}: unknown type '{}'", what_, type);
    n.kind = it->second;
    if (n.kind == SchemaNode::Kind::kString) {
      XI_ASSIGN_OR_RETURN(n.text_dfa, StringDfa(s));
    } else if (n.kind == SchemaNode::Kind::kInteger) {
      XI_ASSIGN_OR_RETURN(n.text_dfa, IntegerDfa(s));
    } else if (n.kind == SchemaNode::Kind::kNumber) {
      XI_ASSIGN_OR_RETURN(n.text_dfa, NumberDfa(s));
    }
    return Add(n);
  }

  // The automaton of a string with `pattern` or `minLength` / `maxLength`; null for any string.
  StatusOr<std::shared_ptr<const RegexDfa>> StringDfa(const json& s) {
    std::shared_ptr<const RegexDfa> pattern, length;
    if (s.contains("pattern")) {
      if (!s["pattern"].is_string())
        return InvalidArgument("{}: 'pattern' must be a string", what_);
      // JSON Schema's pattern is a search: it matches anywhere in the string unless anchored.
      RegexAnchors anchors;
      XI_ASSIGN_OR_RETURN(RegexNode content, ParseRegex(s["pattern"].get<std::string>(),
                                                        Part("a string's ", "pattern"), &anchors));
      std::vector<RegexNode> parts;
      if (!anchors.start) parts.push_back(RegexRepeat(AnyCharacter(), 0, -1));
      parts.push_back(std::move(content));
      if (!anchors.end) parts.push_back(RegexRepeat(AnyCharacter(), 0, -1));
      XI_ASSIGN_OR_RETURN(pattern, RegexDfa::Compile(JsonStringOf(RegexConcat(std::move(parts))),
                                                     Part("a string's ", "pattern")));
    }
    if (s.contains("minLength") || s.contains("maxLength")) {
      int32_t bounds[2] = {0, -1};
      const char* keys[2] = {"minLength", "maxLength"};
      for (int i = 0; i < 2; ++i) {
        if (!s.contains(keys[i])) continue;
        const json& v = s[keys[i]];
        if (!v.is_number_integer() || v.get<int64_t>() < 0)
          return InvalidArgument("{}: '{}' must be a non-negative integer", what_, keys[i]);
        if (v.get<int64_t>() > kMaxRegexRepeat)
          return Unimplemented("{}: a '{}' above {} is not supported", what_, keys[i],
                               kMaxRegexRepeat);
        bounds[i] = static_cast<int32_t>(v.get<int64_t>());
      }
      if (bounds[1] >= 0 && bounds[1] < bounds[0])
        return InvalidArgument("{}: 'maxLength' is below 'minLength'", what_);
      XI_ASSIGN_OR_RETURN(
          length, RegexDfa::Compile(JsonStringOf(RegexRepeat(AnyCharacter(), bounds[0], bounds[1])),
                                    Part("a string's ", "length")));
    }
    // Both: the texts both allow (the two spell each character alike, so these are the spellings
    // of the strings both allow).
    if (pattern && length)
      return RegexDfa::Intersect(*pattern, *length, Part("a string's ", "pattern and length"));
    return pattern ? pattern : length;
  }

  // One bound a schema sets (minimum, maximum, exclusiveMinimum, exclusiveMaximum, or draft 4's
  // exclusive booleans beside minimum / maximum): x >= value (strict: >), or x <= value (<).
  struct Limit {
    const char* key;
    bool upper;
    bool strict;
    double value;
    std::optional<int64_t> whole;  // the value, when a whole number (exactly)
  };

  StatusOr<std::vector<Limit>> Limits(const json& s) const {
    auto flag = [&](const char* key) { return s.contains(key) && s[key] == true; };
    const Limit keys[] = {{"minimum", false, flag("exclusiveMinimum"), 0, {}},
                          {"exclusiveMinimum", false, true, 0, {}},
                          {"maximum", true, flag("exclusiveMaximum"), 0, {}},
                          {"exclusiveMaximum", true, true, 0, {}}};
    constexpr int64_t kLimit = 1'000'000'000'000'000'000;  // far from int64's edges
    std::vector<Limit> limits;
    for (Limit l : keys) {
      if (!s.contains(l.key) || s[l.key].is_boolean()) continue;
      const json& v = s[l.key];
      if (!v.is_number()) return InvalidArgument("{}: '{}' must be a number", what_, l.key);
      l.value = v.get<double>();
      if (!(std::fabs(l.value) <= static_cast<double>(kLimit)) ||
          (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(kLimit)) ||
          (v.is_number_integer() && !v.is_number_unsigned() && v.get<int64_t>() < -kLimit))
        return Unimplemented("{}: a '{}' beyond +-10^18 is not supported", what_, l.key);
      if (v.is_number_integer()) {
        l.whole =
            v.is_number_unsigned() ? static_cast<int64_t>(v.get<uint64_t>()) : v.get<int64_t>();
      } else if (std::floor(l.value) == l.value) {
        l.whole = static_cast<int64_t>(l.value);
      }
      limits.push_back(l);
    }
    return limits;
  }

  // The automaton of an integer with bounds (any numbers: 0.5 as a minimum is 1); null for any
  // integer.
  StatusOr<std::shared_ptr<const RegexDfa>> IntegerDfa(const json& s) {
    XI_ASSIGN_OR_RETURN(std::vector<Limit> limits, Limits(s));
    std::optional<int64_t> lo, hi;
    for (const Limit& l : limits) {
      // The nearest integer the bound admits.
      const int64_t b =
          l.whole ? *l.whole + (l.strict ? (l.upper ? -1 : 1) : 0)
                  : static_cast<int64_t>(l.upper ? std::floor(l.value) : std::ceil(l.value));
      std::optional<int64_t>& bound = l.upper ? hi : lo;
      bound = !bound ? b : l.upper ? std::min(*bound, b) : std::max(*bound, b);
    }
    if (!lo && !hi) return std::shared_ptr<const RegexDfa>();
    if (lo && hi && *lo > *hi)
      return InvalidArgument("{}: no integer lies within the schema's minimum and maximum", what_);
    return RegexDfa::Compile(JsonIntegerIn(lo, hi), Part("an integer's ", "range"));
  }

  // The automaton of a number with bounds that are whole numbers (the number is then written
  // without an exponent); null for any number.
  StatusOr<std::shared_ptr<const RegexDfa>> NumberDfa(const json& s) {
    XI_ASSIGN_OR_RETURN(std::vector<Limit> limits, Limits(s));
    std::optional<NumberBound> lower, upper;
    for (const Limit& l : limits) {
      if (!l.whole)
        return Unimplemented("{}: '{}' is not supported on a number unless a whole number (got {})",
                             what_, l.key, l.value);
      const NumberBound b{*l.whole, l.strict};
      std::optional<NumberBound>& bound = l.upper ? upper : lower;
      // The tighter of two: further in, or as far and strict.
      const bool tighter = !bound || (l.upper ? b.value < bound->value : b.value > bound->value) ||
                           (b.value == bound->value && b.strict);
      if (tighter) bound = b;
    }
    if (!lower && !upper) return std::shared_ptr<const RegexDfa>();
    return RegexDfa::Compile(JsonNumberIn(lower, upper), Part("a number's ", "range"));
  }

  // What a string's pattern or an integer's range errors name: "<what>: a string's pattern".
  std::string Part(const char* whose, const char* keyword) const {
    return what_ + ": " + whose + keyword;
  }

  // Every node's first bytes, and the alternative of every anyOf by first byte (they must start
  // differently: that is how the matcher picks one with a single state). Filled once every node
  // exists ($ref placeholders included).
  Status FillAlternatives() {
    for (size_t i = 0; i < out_.nodes.size(); ++i)
      if (out_.nodes[i].kind == SchemaNode::Kind::kAnyOf) MakeDiscriminatedUnion(i);
    for (size_t i = 0; i < out_.nodes.size(); ++i) {
      std::set<int32_t> visiting;
      XI_ASSIGN_OR_RETURN(out_.nodes[i].first_bytes,
                          FirstBytesOf(static_cast<int32_t>(i), visiting));
    }
    for (SchemaNode& n : out_.nodes) {
      if (n.kind != SchemaNode::Kind::kAnyOf) continue;
      n.alternative_by_first_byte.fill(-1);
      for (size_t a = 0; a < n.values.size(); ++a) {
        const FirstBytes& first = out_.nodes[static_cast<size_t>(n.values[a])].first_bytes;
        for (int b = 0; b < 256; ++b) {
          if (!first[static_cast<size_t>(b)]) continue;
          int8_t& slot = n.alternative_by_first_byte[static_cast<size_t>(b)];
          if (slot >= 0)
            return Unimplemented(
                "{}: anyOf / oneOf alternatives that can both start with '{}' are not supported "
                "(guided decoding tells alternatives apart by their first character)",
                what_, static_cast<char>(b));
          slot = static_cast<int8_t>(a);
        }
      }
    }
    return Status::Ok();
  }

  JsonSchema Take() { return std::move(out_); }

  // An anyOf whose alternatives are all objects led by the same required property with enum /
  // const values no two alternatives share becomes one object that picks its alternative once
  // that value is read (SchemaNode::union_alternatives). Anything else is left as it is.
  void MakeDiscriminatedUnion(size_t id) {
    const std::vector<int32_t> alternatives = out_.nodes[id].values;
    if (alternatives.size() < 2) return;
    std::string key;
    std::vector<std::string> literals;
    std::vector<int32_t> owner;
    std::set<std::string> seen;
    for (size_t a = 0; a < alternatives.size(); ++a) {
      const SchemaNode& o = out_.nodes[static_cast<size_t>(alternatives[a])];
      if (o.kind != SchemaNode::Kind::kObject || o.keys.empty() || (o.required & 1) == 0 ||
          !o.union_alternatives.empty())
        return;
      if (a == 0) key = o.keys[0];
      if (o.keys[0] != key) return;
      const SchemaNode& d = out_.nodes[static_cast<size_t>(o.values[0])];
      if (d.kind != SchemaNode::Kind::kLiterals) return;
      for (const std::string& l : d.literals) {
        if (!seen.insert(l).second) return;
        literals.push_back(l);
        owner.push_back(static_cast<int32_t>(a));
      }
    }
    if (literals.size() > JsonSchema::kMaxLiterals) return;
    SchemaNode discriminator;
    discriminator.kind = SchemaNode::Kind::kLiterals;
    discriminator.literals = std::move(literals);
    const int32_t discriminator_id = Add(std::move(discriminator));
    SchemaNode& n = out_.nodes[id];  // after Add: the vector may have moved
    n.kind = SchemaNode::Kind::kObject;
    n.keys = {key};
    n.values = {discriminator_id};
    n.required = 1;
    n.union_alternatives = alternatives;
    n.union_owner = std::move(owner);
  }

 private:
  int32_t Add(SchemaNode n) {
    out_.nodes.push_back(std::move(n));
    return static_cast<int32_t>(out_.nodes.size() - 1);
  }

  StatusOr<int32_t> Ref(const json& s, int depth) {
    for (auto it = s.begin(); it != s.end(); ++it)
      if (it.key() != "$ref" && !IsAnnotation(it.key()))
        return Unimplemented("{}: '{}' beside '$ref' is not supported", what_, it.key());
    if (!s["$ref"].is_string()) return InvalidArgument("{}: '$ref' must be a string", what_);
    const std::string ref = s["$ref"].get<std::string>();
    if (auto it = refs_.find(ref); it != refs_.end()) return it->second;
    const json* target = nullptr;
    if (ref == "#") {
      target = &root_;
    } else {
      for (const char* prefix : {"#/$defs/", "#/definitions/"}) {
        const std::string p = prefix;
        if (ref.rfind(p, 0) != 0) continue;
        const std::string section = p.substr(2, p.size() - 3);
        const std::string name = ref.substr(p.size());
        if (root_.contains(section) && root_[section].is_object() && root_[section].contains(name))
          target = &root_[section][name];
      }
    }
    if (target == nullptr)
      return InvalidArgument("{}: '$ref' {} does not name a schema in $defs or definitions", what_,
                             ref);
    // A placeholder first, so that a recursive reference finds it.
    const int32_t placeholder = Add(SchemaNode{});
    refs_[ref] = placeholder;
    XI_ASSIGN_OR_RETURN(int32_t compiled, Compile(*target, depth + 1));
    out_.nodes[static_cast<size_t>(placeholder)] = out_.nodes[static_cast<size_t>(compiled)];
    return placeholder;
  }

  StatusOr<int32_t> AnyOf(const std::vector<json>& alternatives, int depth) {
    if (alternatives.size() > 64)
      return Unimplemented("{}: more than 64 alternatives are not supported", what_);
    SchemaNode n;
    n.kind = SchemaNode::Kind::kAnyOf;
    for (const json& a : alternatives) {
      XI_ASSIGN_OR_RETURN(int32_t v, Compile(a, depth + 1));
      n.values.push_back(v);
    }
    return Add(std::move(n));
  }

  StatusOr<int32_t> Literals(const json& values) {
    if (values.size() > JsonSchema::kMaxLiterals)
      return Unimplemented("{}: an enum of more than {} values is not supported", what_,
                           JsonSchema::kMaxLiterals);
    SchemaNode n;
    n.kind = SchemaNode::Kind::kLiterals;
    for (const json& v : values) {
      std::string text = v.dump();
      if (text.size() > JsonSchema::kMaxLiteralBytes)
        return Unimplemented("{}: an enum or const value longer than {} bytes", what_,
                             JsonSchema::kMaxLiteralBytes);
      n.literals.push_back(std::move(text));
    }
    return Add(std::move(n));
  }

  StatusOr<int32_t> Object(const json& s, int depth) {
    SchemaNode n;
    n.kind = SchemaNode::Kind::kObject;
    if (s.contains("additionalProperties")) {
      const json& extra = s["additionalProperties"];
      // Only the listed properties are generated, which any additionalProperties admits; a map
      // (a schema for the other keys and no properties) needs keys the matcher cannot invent.
      if (!extra.is_boolean() && !(extra.is_object() && s.contains("properties")))
        return Unimplemented(
            "{}: an object whose keys are free (additionalProperties with a schema and no "
            "properties) is not supported",
            what_);
    }
    json properties = s.value("properties", json::object());
    if (!properties.is_object())
      return InvalidArgument("{}: 'properties' must be an object", what_);
    std::set<std::string> required;
    if (s.contains("required")) {
      if (!s["required"].is_array()) return InvalidArgument("{}: 'required' must be a list", what_);
      for (const json& r : s["required"]) {
        if (!r.is_string()) return InvalidArgument("{}: 'required' must list strings", what_);
        required.insert(r.get<std::string>());
        // A required key without a schema: any value.
        if (!properties.contains(r.get<std::string>())) properties[r.get<std::string>()] = true;
      }
    }
    if (properties.empty() && !s.contains("properties")) {
      n.kind = SchemaNode::Kind::kAny;  // any object
      n.any_open = '{';
      return Add(std::move(n));
    }
    if (properties.size() > JsonSchema::kMaxProperties)
      return Unimplemented("{}: objects of more than {} properties are not supported", what_,
                           JsonSchema::kMaxProperties);
    for (auto it = properties.begin(); it != properties.end(); ++it) {
      if (required.count(it.key())) n.required |= uint64_t{1} << n.keys.size();
      std::string key = json(it.key()).dump();
      if (key.size() > JsonSchema::kMaxLiteralBytes)
        return Unimplemented("{}: a property name longer than {} bytes", what_,
                             JsonSchema::kMaxLiteralBytes);
      n.keys.push_back(std::move(key));
      XI_ASSIGN_OR_RETURN(int32_t v, Compile(it.value(), depth + 1));
      n.values.push_back(v);
    }
    return Add(std::move(n));
  }

  StatusOr<int32_t> Array(const json& s, int depth) {
    SchemaNode n;
    n.kind = SchemaNode::Kind::kArray;
    for (const char* key : {"minItems", "maxItems"}) {
      if (!s.contains(key)) continue;
      // Parsed JSON holds it unsigned, a schema built in code signed.
      const json& v = s[key];
      const bool valid = v.is_number_unsigned() ? v.get<uint64_t>() <= (1u << 30)
                                                : v.is_number_integer() && v.get<int64_t>() >= 0 &&
                                                      v.get<int64_t>() <= (1 << 30);
      if (!valid) return InvalidArgument("{}: '{}' must be a non-negative integer", what_, key);
      int32_t& bound = std::string_view(key) == "minItems" ? n.min_items : n.max_items;
      bound = static_cast<int32_t>(v.get<int64_t>());
    }
    if (n.max_items >= 0 && n.min_items > n.max_items)
      return InvalidArgument("{}: minItems {} is larger than maxItems {}", what_, n.min_items,
                             n.max_items);
    XI_ASSIGN_OR_RETURN(int32_t items, Compile(s.value("items", json(true)), depth + 1));
    n.values.push_back(items);
    return Add(std::move(n));
  }

  StatusOr<FirstBytes> FirstBytesOf(int32_t id, std::set<int32_t>& visiting) {
    const SchemaNode& n = out_.nodes[static_cast<size_t>(id)];
    FirstBytes f;
    auto number = [&f] {
      f.set('-');
      for (char c = '0'; c <= '9'; ++c) f.set(static_cast<uint8_t>(c));
    };
    switch (n.kind) {
      case SchemaNode::Kind::kAny:
        if (n.any_open != 0) {
          f.set(static_cast<uint8_t>(n.any_open));
        } else {
          for (char c : std::string_view("{[\"tfn")) f.set(static_cast<uint8_t>(c));
          number();
        }
        break;
      case SchemaNode::Kind::kObject:
        f.set('{');
        break;
      case SchemaNode::Kind::kArray:
        f.set('[');
        break;
      case SchemaNode::Kind::kString:
        f.set('"');
        break;
      case SchemaNode::Kind::kNumber:
      case SchemaNode::Kind::kInteger:
        number();
        break;
      case SchemaNode::Kind::kBoolean:
        f.set('t');
        f.set('f');
        break;
      case SchemaNode::Kind::kNull:
        f.set('n');
        break;
      case SchemaNode::Kind::kLiterals:
        for (const std::string& l : n.literals) f.set(static_cast<uint8_t>(l[0]));
        break;
      case SchemaNode::Kind::kAnyOf:
        if (!visiting.insert(id).second)
          return Unimplemented("{}: an anyOf that refers to itself before any character", what_);
        for (int32_t v : n.values) {
          XI_ASSIGN_OR_RETURN(FirstBytes g, FirstBytesOf(v, visiting));
          f |= g;
        }
        visiting.erase(id);
        break;
    }
    return f;
  }

  const json& root_;
  const std::string what_;
  JsonSchema out_;
  std::map<std::string, int32_t> refs_;
};

}  // namespace

StatusOr<std::shared_ptr<const JsonSchema>> CompileJsonSchema(const json& schema,
                                                              const std::string& what) {
  Compiler c(schema, what);
  XI_ASSIGN_OR_RETURN(int32_t root, c.Compile(schema, 0));
  XI_RETURN_IF_ERROR(c.FillAlternatives());
  auto out = std::make_shared<JsonSchema>(c.Take());
  out->root = root;
  return std::shared_ptr<const JsonSchema>(std::move(out));
}

}  // namespace xinfer
