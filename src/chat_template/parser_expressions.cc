// Jinja2's expression grammar: tuples, conditional expressions, boolean and comparison
// operators, arithmetic, literals, attribute/item access, calls, filters and tests.
#include "chat_template/builtins.h"
#include "chat_template/parser_impl.h"

namespace xinfer::jinja {

bool Parser::AtTupleEnd() const {
  const Token& t = Cur();
  return t.type == Tok::kVarEnd || t.type == Tok::kBlockEnd || t.type == Tok::kEof ||
         IsOp(t, ")") || IsName(t, "if") || IsName(t, "recursive");
}

StatusOr<ExprPtr> Parser::ParseTuple(bool with_condexpr, bool explicit_parens) {
  const Token start = Cur();
  if (explicit_parens && IsOp(Cur(), ")")) return Finish(Node(ExprKind::kTuple, start), start);
  XI_ASSIGN_OR_RETURN(ExprPtr first, with_condexpr ? ParseExpression() : ParseOr());
  if (!IsOp(Cur(), ",")) return first;
  auto tuple = Node(ExprKind::kTuple, start);
  tuple->items.push_back(std::move(first));
  while (AcceptOp(",")) {
    if (AtTupleEnd()) break;
    XI_ASSIGN_OR_RETURN(ExprPtr item, with_condexpr ? ParseExpression() : ParseOr());
    tuple->items.push_back(std::move(item));
  }
  return Finish(std::move(tuple), start);
}

StatusOr<ExprPtr> Parser::ParseExpression() {
  Nest nest(this);
  const Token start = Cur();
  XI_RETURN_IF_ERROR(CheckNest(start));
  XI_ASSIGN_OR_RETURN(ExprPtr expr, ParseOr());
  while (AcceptName("if")) {
    auto cond = Node(ExprKind::kCond, start);
    cond->a = std::move(expr);
    XI_ASSIGN_OR_RETURN(cond->b, ParseOr());
    if (AcceptName("else")) {
      XI_ASSIGN_OR_RETURN(cond->c, ParseExpression());
    }
    XI_ASSIGN_OR_RETURN(expr, Finish(std::move(cond), start));
  }
  return expr;
}

StatusOr<ExprPtr> Parser::ParseOr() {
  const Token start = Cur();
  XI_ASSIGN_OR_RETURN(ExprPtr left, ParseAnd());
  while (AcceptName("or")) {
    auto node = Node(ExprKind::kOr, start);
    node->a = std::move(left);
    XI_ASSIGN_OR_RETURN(node->b, ParseAnd());
    XI_ASSIGN_OR_RETURN(left, Finish(std::move(node), start));
  }
  return left;
}

StatusOr<ExprPtr> Parser::ParseAnd() {
  const Token start = Cur();
  XI_ASSIGN_OR_RETURN(ExprPtr left, ParseNot());
  while (AcceptName("and")) {
    auto node = Node(ExprKind::kAnd, start);
    node->a = std::move(left);
    XI_ASSIGN_OR_RETURN(node->b, ParseNot());
    XI_ASSIGN_OR_RETURN(left, Finish(std::move(node), start));
  }
  return left;
}

StatusOr<ExprPtr> Parser::ParseNot() {
  const Token start = Cur();
  if (IsName(Cur(), "not") && !IsName(Peek(), "in")) {
    Advance();
    Nest nest(this);
    XI_RETURN_IF_ERROR(CheckNest(start));
    auto node = Node(ExprKind::kNot, start);
    XI_ASSIGN_OR_RETURN(node->a, ParseNot());
    return Finish(std::move(node), start);
  }
  return ParseCompare();
}

StatusOr<ExprPtr> Parser::ParseCompare() {
  const Token start = Cur();
  XI_ASSIGN_OR_RETURN(ExprPtr first, ParseBinary(0));
  auto node = Node(ExprKind::kCompare, start);
  while (true) {
    Op op = Op::kNone;
    const Token& t = Cur();
    if (t.type == Tok::kOp) {
      if (t.text == "==") op = Op::kEq;
      if (t.text == "!=") op = Op::kNe;
      if (t.text == "<") op = Op::kLt;
      if (t.text == "<=") op = Op::kLe;
      if (t.text == ">") op = Op::kGt;
      if (t.text == ">=") op = Op::kGe;
      if (op != Op::kNone) Advance();
    } else if (IsName(t, "in")) {
      op = Op::kIn;
      Advance();
    } else if (IsName(t, "not") && IsName(Peek(), "in")) {
      op = Op::kNotIn;
      Advance();
      Advance();
    }
    if (op == Op::kNone) break;
    if (node->items.empty()) node->items.push_back(std::move(first));
    node->ops.push_back(op);
    XI_ASSIGN_OR_RETURN(ExprPtr operand, ParseBinary(0));
    node->items.push_back(std::move(operand));
    if (node->items.size() > static_cast<size_t>(max_depth_)) {
      return Error(start, "comparison chain is too long");
    }
  }
  if (node->items.empty()) return first;
  return Finish(std::move(node), start);
}

StatusOr<ExprPtr> Parser::ParseBinary(int level) {
  if (level == 4) return ParseUnary(true);
  const Token start = Cur();
  XI_ASSIGN_OR_RETURN(ExprPtr left, ParseBinary(level + 1));
  while (true) {
    const Token& t = Cur();
    if (t.type != Tok::kOp) break;
    Op op = Op::kNone;
    if (level == 0 && t.text == "+") op = Op::kAdd;
    if (level == 0 && t.text == "-") op = Op::kSub;
    if (level == 1 && t.text == "~") op = Op::kConcat;
    if (level == 2 && t.text == "*") op = Op::kMul;
    if (level == 2 && t.text == "/") op = Op::kDiv;
    if (level == 2 && t.text == "//") op = Op::kFloorDiv;
    if (level == 2 && t.text == "%") op = Op::kMod;
    if (level == 3 && t.text == "**") op = Op::kPow;
    if (op == Op::kNone) break;
    Advance();
    auto node = Node(ExprKind::kBinary, start);
    node->op = op;
    node->a = std::move(left);
    XI_ASSIGN_OR_RETURN(node->b, ParseBinary(level + 1));
    XI_ASSIGN_OR_RETURN(left, Finish(std::move(node), start));
  }
  return left;
}

StatusOr<ExprPtr> Parser::ParseUnary(bool with_filter) {
  Nest nest(this);
  const Token start = Cur();
  XI_RETURN_IF_ERROR(CheckNest(start));
  ExprPtr node;
  if (IsOp(start, "-") || IsOp(start, "+")) {
    Advance();
    node = Node(IsOp(start, "-") ? ExprKind::kNeg : ExprKind::kPos, start);
    XI_ASSIGN_OR_RETURN(node->a, ParseUnary(false));
    XI_ASSIGN_OR_RETURN(node, Finish(std::move(node), start));
  } else {
    XI_ASSIGN_OR_RETURN(node, ParsePrimary());
  }
  XI_ASSIGN_OR_RETURN(node, ParsePostfix(std::move(node), with_filter));
  return node;
}

StatusOr<ExprPtr> Parser::ParsePrimary() {
  const Token t = Cur();
  if (t.type == Tok::kName) {
    Advance();
    auto node = Node(ExprKind::kLiteral, t);
    if (t.text == "true" || t.text == "True") {
      node->literal = Value::Bool(true);
    } else if (t.text == "false" || t.text == "False") {
      node->literal = Value::Bool(false);
    } else if (t.text == "none" || t.text == "None") {
      node->literal = Value::None();
    } else {
      node->kind = ExprKind::kName;
      node->name = t.text;
    }
    return node;
  }
  if (t.type == Tok::kString) {
    std::string s;
    while (Cur().type == Tok::kString) {  // adjacent literals concatenate
      s += Cur().text;
      Advance();
    }
    auto node = Node(ExprKind::kLiteral, t);
    node->literal = Value::Str(std::move(s));
    return node;
  }
  if (t.type == Tok::kInt || t.type == Tok::kFloat) {
    Advance();
    auto node = Node(ExprKind::kLiteral, t);
    node->literal = t.type == Tok::kInt ? Value::Int(t.ival) : Value::Float(t.fval);
    return node;
  }
  if (AcceptOp("(")) {
    XI_ASSIGN_OR_RETURN(ExprPtr inner, ParseTuple(true, true));
    XI_RETURN_IF_ERROR(ExpectOp(")"));
    return inner;
  }
  if (IsOp(t, "[") || IsOp(t, "{")) {
    const bool is_list = IsOp(t, "[");
    const char* close = is_list ? "]" : "}";
    Advance();
    auto node = Node(is_list ? ExprKind::kList : ExprKind::kDict, t);
    while (!IsOp(Cur(), close)) {
      if (!node->items.empty()) {
        XI_RETURN_IF_ERROR(ExpectOp(","));
        if (IsOp(Cur(), close)) break;
      }
      XI_ASSIGN_OR_RETURN(ExprPtr item, ParseExpression());
      node->items.push_back(std::move(item));
      if (!is_list) {
        XI_RETURN_IF_ERROR(ExpectOp(":"));
        XI_ASSIGN_OR_RETURN(ExprPtr value, ParseExpression());
        node->items.push_back(std::move(value));
      }
    }
    Advance();
    return Finish(std::move(node), t);
  }
  return Error(t, "expected an expression, got " + Describe(t));
}

StatusOr<ExprPtr> Parser::ParsePostfix(ExprPtr node, bool with_filter) {
  while (true) {
    const Token t = Cur();
    if (IsOp(t, ".")) {
      Advance();
      const Token attr = Cur();
      if (attr.type == Tok::kName) {
        auto get = Node(ExprKind::kGetAttr, t);
        get->a = std::move(node);
        get->name = attr.text;
        node = std::move(get);
      } else if (attr.type == Tok::kInt) {
        auto get = Node(ExprKind::kGetItem, t);
        get->a = std::move(node);
        get->b = Node(ExprKind::kLiteral, attr);
        get->b->literal = Value::Int(attr.ival);
        node = std::move(get);
      } else {
        return Error(attr, "expected an attribute name after '.', got " + Describe(attr));
      }
      Advance();
    } else if (IsOp(t, "[")) {
      Advance();
      auto get = Node(ExprKind::kGetItem, t);
      get->a = std::move(node);
      XI_ASSIGN_OR_RETURN(get->b, ParseSubscript());
      XI_RETURN_IF_ERROR(ExpectOp("]"));
      node = std::move(get);
    } else if (IsOp(t, "(")) {
      auto call = Node(ExprKind::kCall, t);
      call->a = std::move(node);
      XI_RETURN_IF_ERROR(ParseCallArgs(&call->args));
      node = std::move(call);
    } else if (with_filter && IsOp(t, "|")) {
      Advance();
      auto filter = Node(ExprKind::kFilter, t);
      filter->a = std::move(node);
      const Token name = Cur();
      XI_ASSIGN_OR_RETURN(filter->name, ExpectName());
      if (FindFilter(filter->name) == nullptr) {
        return Error(name, fmt::format("no filter named '{}'", filter->name));
      }
      if (IsOp(Cur(), "(")) XI_RETURN_IF_ERROR(ParseCallArgs(&filter->args));
      node = std::move(filter);
    } else if (with_filter && IsName(t, "is")) {
      Advance();
      auto test = Node(ExprKind::kTest, t);
      test->a = std::move(node);
      test->negated = AcceptName("not");
      const Token name = Cur();
      XI_ASSIGN_OR_RETURN(test->name, ExpectName());
      if (FindTest(test->name) == nullptr) {
        return Error(name, fmt::format("no test named '{}'", test->name));
      }
      const Token& n = Cur();
      if (IsOp(n, "(")) {
        XI_RETURN_IF_ERROR(ParseCallArgs(&test->args));
      } else if ((n.type == Tok::kName || n.type == Tok::kString || n.type == Tok::kInt ||
                  n.type == Tok::kFloat || IsOp(n, "[") || IsOp(n, "{")) &&
                 !IsName(n, "else") && !IsName(n, "or") && !IsName(n, "and") && !IsName(n, "is") &&
                 !IsName(n, "if") && !IsName(n, "in") && !IsName(n, "not")) {
        Nest nest(this);
        XI_RETURN_IF_ERROR(CheckNest(n));
        XI_ASSIGN_OR_RETURN(ExprPtr arg, ParsePrimary());
        XI_ASSIGN_OR_RETURN(arg, ParsePostfix(std::move(arg), false));
        test->args.pos.push_back(std::move(arg));
      }
      node = std::move(test);
    } else {
      return node;
    }
    XI_ASSIGN_OR_RETURN(node, Finish(std::move(node), t));
  }
}

StatusOr<ExprPtr> Parser::ParseSubscript() {
  const Token start = Cur();
  ExprPtr first;
  if (!IsOp(Cur(), ":")) {
    XI_ASSIGN_OR_RETURN(first, ParseExpression());
    if (!IsOp(Cur(), ":")) return first;
  }
  Advance();  // ':'
  auto slice = Node(ExprKind::kSlice, start);
  slice->items.push_back(std::move(first));
  ExprPtr stop, step;
  if (!IsOp(Cur(), "]") && !IsOp(Cur(), ":")) {
    XI_ASSIGN_OR_RETURN(stop, ParseExpression());
  }
  if (AcceptOp(":") && !IsOp(Cur(), "]")) {
    XI_ASSIGN_OR_RETURN(step, ParseExpression());
  }
  slice->items.push_back(std::move(stop));
  slice->items.push_back(std::move(step));
  return Finish(std::move(slice), start);
}

Status Parser::ParseCallArgs(Args* args) {
  XI_RETURN_IF_ERROR(ExpectOp("("));
  bool first = true;
  while (!IsOp(Cur(), ")")) {
    if (!first) {
      XI_RETURN_IF_ERROR(ExpectOp(","));
      if (IsOp(Cur(), ")")) break;
    }
    first = false;
    if (IsOp(Cur(), "*") || IsOp(Cur(), "**")) {
      return Error(Cur(), "*args and **kwargs in calls are not supported");
    }
    if (Cur().type == Tok::kName && IsOp(Peek(), "=")) {
      std::string name = Cur().text;
      Advance();
      Advance();
      XI_ASSIGN_OR_RETURN(ExprPtr value, ParseExpression());
      args->kw.emplace_back(std::move(name), std::move(value));
    } else {
      if (!args->kw.empty()) {
        return Error(Cur(), "positional argument follows keyword argument");
      }
      XI_ASSIGN_OR_RETURN(ExprPtr value, ParseExpression());
      args->pos.push_back(std::move(value));
    }
  }
  Advance();
  return Status::Ok();
}

}  // namespace xinfer::jinja
