#include "chat_template/parser.h"

#include <algorithm>
#include <initializer_list>

#include "chat_template/builtins.h"
#include "chat_template/lexer.h"

namespace xinfer::jinja {
namespace {

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

  // ---- statements ----

  StatusOr<Body> ParseBody(std::initializer_list<std::string_view> ends, std::string* found,
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
        for (std::string_view e : ends)
          want += (want.empty() ? "'" : " or '") + std::string(e) + "'";
        return Error(t, fmt::format("unexpected end of template: expected {} to close the '{}' "
                                    "block opened at line {}",
                                    want, block, open_line));
      } else {
        return Error(t, "unexpected " + Describe(t));
      }
    }
  }

  StatusOr<StmtPtr> ParseStatement(std::initializer_list<std::string_view> outer_ends,
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

  StatusOr<std::vector<std::string>> ParseTargets() {
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

  // ---- expressions ----

  bool AtTupleEnd() const {
    const Token& t = Cur();
    return t.type == Tok::kVarEnd || t.type == Tok::kBlockEnd || t.type == Tok::kEof ||
           IsOp(t, ")") || IsName(t, "if") || IsName(t, "recursive");
  }

  StatusOr<ExprPtr> ParseTuple(bool with_condexpr, bool explicit_parens = false) {
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

  StatusOr<ExprPtr> ParseExpression() {
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

  StatusOr<ExprPtr> ParseOr() {
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

  StatusOr<ExprPtr> ParseAnd() {
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

  StatusOr<ExprPtr> ParseNot() {
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

  StatusOr<ExprPtr> ParseCompare() {
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

  // Binary operator levels, loosest first: + -, ~, * / // %, **. All left-associative as in
  // Jinja2 (so 2**3**2 == 64).
  StatusOr<ExprPtr> ParseBinary(int level) {
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

  StatusOr<ExprPtr> ParseUnary(bool with_filter) {
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

  StatusOr<ExprPtr> ParsePrimary() {
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

  StatusOr<ExprPtr> ParsePostfix(ExprPtr node, bool with_filter) {
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
                   !IsName(n, "else") && !IsName(n, "or") && !IsName(n, "and") &&
                   !IsName(n, "is") && !IsName(n, "if") && !IsName(n, "in") && !IsName(n, "not")) {
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

  StatusOr<ExprPtr> ParseSubscript() {
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

  Status ParseCallArgs(Args* args) {
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

  std::vector<Token> toks_;
  SourceMap map_;
  size_t i_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
  const int max_depth_;
};

}  // namespace

StatusOr<std::unique_ptr<TemplateAst>> ParseTemplate(std::string_view source, int max_depth) {
  XI_ASSIGN_OR_RETURN(LexResult lexed, Lex(source));
  Parser parser(std::move(lexed), max_depth);
  return parser.Run();
}

}  // namespace xinfer::jinja
