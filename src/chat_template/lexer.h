// Tokenizer reproducing Jinja2's lexer with Hugging Face's settings (trim_blocks=True,
// lstrip_blocks=True, keep_trailing_newline=False): whitespace control is fully resolved here,
// so the parser sees data text exactly as it will be emitted.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace xinfer::jinja {

enum class Tok {
  kData,
  kVarBegin,
  kVarEnd,
  kBlockBegin,
  kBlockEnd,
  kName,
  kString,
  kInt,
  kFloat,
  kOp,
  kEof
};

struct Token {
  Tok type = Tok::kEof;
  std::string text;  // data, name, decoded string literal or operator spelling
  int64_t ival = 0;
  double fval = 0;
  size_t pos = 0;  // byte offset in the normalized source
  int line = 1;
};

// Maps byte offsets of the normalized source to "line L, column C" (1-based, columns in code
// points). Columns are computed only when an error is reported, keeping lexing linear.
class SourceMap {
 public:
  SourceMap() = default;
  explicit SourceMap(std::string source);
  const std::string& source() const { return src_; }
  int Line(size_t pos) const;
  std::string Where(size_t pos) const;

 private:
  std::string src_;
  std::vector<size_t> line_starts_;
};

struct LexResult {
  std::vector<Token> tokens;  // ends with kEof
  SourceMap map;
};

// Syntax errors are InvalidArgument("line L, column C: ...").
StatusOr<LexResult> Lex(std::string_view source);

}  // namespace xinfer::jinja
