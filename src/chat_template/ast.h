// Syntax tree of a parsed template. Built once by the parser, then only read: one tree is
// rendered concurrently by many threads, so nothing here may be mutated during rendering.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chat_template/value.h"

namespace xinfer::jinja {

struct Expr;
struct Stmt;
using ExprPtr = std::unique_ptr<Expr>;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

enum class ExprKind {
  kLiteral,  // literal (scalar only)
  kName,     // name
  kGetAttr,  // a.name
  kGetItem,  // a[b]
  kSlice,    // items: start, stop, step (each may be null); only as b of kGetItem
  kNeg,
  kPos,
  kNot,     // a
  kBinary,  // a op b
  kAnd,
  kOr,       // a, b
  kCompare,  // items[0] ops[0] items[1] ops[1] items[2] ...
  kCond,     // a if b else c (c may be null)
  kCall,     // a(args)
  kFilter,   // a | name(args); a is null inside a filter block
  kTest,     // a is [not] name(args)
  kList,
  kTuple,  // items
  kDict,   // items: key0, value0, key1, value1, ...
};

enum class Op {
  kNone,
  kAdd,
  kSub,
  kMul,
  kDiv,
  kFloorDiv,
  kMod,
  kPow,
  kConcat,
  kEq,
  kNe,
  kLt,
  kLe,
  kGt,
  kGe,
  kIn,
  kNotIn,
};

struct Args {
  std::vector<ExprPtr> pos;
  std::vector<std::pair<std::string, ExprPtr>> kw;
};

struct Expr {
  ExprKind kind;
  int line = 0;
  int depth = 1;  // height of this subtree; bounded by the parser
  Op op = Op::kNone;
  bool negated = false;  // kTest with `is not`
  std::string name;      // kName, kGetAttr, kFilter, kTest
  Value literal;         // kLiteral
  ExprPtr a, b, c;
  std::vector<ExprPtr> items;
  std::vector<Op> ops;
  Args args;
};

enum class StmtKind {
  kText,      // text
  kOutput,    // {{ expr }}
  kIf,        // conds[i] -> bodies[i]; else_body
  kFor,       // targets in expr [if cond]: body; else_body
  kSet,       // targets (or targets[0].attr) = expr
  kSetBlock,  // {% set targets[0] %}body{% endset %}
  kMacro,     // name(params = defaults): body
  kBreak,
  kContinue,
  kScope,  // a block whose body is simply rendered ({% generation %})
};

struct Stmt {
  StmtKind kind;
  int line = 0;
  std::string text;
  ExprPtr expr;
  ExprPtr cond;
  std::vector<ExprPtr> conds;
  std::vector<Body> bodies;
  Body body;
  Body else_body;
  std::vector<std::string> targets;
  std::string attr;  // kSet on a namespace attribute
  std::string name;  // kMacro
  std::vector<std::string> params;
  std::vector<ExprPtr> defaults;  // one per param, null when none
};

struct TemplateAst {
  Body body;
};

}  // namespace xinfer::jinja
