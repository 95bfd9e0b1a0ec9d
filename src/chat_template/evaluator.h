// Renders a parsed template. A Renderer holds all per-render state (variables, output, limits
// counters), so any number of Renderers may walk the same immutable TemplateAst concurrently.
// A Renderer is single-use and single-threaded.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "chat_template/ast.h"
#include "chat_template/chat_template.h"
#include "chat_template/value.h"

namespace xinfer::jinja {

class Renderer {
 public:
  explicit Renderer(const TemplateLimits& limits);
  Renderer(const Renderer&) = delete;
  Renderer& operator=(const Renderer&) = delete;

  // Runtime errors come back as "line L: message"; raise_exception's message comes back as is.
  StatusOr<std::string> Run(const TemplateAst& ast, const nlohmann::ordered_json& context);

  // ---- services for builtins ----
  Budget* budget() { return &budget_; }
  const TemplateLimits& limits() const { return limits_; }
  // raise_exception(message): the render fails with exactly `message`.
  Status RaiseException(std::string message);
  // Checks a string about to be created against the size limit and charges the budget.
  Status CheckNewString(size_t bytes);
  StatusOr<Value> NewString(std::string s);
  StatusOr<Value> Call(const Value& callee, CallArgs& args);

 private:
  enum class Flow { kNormal, kBreak, kContinue };
  struct Frame {
    const Value* Find(const std::string& name) const;
    void Set(const std::string& name, Value v);
    std::vector<std::pair<std::string, Value>> vars;
    const Frame* parent = nullptr;
  };

  StatusOr<Flow> ExecBody(const Body& body);
  StatusOr<Flow> Exec(const Stmt& s);
  StatusOr<Flow> ExecFor(const Stmt& s);
  Status ExecSet(const Stmt& s);
  StatusOr<Value> Eval(const Expr& e);
  StatusOr<Value> EvalCompare(const Expr& e);
  StatusOr<Value> EvalBinary(Op op, const Value& a, const Value& b);
  StatusOr<bool> Contains(const Value& container, const Value& item);
  Status EvalArgs(const Args& in, CallArgs* out);
  StatusOr<Value> CallMacro(const Stmt& macro, CallArgs& args);
  StatusOr<std::string> Capture(const Body& body);
  Status BindTargets(const std::vector<std::string>& targets, const Value& v, Frame* frame);
  Status Emit(std::string_view text);
  Status CheckStack();
  Status CheckValueDepth(const Value& v);
  const Value* Lookup(const std::string& name) const;

  TemplateLimits limits_;
  Budget budget_;
  std::string* out_ = nullptr;
  size_t suspended_bytes_ = 0;  // output held by enclosing captures (macro calls, block sets)
  Frame root_;
  Frame* frame_ = &root_;
  int call_depth_ = 0;
  int64_t loop_iterations_ = 0;
  const char* stack_base_ = nullptr;
  bool raised_ = false;
  int line_ = 0;
};

}  // namespace xinfer::jinja
