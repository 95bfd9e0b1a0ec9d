#include "chat_template/evaluator.h"

#include <cmath>

#include "chat_template/builtins.h"
#include "chat_template/pystr.h"

namespace xinfer::jinja {
namespace {

// Restores a pointer-valued member when a scope ends, whichever way it ends.
template <typename T>
class Restore {
 public:
  Restore(T* slot, T value) : slot_(slot), saved_(*slot) { *slot_ = value; }
  ~Restore() { *slot_ = saved_; }
  Restore(const Restore&) = delete;
  Restore& operator=(const Restore&) = delete;

 private:
  T* slot_;
  T saved_;
};

Status Undef(const Value& v) { return InvalidArgument("{}", v.undefined_message()); }

}  // namespace

Renderer::Renderer(const TemplateLimits& limits) : limits_(limits) {
  budget_.ops_left = limits.max_operations;
}

const Value* Renderer::Frame::Find(const std::string& name) const {
  for (const auto& [k, v] : vars) {
    if (k == name) return &v;
  }
  return nullptr;
}

void Renderer::Frame::Set(const std::string& name, Value v) {
  for (auto& [k, old] : vars) {
    if (k == name) {
      old = std::move(v);
      return;
    }
  }
  vars.emplace_back(name, std::move(v));
}

const Value* Renderer::Lookup(const std::string& name) const {
  for (const Frame* f = frame_; f != nullptr; f = f->parent) {
    if (const Value* v = f->Find(name)) return v;
  }
  return nullptr;
}

StatusOr<std::string> Renderer::Run(const TemplateAst& ast, const nlohmann::ordered_json& context) {
  stack_base_ = static_cast<const char*>(__builtin_frame_address(0));
  if (!context.is_object()) return InvalidArgument("template context must be a JSON object");
  for (const auto& [k, v] : context.items()) {
    auto value = FromJson(v, limits_.max_value_depth);
    if (!value.ok()) return value.status();
    root_.Set(k, std::move(value).value());
  }
  std::string out;
  out_ = &out;
  auto flow = ExecBody(ast.body);
  if (!flow.ok()) {
    if (raised_) return Status(StatusCode::kInvalidArgument, flow.status().message());
    return Status(flow.status().code(), fmt::format("line {}: {}", line_, flow.status().message()));
  }
  return out;
}

Status Renderer::RaiseException(std::string message) {
  raised_ = true;
  return InvalidArgument("{}", message);
}

Status Renderer::CheckNewString(size_t bytes) {
  if (bytes > limits_.max_output_bytes) {
    return ResourceExhausted("string of {} bytes exceeds the limit of {} bytes", bytes,
                             limits_.max_output_bytes);
  }
  return budget_.Charge(static_cast<int64_t>(bytes / 8));
}

StatusOr<Value> Renderer::NewString(std::string s) {
  XI_RETURN_IF_ERROR(CheckNewString(s.size()));
  return Value::Str(std::move(s));
}

Status Renderer::CheckStack() {
  const auto* here = static_cast<const char*>(__builtin_frame_address(0));
  const size_t used = here < stack_base_ ? static_cast<size_t>(stack_base_ - here)
                                         : static_cast<size_t>(here - stack_base_);
  if (used > limits_.max_stack_bytes) {
    return ResourceExhausted("template recursion is too deep");
  }
  return Status::Ok();
}

Status Renderer::CheckValueDepth(const Value& v) {
  if (v.depth() > limits_.max_value_depth) {
    return ResourceExhausted("value nested deeper than the limit of {}", limits_.max_value_depth);
  }
  return Status::Ok();
}

Status Renderer::Emit(std::string_view text) {
  if (out_->size() + suspended_bytes_ + text.size() > limits_.max_output_bytes) {
    return ResourceExhausted("template output exceeds the limit of {} bytes",
                             limits_.max_output_bytes);
  }
  out_->append(text);
  return Status::Ok();
}

StatusOr<std::string> Renderer::Capture(const Body& body) {
  std::string buffer;
  const size_t outer = out_->size();
  suspended_bytes_ += outer;
  std::string* saved = out_;
  out_ = &buffer;
  auto flow = ExecBody(body);
  out_ = saved;
  suspended_bytes_ -= outer;
  if (!flow.ok()) return flow.status();
  return buffer;
}

StatusOr<Renderer::Flow> Renderer::ExecBody(const Body& body) {
  for (const StmtPtr& s : body) {
    XI_ASSIGN_OR_RETURN(Flow flow, Exec(*s));
    if (flow != Flow::kNormal) return flow;
  }
  return Flow::kNormal;
}

StatusOr<Renderer::Flow> Renderer::Exec(const Stmt& s) {
  XI_RETURN_IF_ERROR(CheckStack());
  XI_RETURN_IF_ERROR(budget_.Charge(1));
  line_ = s.line;
  switch (s.kind) {
    case StmtKind::kText:
      XI_RETURN_IF_ERROR(Emit(s.text));
      return Flow::kNormal;
    case StmtKind::kOutput: {
      XI_ASSIGN_OR_RETURN(Value v, Eval(*s.expr));
      if (v.is_string()) {
        XI_RETURN_IF_ERROR(Emit(v.str()));
      } else {
        std::string text;
        XI_RETURN_IF_ERROR(AppendStr(v, &text, limits_.max_output_bytes));
        XI_RETURN_IF_ERROR(Emit(text));
      }
      return Flow::kNormal;
    }
    case StmtKind::kIf:
      for (size_t i = 0; i < s.conds.size(); ++i) {
        XI_ASSIGN_OR_RETURN(Value cond, Eval(*s.conds[i]));
        if (cond.Truthy()) return ExecBody(s.bodies[i]);
      }
      return ExecBody(s.else_body);
    case StmtKind::kFor:
      return ExecFor(s);
    case StmtKind::kSet:
      XI_RETURN_IF_ERROR(ExecSet(s));
      return Flow::kNormal;
    case StmtKind::kSetBlock: {
      XI_ASSIGN_OR_RETURN(std::string text, Capture(s.body));
      frame_->Set(s.targets[0], Value::Str(std::move(text)));
      return Flow::kNormal;
    }
    case StmtKind::kMacro: {
      const Stmt* macro = &s;  // owned by the template, which outlives the render
      frame_->Set(s.name, Value::Func(s.name, [macro](Renderer& r, CallArgs& args) {
                    return r.CallMacro(*macro, args);
                  }));
      return Flow::kNormal;
    }
    case StmtKind::kBreak:
      return Flow::kBreak;
    case StmtKind::kContinue:
      return Flow::kContinue;
    case StmtKind::kScope:
      return ExecBody(s.body);
  }
  return Internal("unknown statement");
}

Status Renderer::BindTargets(const std::vector<std::string>& targets, const Value& v,
                             Frame* frame) {
  if (targets.size() == 1) {
    frame->Set(targets[0], v);
    return Status::Ok();
  }
  XI_ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(v, limits_.max_list_items));
  if (items.size() != targets.size()) {
    if (items.size() > targets.size()) {
      return InvalidArgument("too many values to unpack (expected {})", targets.size());
    }
    return InvalidArgument("not enough values to unpack (expected {}, got {})", targets.size(),
                           items.size());
  }
  for (size_t i = 0; i < targets.size(); ++i) frame->Set(targets[i], items[i]);
  return Status::Ok();
}

Status Renderer::ExecSet(const Stmt& s) {
  XI_ASSIGN_OR_RETURN(Value v, Eval(*s.expr));
  XI_RETURN_IF_ERROR(CheckValueDepth(v));
  if (s.attr.empty()) return BindTargets(s.targets, v, frame_);
  const Value* ns = Lookup(s.targets[0]);
  if (ns == nullptr || !ns->is_namespace()) {
    return InvalidArgument("cannot assign attribute on non-namespace object");
  }
  if (v.has_namespace()) {
    // Storing a namespace inside a namespace could create a reference cycle.
    return InvalidArgument("a namespace attribute cannot hold a namespace");
  }
  ns->mutable_namespace().Set(s.attr, std::move(v));
  return Status::Ok();
}

StatusOr<Renderer::Flow> Renderer::ExecFor(const Stmt& s) {
  XI_ASSIGN_OR_RETURN(Value iterable, Eval(*s.expr));
  XI_ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(iterable, limits_.max_list_items));
  XI_RETURN_IF_ERROR(budget_.Charge(static_cast<int64_t>(items.size())));
  Frame frame;
  frame.parent = frame_;
  if (s.cond != nullptr) {
    // Filtered loops: the condition sees the loop target but not `loop`, and loop.length
    // counts only the items that pass (Jinja2 filters before building the loop context).
    std::vector<Value> kept;
    Restore<Frame*> scope(&frame_, &frame);
    for (Value& item : items) {
      frame.vars.clear();
      XI_RETURN_IF_ERROR(BindTargets(s.targets, item, &frame));
      XI_ASSIGN_OR_RETURN(Value keep, Eval(*s.cond));
      if (keep.Truthy()) kept.push_back(std::move(item));
    }
    items = std::move(kept);
  }
  if (items.empty()) return ExecBody(s.else_body);
  Restore<Frame*> scope(&frame_, &frame);
  const auto n = static_cast<int64_t>(items.size());
  for (int64_t i = 0; i < n; ++i) {
    if (++loop_iterations_ > limits_.max_loop_iterations) {
      return ResourceExhausted("template loops exceeded the limit of {} iterations",
                               limits_.max_loop_iterations);
    }
    frame.vars.clear();
    const Value& item = items[static_cast<size_t>(i)];
    XI_RETURN_IF_ERROR(BindTargets(s.targets, item, &frame));
    static const Value kNoPrev = Value::Undefined("there is no previous item");
    static const Value kNoNext = Value::Undefined("there is no next item");
    // Built directly (keys are distinct): this runs once per iteration.
    auto loop = std::make_shared<Dict>();
    loop->is_loop = true;
    loop->entries = {
        {"index0", Value::Int(i)},
        {"index", Value::Int(i + 1)},
        {"revindex0", Value::Int(n - i - 1)},
        {"revindex", Value::Int(n - i)},
        {"first", Value::Bool(i == 0)},
        {"last", Value::Bool(i == n - 1)},
        {"length", Value::Int(n)},
        {"depth", Value::Int(1)},
        {"depth0", Value::Int(0)},
        {"previtem", i > 0 ? items[static_cast<size_t>(i - 1)] : kNoPrev},
        {"nextitem", i + 1 < n ? items[static_cast<size_t>(i + 1)] : kNoNext},
    };
    for (const auto& [k, v] : loop->entries) {
      loop->depth = std::max(loop->depth, v.depth() + 1);
      loop->has_namespace = loop->has_namespace || v.has_namespace();
    }
    frame.Set("loop", Value::Dict(std::move(loop)));
    XI_ASSIGN_OR_RETURN(Flow flow, ExecBody(s.body));
    if (flow == Flow::kBreak) break;
  }
  return Flow::kNormal;
}

StatusOr<Value> Renderer::CallMacro(const Stmt& m, CallArgs& args) {
  if (call_depth_ >= limits_.max_call_depth) {
    return ResourceExhausted("macro calls nested deeper than the limit of {}",
                             limits_.max_call_depth);
  }
  Restore<int> depth(&call_depth_, call_depth_ + 1);
  Restore<int> line(&line_, line_);
  // Macros see their arguments and the template's top-level variables, not the caller's locals.
  Frame frame;
  frame.parent = &root_;
  Restore<Frame*> scope(&frame_, &frame);
  std::vector<Value> varargs;
  auto kwargs = std::make_shared<Dict>();
  for (size_t i = 0; i < args.pos.size(); ++i) {
    if (i < m.params.size()) {
      frame.Set(m.params[i], args.pos[i]);
    } else {
      varargs.push_back(args.pos[i]);
    }
  }
  for (auto& [k, v] : args.kw) {
    const auto it = std::find(m.params.begin(), m.params.end(), k);
    if (it == m.params.end()) {
      kwargs->Set(k, v);
    } else if (static_cast<size_t>(it - m.params.begin()) < args.pos.size()) {
      return InvalidArgument("macro '{}' got multiple values for argument '{}'", m.name, k);
    } else {
      frame.Set(k, v);
    }
  }
  for (size_t i = 0; i < m.params.size(); ++i) {
    if (frame.Find(m.params[i]) != nullptr) continue;
    if (m.defaults[i] != nullptr) {
      XI_ASSIGN_OR_RETURN(Value def, Eval(*m.defaults[i]));
      frame.Set(m.params[i], std::move(def));
    } else {
      frame.Set(m.params[i],
                Value::Undefined(fmt::format("parameter '{}' was not provided", m.params[i])));
    }
  }
  frame.Set("varargs", Value::List(std::move(varargs), /*tuple=*/true));
  frame.Set("kwargs", Value::Dict(std::move(kwargs)));
  XI_ASSIGN_OR_RETURN(std::string text, Capture(m.body));
  return Value::Str(std::move(text));
}

StatusOr<Value> Renderer::Call(const Value& callee, CallArgs& args) {
  if (callee.is_function()) return callee.func().fn(*this, args);
  if (callee.is_undefined()) return Undef(callee);
  return InvalidArgument("'{}' object is not callable", callee.TypeName());
}

Status Renderer::EvalArgs(const Args& in, CallArgs* out) {
  for (const ExprPtr& e : in.pos) {
    XI_ASSIGN_OR_RETURN(Value v, Eval(*e));
    out->pos.push_back(std::move(v));
  }
  for (const auto& [k, e] : in.kw) {
    XI_ASSIGN_OR_RETURN(Value v, Eval(*e));
    out->kw.emplace_back(k, std::move(v));
  }
  return Status::Ok();
}

StatusOr<Value> Renderer::Eval(const Expr& e) {
  XI_RETURN_IF_ERROR(CheckStack());
  XI_RETURN_IF_ERROR(budget_.Charge(1));
  switch (e.kind) {
    case ExprKind::kLiteral:
      return e.literal;
    case ExprKind::kName: {
      if (const Value* v = Lookup(e.name)) return *v;
      return LookupGlobal(e.name);
    }
    case ExprKind::kGetAttr: {
      XI_ASSIGN_OR_RETURN(Value obj, Eval(*e.a));
      return GetAttr(obj, e.name);
    }
    case ExprKind::kGetItem: {
      XI_ASSIGN_OR_RETURN(Value obj, Eval(*e.a));
      if (e.b->kind == ExprKind::kSlice) {
        Value bounds[3];
        for (size_t i = 0; i < 3; ++i) {
          if (e.b->items[i] != nullptr) {
            XI_ASSIGN_OR_RETURN(bounds[i], Eval(*e.b->items[i]));
          }
        }
        XI_ASSIGN_OR_RETURN(Value sliced, Slice(obj, bounds[0], bounds[1], bounds[2]));
        if (sliced.is_string()) XI_RETURN_IF_ERROR(CheckNewString(sliced.str().size()));
        if (sliced.is_list()) {
          XI_RETURN_IF_ERROR(budget_.Charge(static_cast<int64_t>(sliced.list().items.size())));
        }
        return sliced;
      }
      XI_ASSIGN_OR_RETURN(Value key, Eval(*e.b));
      return GetItem(obj, key);
    }
    case ExprKind::kSlice:
      return Internal("slice outside of a subscript");
    case ExprKind::kNeg:
    case ExprKind::kPos: {
      XI_ASSIGN_OR_RETURN(Value v, Eval(*e.a));
      if (v.is_undefined()) return Undef(v);
      const bool neg = e.kind == ExprKind::kNeg;
      if (v.is_float()) return Value::Float(neg ? -v.as_double() : v.as_double());
      if (v.is_integral()) {
        if (!neg) return Value::Int(v.as_int());
        if (v.as_int() == INT64_MIN) return InvalidArgument("integer overflow");
        return Value::Int(-v.as_int());
      }
      return InvalidArgument("bad operand type for unary {}: '{}'", neg ? "-" : "+", v.TypeName());
    }
    case ExprKind::kNot: {
      XI_ASSIGN_OR_RETURN(Value v, Eval(*e.a));
      return Value::Bool(!v.Truthy());
    }
    case ExprKind::kBinary: {
      XI_ASSIGN_OR_RETURN(Value a, Eval(*e.a));
      XI_ASSIGN_OR_RETURN(Value b, Eval(*e.b));
      return EvalBinary(e.op, a, b);
    }
    case ExprKind::kAnd:
    case ExprKind::kOr: {
      XI_ASSIGN_OR_RETURN(Value a, Eval(*e.a));
      if (a.Truthy() == (e.kind == ExprKind::kOr)) return a;
      return Eval(*e.b);
    }
    case ExprKind::kCompare:
      return EvalCompare(e);
    case ExprKind::kCond: {
      XI_ASSIGN_OR_RETURN(Value cond, Eval(*e.b));
      if (cond.Truthy()) return Eval(*e.a);
      if (e.c != nullptr) return Eval(*e.c);
      return Value::Undefined(fmt::format(
          "the inline if-expression on line {} evaluated to false and no else section was "
          "defined.",
          e.line));
    }
    case ExprKind::kCall: {
      XI_ASSIGN_OR_RETURN(Value callee, Eval(*e.a));
      CallArgs args;
      XI_RETURN_IF_ERROR(EvalArgs(e.args, &args));
      return Call(callee, args);
    }
    case ExprKind::kFilter: {
      XI_ASSIGN_OR_RETURN(Value input, Eval(*e.a));
      CallArgs args;
      XI_RETURN_IF_ERROR(EvalArgs(e.args, &args));
      const FilterFn fn = FindFilter(e.name);
      if (fn == nullptr) return InvalidArgument("no filter named '{}'", e.name);
      return fn(*this, input, args);
    }
    case ExprKind::kTest: {
      XI_ASSIGN_OR_RETURN(Value input, Eval(*e.a));
      CallArgs args;
      XI_RETURN_IF_ERROR(EvalArgs(e.args, &args));
      const TestFn fn = FindTest(e.name);
      if (fn == nullptr) return InvalidArgument("no test named '{}'", e.name);
      XI_ASSIGN_OR_RETURN(bool result, fn(*this, input, args));
      return Value::Bool(result != e.negated);
    }
    case ExprKind::kList:
    case ExprKind::kTuple: {
      std::vector<Value> items;
      items.reserve(e.items.size());
      for (const ExprPtr& item : e.items) {
        XI_ASSIGN_OR_RETURN(Value v, Eval(*item));
        items.push_back(std::move(v));
      }
      Value list = Value::List(std::move(items), e.kind == ExprKind::kTuple);
      XI_RETURN_IF_ERROR(CheckValueDepth(list));
      return list;
    }
    case ExprKind::kDict: {
      auto dict = std::make_shared<Dict>();
      for (size_t i = 0; i + 1 < e.items.size(); i += 2) {
        XI_ASSIGN_OR_RETURN(Value k, Eval(*e.items[i]));
        XI_ASSIGN_OR_RETURN(Value v, Eval(*e.items[i + 1]));
        if (!k.is_string()) {
          return InvalidArgument("dict keys must be strings (got '{}')", k.TypeName());
        }
        dict->Set(k.str(), std::move(v));
      }
      Value d = Value::Dict(std::move(dict));
      XI_RETURN_IF_ERROR(CheckValueDepth(d));
      return d;
    }
  }
  return Internal("unknown expression");
}

StatusOr<bool> Renderer::Contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Value::Kind::kUndefined:
      return false;
    case Value::Kind::kString:
      if (!item.is_string()) {
        return InvalidArgument("'in <string>' requires string as left operand, not {}",
                               item.TypeName());
      }
      XI_RETURN_IF_ERROR(budget_.Charge(static_cast<int64_t>(container.str().size() / 16)));
      return container.str().find(item.str()) != std::string::npos;
    case Value::Kind::kList:
      for (const Value& x : container.list().items) {
        XI_ASSIGN_OR_RETURN(bool eq, Equals(x, item, &budget_));
        if (eq) return true;
      }
      return false;
    case Value::Kind::kDict:
      if (container.is_namespace()) break;
      return item.is_string() && container.dict().Find(item.str()) != nullptr;
    default:
      break;
  }
  return InvalidArgument("argument of type '{}' is not iterable", container.TypeName());
}

StatusOr<Value> Renderer::EvalCompare(const Expr& e) {
  XI_ASSIGN_OR_RETURN(Value left, Eval(*e.items[0]));
  for (size_t i = 0; i < e.ops.size(); ++i) {
    XI_ASSIGN_OR_RETURN(Value right, Eval(*e.items[i + 1]));
    bool result = false;
    switch (e.ops[i]) {
      case Op::kEq:
      case Op::kNe: {
        XI_ASSIGN_OR_RETURN(bool eq, Equals(left, right, &budget_));
        result = eq == (e.ops[i] == Op::kEq);
        break;
      }
      case Op::kIn:
      case Op::kNotIn: {
        XI_ASSIGN_OR_RETURN(bool in, Contains(right, left));
        result = in == (e.ops[i] == Op::kIn);
        break;
      }
      default: {
        XI_ASSIGN_OR_RETURN(int c, Compare(left, right, &budget_));
        const Op op = e.ops[i];
        result = op == Op::kLt ? c < 0 : op == Op::kLe ? c <= 0 : op == Op::kGt ? c > 0 : c >= 0;
      }
    }
    if (!result) return Value::Bool(false);
    left = std::move(right);
  }
  return Value::Bool(true);
}

}  // namespace xinfer::jinja
