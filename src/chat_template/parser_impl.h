// The recursive-descent parser behind ParseTemplate (parser.h), following Jinja2's grammar and
// operator precedence. Internal to chat_template: the class is shared by its two halves,
// parser_statements.cc (template bodies and {% %} tags) and parser_expressions.cc (expressions).
#pragma once

#include <algorithm>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "chat_template/ast.h"
#include "chat_template/lexer.h"

namespace xinfer::jinja {

class Parser {
 public:
  Parser(LexResult lexed, int max_depth)
      : toks_(std::move(lexed.tokens)), map_(std::move(lexed.map)), max_depth_(max_depth) {}

  StatusOr<std::unique_ptr<TemplateAst>> Run() {
    auto ast = std::make_unique<TemplateAst>();
    std::string end;
    XI_ASSIGN_OR_RETURN(ast->body, ParseBody({}, &end, "", 0));
    return ast;
  }

 private:
  // Counts recursion through blocks and expressions; see max_depth in parser.h.
  class Nest {
   public:
    explicit Nest(Parser* p) : p_(p) { ++p_->depth_; }
    ~Nest() { --p_->depth_; }
    Nest(const Nest&) = delete;
    Nest& operator=(const Nest&) = delete;

   private:
    Parser* p_;
  };

  const Token& Cur() const { return toks_[i_]; }
  const Token& Peek(size_t k = 1) const { return toks_[std::min(i_ + k, toks_.size() - 1)]; }
  void Advance() {
    if (i_ + 1 < toks_.size()) ++i_;
  }
  bool IsOp(const Token& t, std::string_view op) const {
    return t.type == Tok::kOp && t.text == op;
  }
  bool IsName(const Token& t, std::string_view n) const {
    return t.type == Tok::kName && t.text == n;
  }
  bool AcceptOp(std::string_view op) {
    if (!IsOp(Cur(), op)) return false;
    Advance();
    return true;
  }
  bool AcceptName(std::string_view n) {
    if (!IsName(Cur(), n)) return false;
    Advance();
    return true;
  }

  static std::string Describe(const Token& t) {
    switch (t.type) {
      case Tok::kData:
        return "template data";
      case Tok::kVarBegin:
        return "'{{'";
      case Tok::kVarEnd:
        return "end of print statement '}}'";
      case Tok::kBlockBegin:
        return "'{%'";
      case Tok::kBlockEnd:
        return "end of statement block '%}'";
      case Tok::kName:
        return "'" + t.text + "'";
      case Tok::kString:
        return "string literal";
      case Tok::kInt:
      case Tok::kFloat:
        return "number '" + t.text + "'";
      case Tok::kOp:
        return "'" + t.text + "'";
      case Tok::kEof:
        return "end of template";
    }
    return "token";
  }

  Status Error(const Token& t, const std::string& msg) const {
    return InvalidArgument("{}: {}", map_.Where(t.pos), msg);
  }
  Status CheckNest(const Token& t) const {
    if (depth_ > max_depth_) {
      return Error(t, fmt::format("template is nested too deeply (limit {})", max_depth_));
    }
    return Status::Ok();
  }

  Status ExpectOp(std::string_view op) {
    if (AcceptOp(op)) return Status::Ok();
    return Error(Cur(), fmt::format("expected '{}', got {}", op, Describe(Cur())));
  }
  Status ExpectBlockEnd() {
    if (Cur().type == Tok::kBlockEnd) {
      Advance();
      return Status::Ok();
    }
    return Error(Cur(), "expected end of statement block '%}', got " + Describe(Cur()));
  }
  StatusOr<std::string> ExpectName() {
    if (Cur().type != Tok::kName) return Error(Cur(), "expected a name, got " + Describe(Cur()));
    std::string n = Cur().text;
    Advance();
    return n;
  }

  ExprPtr Node(ExprKind kind, const Token& at) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = at.line;
    return e;
  }
  // Computes the node's height and refuses trees deeper than the limit: chains such as
  // `1+1+1+...` are built iteratively but evaluated recursively.
  StatusOr<ExprPtr> Finish(ExprPtr e, const Token& at) {
    int d = 0;
    for (const Expr* c : {e->a.get(), e->b.get(), e->c.get()}) {
      if (c != nullptr) d = std::max(d, c->depth);
    }
    for (const auto& c : e->items) {
      if (c != nullptr) d = std::max(d, c->depth);
    }
    for (const auto& c : e->args.pos) d = std::max(d, c->depth);
    for (const auto& [k, c] : e->args.kw) d = std::max(d, c->depth);
    e->depth = d + 1;
    if (e->depth > max_depth_) {
      return Error(at, fmt::format("expression is nested too deeply (limit {})", max_depth_));
    }
    return e;
  }

  // ---- statements (parser_statements.cc) ----

  StatusOr<Body> ParseBody(std::initializer_list<std::string_view> ends, std::string* found,
                           const std::string& block, int open_line);
  StatusOr<StmtPtr> ParseStatement(std::initializer_list<std::string_view> outer_ends,
                                   const std::string& outer_block);
  StatusOr<std::vector<std::string>> ParseTargets();

  // ---- expressions (parser_expressions.cc) ----

  bool AtTupleEnd() const;
  StatusOr<ExprPtr> ParseTuple(bool with_condexpr, bool explicit_parens = false);
  StatusOr<ExprPtr> ParseExpression();
  StatusOr<ExprPtr> ParseOr();
  StatusOr<ExprPtr> ParseAnd();
  StatusOr<ExprPtr> ParseNot();
  StatusOr<ExprPtr> ParseCompare();
  // Binary operator levels, loosest first: + -, ~, * / // %, **. All left-associative as in
  // Jinja2 (so 2**3**2 == 64).
  StatusOr<ExprPtr> ParseBinary(int level);
  StatusOr<ExprPtr> ParseUnary(bool with_filter);
  StatusOr<ExprPtr> ParsePrimary();
  StatusOr<ExprPtr> ParsePostfix(ExprPtr node, bool with_filter);
  StatusOr<ExprPtr> ParseSubscript();
  Status ParseCallArgs(Args* args);

  std::vector<Token> toks_;
  SourceMap map_;
  size_t i_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
  const int max_depth_;
};

}  // namespace xinfer::jinja
