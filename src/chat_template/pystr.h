// Python-compatible text helpers: code point iteration with Python str semantics, Python's
// notion of whitespace, float repr and string repr. Jinja2 runs on Python str, which is code-point
// based, so every operation a template can observe (len, slicing, strip, ...) goes through these.
// The UTF-8 primitives themselves (AppendUtf8, ...) are in base/utf8.h.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/utf8.h"

namespace xinfer::jinja {

// Decodes one code point at s[*pos] and advances *pos. Bytes that are not well-formed UTF-8
// decode as themselves (one code point per byte, like a latin-1 view of them) so hostile input
// never desynchronises or reads out of bounds, and stray bytes keep their value.
uint32_t DecodeUtf8(std::string_view s, size_t* pos);
// Byte offsets of every code point start plus s.size() at the end.
std::vector<size_t> CodePointOffsets(std::string_view s);
size_t CodePointCount(std::string_view s);

// str.isspace() for one code point.
bool IsPyWhitespace(uint32_t cp);
// str.strip()/lstrip()/rstrip(); `chars` == nullptr means whitespace.
std::string PyStrip(std::string_view s, const std::string* chars, bool left, bool right);
// str.split(sep, maxsplit) / str.split(None, maxsplit) / rsplit. maxsplit < 0: unlimited.
std::vector<std::string> PySplit(std::string_view s, const std::string* sep, int64_t maxsplit,
                                 bool from_right);
std::vector<std::string> PySplitLines(std::string_view s);
// str.replace with Python's semantics for an empty `old`. count < 0: all.
std::string PyReplace(std::string_view s, std::string_view old, std::string_view repl,
                      int64_t count);
// Unicode simple case mapping per code point (utf8proc). Python's few one-to-many mappings
// (e.g. 'ß'.upper() == 'SS') are not reproduced.
std::string PyUpper(std::string_view s);
std::string PyLower(std::string_view s);
std::string PyCapitalize(std::string_view s);
// Python's str.title().
std::string PyTitleMethod(std::string_view s);

// repr(float) as CPython prints it: shortest round-trip digits, '1e+16', '1.0', 'inf'.
std::string PyFloatRepr(double v);
// repr(str): single quotes unless the text contains ' and no ".
std::string PyStrRepr(std::string_view s);
// Appends s as a JSON string the way json.dumps does (ensure_ascii selects \uXXXX escapes).
void AppendJsonString(std::string_view s, bool ensure_ascii, std::string* out);

}  // namespace xinfer::jinja
