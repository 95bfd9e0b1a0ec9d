// Recursive-descent parser following Jinja2's grammar and operator precedence.
#pragma once

#include <memory>
#include <string_view>

#include "base/status.h"
#include "chat_template/ast.h"

namespace xinfer::jinja {

// Syntax errors are InvalidArgument("line L, column C: ..."). Nesting of blocks and
// expressions beyond max_depth is a syntax error, so neither parsing nor evaluating (both
// recursive) can exhaust the stack.
StatusOr<std::unique_ptr<TemplateAst>> ParseTemplate(std::string_view source, int max_depth);

}  // namespace xinfer::jinja
