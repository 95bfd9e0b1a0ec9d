// Template bodies and {% %} statements; the entry point ParseTemplate. Expressions are in
// parser_expressions.cc.
#include <algorithm>
#include <initializer_list>

#include "chat_template/parser.h"
#include "chat_template/parser_impl.h"

namespace xinfer::jinja {

StatusOr<Body> Parser::ParseBody(std::initializer_list<std::string_view> ends, std::string* found,
                                 const std::string& block, int open_line) {
  Body body;
  while (true) {
    const Token& t = Cur();
    if (t.type == Tok::kData) {
      auto s = std::make_unique<Stmt>();
      s->kind = StmtKind::kText;
      s->line = t.line;
      s->text = t.text;
      body.push_back(std::move(s));
      Advance();
    } else if (t.type == Tok::kVarBegin) {
      Advance();
      auto s = std::make_unique<Stmt>();
      s->kind = StmtKind::kOutput;
      s->line = t.line;
      XI_ASSIGN_OR_RETURN(s->expr, ParseTuple(true));
      if (Cur().type != Tok::kVarEnd) {
        return Error(Cur(), "expected end of print statement '}}', got " + Describe(Cur()));
      }
      Advance();
      body.push_back(std::move(s));
    } else if (t.type == Tok::kBlockBegin) {
      const Token& name = Peek();
      if (name.type != Tok::kName) {
        return Error(name, "expected a statement name after '{%', got " + Describe(name));
      }
      if (std::find(ends.begin(), ends.end(), name.text) != ends.end()) {
        *found = name.text;
        Advance();
        Advance();
        return body;
      }
      XI_ASSIGN_OR_RETURN(StmtPtr s, ParseStatement(ends, block));
      body.push_back(std::move(s));
    } else if (t.type == Tok::kEof) {
      if (ends.size() == 0) return body;
      std::string want;
      for (std::string_view e : ends) want += (want.empty() ? "'" : " or '") + std::string(e) + "'";
      return Error(t, fmt::format("unexpected end of template: expected {} to close the '{}' "
                                  "block opened at line {}",
                                  want, block, open_line));
    } else {
      return Error(t, "unexpected " + Describe(t));
    }
  }
}

StatusOr<StmtPtr> Parser::ParseStatement(std::initializer_list<std::string_view> outer_ends,
                                         const std::string& outer_block) {
  Nest nest(this);
  const Token& open = Cur();
  XI_RETURN_IF_ERROR(CheckNest(open));
  Advance();
  const Token kw = Cur();
  Advance();
  auto s = std::make_unique<Stmt>();
  s->line = kw.line;
  const std::string& n = kw.text;
  std::string end;
  if (n == "if") {
    s->kind = StmtKind::kIf;
    while (true) {
      XI_ASSIGN_OR_RETURN(ExprPtr cond, ParseExpression());
      XI_RETURN_IF_ERROR(ExpectBlockEnd());
      XI_ASSIGN_OR_RETURN(Body body, ParseBody({"elif", "else", "endif"}, &end, "if", kw.line));
      s->conds.push_back(std::move(cond));
      s->bodies.push_back(std::move(body));
      if (end != "elif") break;
    }
    if (end == "else") {
      XI_RETURN_IF_ERROR(ExpectBlockEnd());
      XI_ASSIGN_OR_RETURN(s->else_body, ParseBody({"endif"}, &end, "if", kw.line));
    }
    XI_RETURN_IF_ERROR(ExpectBlockEnd());
  } else if (n == "for") {
    s->kind = StmtKind::kFor;
    XI_ASSIGN_OR_RETURN(s->targets, ParseTargets());
    if (!AcceptName("in")) return Error(Cur(), "expected 'in', got " + Describe(Cur()));
    XI_ASSIGN_OR_RETURN(s->expr, ParseTuple(false));
    if (AcceptName("if")) {
      XI_ASSIGN_OR_RETURN(s->cond, ParseExpression());
    }
    if (IsName(Cur(), "recursive")) return Error(Cur(), "recursive loops are not supported");
    XI_RETURN_IF_ERROR(ExpectBlockEnd());
    ++loop_depth_;
    auto body = ParseBody({"endfor", "else"}, &end, "for", kw.line);
    --loop_depth_;
    if (!body.ok()) return body.status();
    s->body = std::move(body).value();
    if (end == "else") {
      XI_RETURN_IF_ERROR(ExpectBlockEnd());
      XI_ASSIGN_OR_RETURN(s->else_body, ParseBody({"endfor"}, &end, "for", kw.line));
    }
    XI_RETURN_IF_ERROR(ExpectBlockEnd());
  } else if (n == "set") {
    s->kind = StmtKind::kSet;
    XI_ASSIGN_OR_RETURN(std::string first, ExpectName());
    s->targets.push_back(first);
    if (AcceptOp(".")) {
      XI_ASSIGN_OR_RETURN(s->attr, ExpectName());
    } else {
      while (AcceptOp(",")) {
        XI_ASSIGN_OR_RETURN(std::string more, ExpectName());
        s->targets.push_back(more);
      }
    }
    if (AcceptOp("=")) {
      XI_ASSIGN_OR_RETURN(s->expr, ParseTuple(true));
      XI_RETURN_IF_ERROR(ExpectBlockEnd());
    } else {
      if (!s->attr.empty() || s->targets.size() != 1) {
        return Error(Cur(), "expected '=' in set statement, got " + Describe(Cur()));
      }
      if (IsOp(Cur(), "|")) return Error(Cur(), "filters on block assignments are not supported");
      XI_RETURN_IF_ERROR(ExpectBlockEnd());
      s->kind = StmtKind::kSetBlock;
      XI_ASSIGN_OR_RETURN(s->body, ParseBody({"endset"}, &end, "set", kw.line));
      XI_RETURN_IF_ERROR(ExpectBlockEnd());
    }
  } else if (n == "macro") {
    s->kind = StmtKind::kMacro;
    XI_ASSIGN_OR_RETURN(s->name, ExpectName());
    XI_RETURN_IF_ERROR(ExpectOp("("));
    while (!IsOp(Cur(), ")")) {
      if (!s->params.empty()) {
        XI_RETURN_IF_ERROR(ExpectOp(","));
        if (IsOp(Cur(), ")")) break;
      }
      XI_ASSIGN_OR_RETURN(std::string param, ExpectName());
      ExprPtr def;
      if (AcceptOp("=")) {
        XI_ASSIGN_OR_RETURN(def, ParseExpression());
      } else if (!s->defaults.empty() && s->defaults.back() != nullptr) {
        return Error(Cur(), "non-default argument follows default argument");
      }
      s->params.push_back(param);
      s->defaults.push_back(std::move(def));
    }
    Advance();
    XI_RETURN_IF_ERROR(ExpectBlockEnd());
    const int saved_loops = loop_depth_;
    loop_depth_ = 0;
    auto body = ParseBody({"endmacro"}, &end, "macro", kw.line);
    loop_depth_ = saved_loops;
    if (!body.ok()) return body.status();
    s->body = std::move(body).value();
    if (Cur().type == Tok::kName) Advance();  // {% endmacro name %}
    XI_RETURN_IF_ERROR(ExpectBlockEnd());
  } else if (n == "break" || n == "continue") {
    if (loop_depth_ == 0) return Error(kw, fmt::format("'{}' outside of a loop", n));
    s->kind = n == "break" ? StmtKind::kBreak : StmtKind::kContinue;
    XI_RETURN_IF_ERROR(ExpectBlockEnd());
  } else if (n == "generation") {
    s->kind = StmtKind::kScope;
    XI_RETURN_IF_ERROR(ExpectBlockEnd());
    XI_ASSIGN_OR_RETURN(s->body, ParseBody({"endgeneration"}, &end, "generation", kw.line));
    XI_RETURN_IF_ERROR(ExpectBlockEnd());
  } else if (n == "include" || n == "import" || n == "from" || n == "extends" || n == "block") {
    return Error(kw, fmt::format("'{}' is not supported: chat templates cannot load or "
                                 "inherit other templates",
                                 n));
  } else if (n == "call" || n == "filter" || n == "with" || n == "autoescape" || n == "do" ||
             n == "trans") {
    return Error(kw, fmt::format("the '{}' tag is not supported", n));
  } else {
    const bool stray = n.starts_with("end") || n == "else" || n == "elif";
    std::string msg =
        stray ? fmt::format("unexpected '{}' tag", n) : fmt::format("unknown tag '{}'", n);
    if (outer_ends.size() > 0) {
      std::string want;
      for (std::string_view e : outer_ends)
        want += (want.empty() ? "'" : " or '") + std::string(e) + "'";
      msg += fmt::format(" (expected {} to close the '{}' block)", want, outer_block);
    }
    return Error(kw, msg);
  }
  return s;
}

StatusOr<std::vector<std::string>> Parser::ParseTargets() {
  std::vector<std::string> names;
  const bool paren = AcceptOp("(");
  while (true) {
    XI_ASSIGN_OR_RETURN(std::string name, ExpectName());
    names.push_back(name);
    if (!AcceptOp(",")) break;
    if (paren && IsOp(Cur(), ")")) break;
  }
  if (paren) XI_RETURN_IF_ERROR(ExpectOp(")"));
  return names;
}

StatusOr<std::unique_ptr<TemplateAst>> ParseTemplate(std::string_view source, int max_depth) {
  XI_ASSIGN_OR_RETURN(LexResult lexed, Lex(source));
  Parser parser(std::move(lexed), max_depth);
  return parser.Run();
}

}  // namespace xinfer::jinja
