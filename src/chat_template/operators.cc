// Arithmetic and string operators with Python semantics (int/float promotion, floor division
// and modulo rounding toward negative infinity, str/list repetition, printf-style `%`).
#include <cmath>

#include "chat_template/builtins.h"
#include "chat_template/evaluator.h"
#include "chat_template/pystr.h"

namespace xinfer::jinja {
namespace {

Status Unsupported(const char* op, const Value& a, const Value& b) {
  return InvalidArgument("unsupported operand type(s) for {}: '{}' and '{}'", op, a.TypeName(),
                         b.TypeName());
}

Status Overflow() {
  return InvalidArgument("integer overflow (values beyond 64 bits are unsupported)");
}

// Python's float divmod.
void FloatDivMod(double a, double b, double* floordiv, double* mod) {
  double m = std::fmod(a, b);
  double div = (a - m) / b;
  if (m != 0) {
    if ((b < 0) != (m < 0)) {
      m += b;
      div -= 1.0;
    }
  } else {
    m = std::copysign(0.0, b);
  }
  double fd;
  if (div != 0) {
    fd = std::floor(div);
    if (div - fd > 0.5) fd += 1.0;
  } else {
    fd = std::copysign(0.0, a / b);
  }
  *floordiv = fd;
  *mod = m;
}

}  // namespace

// printf-style formatting: %s %r %d %i %f %% with optional flags/width/precision and
// %(name)s for a dict argument.
StatusOr<std::string> PercentFormat(const std::string& f, const Value& arg, size_t max_bytes) {
  std::vector<Value> args;
  if (arg.is_tuple()) {
    args = arg.list().items;
  } else {
    args.push_back(arg);
  }
  size_t next = 0;
  std::string out;
  for (size_t i = 0; i < f.size(); ++i) {
    if (f[i] != '%') {
      out += f[i];
      continue;
    }
    if (++i >= f.size()) return InvalidArgument("incomplete format");
    if (f[i] == '%') {
      out += '%';
      continue;
    }
    Value v;
    bool have = false;
    if (f[i] == '(') {
      const size_t close = f.find(')', i);
      if (close == std::string::npos) return InvalidArgument("incomplete format key");
      if (!arg.is_dict()) return InvalidArgument("format requires a mapping");
      const Value* found = arg.dict().Find(f.substr(i + 1, close - i - 1));
      if (found == nullptr)
        return InvalidArgument("KeyError: {}", PyStrRepr(f.substr(i + 1, close - i - 1)));
      v = *found;
      have = true;
      i = close + 1;
    }
    std::string spec = "%";
    while (i < f.size() &&
           std::string_view("-+ #0123456789.").find(f[i]) != std::string_view::npos) {
      spec += f[i++];
    }
    if (i >= f.size()) return InvalidArgument("incomplete format");
    if (spec.size() > 12) return InvalidArgument("format specification is too long");
    const char conv = f[i];
    if (!have) {
      if (next >= args.size()) return InvalidArgument("not enough arguments for format string");
      v = args[next++];
    }
    char buf[512];
    switch (conv) {
      case 's':
      case 'r': {
        std::string s;
        XI_RETURN_IF_ERROR(conv == 's' ? AppendStr(v, &s, max_bytes)
                                       : AppendRepr(v, &s, max_bytes));
        if (spec.size() > 1) {
          const int width = std::atoi(spec.c_str() + (spec[1] == '-' ? 2 : 1));
          const auto cps = static_cast<int>(CodePointCount(s));
          if (cps < width) {
            const std::string pad(static_cast<size_t>(width - cps), ' ');
            s = spec[1] == '-' ? s + pad : pad + s;
          }
        }
        out += s;
        break;
      }
      case 'd':
      case 'i':
      case 'f':
      case 'F':
      case 'e':
      case 'g':
      case 'x':
      case 'X':
      case 'o': {
        if (!v.is_number()) {
          return InvalidArgument("%{} format: a real number is required, not {}", conv,
                                 v.TypeName());
        }
        const bool integral =
            conv == 'd' || conv == 'i' || conv == 'x' || conv == 'X' || conv == 'o';
        if (integral) {
          const int64_t n = v.is_float() ? static_cast<int64_t>(v.as_double()) : v.as_int();
          std::snprintf(buf, sizeof(buf), (spec + "ll" + (conv == 'i' ? 'd' : conv)).c_str(),
                        static_cast<long long>(n));
        } else {
          std::snprintf(buf, sizeof(buf), (spec + conv).c_str(), v.as_double());
        }
        out += buf;
        break;
      }
      default:
        return InvalidArgument("unsupported format character '{}'", conv);
    }
    if (out.size() > max_bytes) return ResourceExhausted("formatted string is too long");
  }
  // Like Python, a list or dict argument (a "mapping" to printf) may go unused.
  if (next < args.size() && !arg.is_dict() && !(arg.is_list() && !arg.is_tuple())) {
    return InvalidArgument("not all arguments converted during string formatting");
  }
  return out;
}

StatusOr<Value> Renderer::EvalBinary(Op op, const Value& a, const Value& b) {
  if (op == Op::kConcat) {
    std::string s;
    XI_RETURN_IF_ERROR(AppendStr(a, &s, limits_.max_output_bytes));
    XI_RETURN_IF_ERROR(AppendStr(b, &s, limits_.max_output_bytes));
    return NewString(std::move(s));
  }
  if (a.is_undefined()) return InvalidArgument("{}", a.undefined_message());
  if (b.is_undefined()) return InvalidArgument("{}", b.undefined_message());
  const bool nums = a.is_number() && b.is_number();
  const bool ints = nums && a.is_integral() && b.is_integral();
  const int64_t x = nums ? a.as_int() : 0, y = nums ? b.as_int() : 0;
  const double fx = nums ? a.as_double() : 0, fy = nums ? b.as_double() : 0;
  int64_t r = 0;
  switch (op) {
    case Op::kAdd:
      if (ints) {
        if (__builtin_add_overflow(x, y, &r)) return Overflow();
        return Value::Int(r);
      }
      if (nums) return Value::Float(fx + fy);
      if (a.is_string() && b.is_string()) {
        XI_RETURN_IF_ERROR(CheckNewString(a.str().size() + b.str().size()));
        return Value::Str(a.str() + b.str());
      }
      if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
        std::vector<Value> items = a.list().items;
        items.insert(items.end(), b.list().items.begin(), b.list().items.end());
        XI_RETURN_IF_ERROR(budget_.Charge(static_cast<int64_t>(items.size())));
        if (items.size() > limits_.max_list_items) {
          return ResourceExhausted("list would exceed the limit of {} items",
                                   limits_.max_list_items);
        }
        return Value::List(std::move(items), a.is_tuple());
      }
      if (a.is_string() || a.is_list()) {
        return InvalidArgument("can only concatenate {} (not \"{}\") to {}", a.TypeName(),
                               b.TypeName(), a.TypeName());
      }
      return Unsupported("+", a, b);
    case Op::kSub:
      if (ints) {
        if (__builtin_sub_overflow(x, y, &r)) return Overflow();
        return Value::Int(r);
      }
      if (nums) return Value::Float(fx - fy);
      return Unsupported("-", a, b);
    case Op::kMul: {
      if (ints) {
        if (__builtin_mul_overflow(x, y, &r)) return Overflow();
        return Value::Int(r);
      }
      if (nums) return Value::Float(fx * fy);
      const Value* seq = a.is_integral() ? &b : &a;
      const Value* count = a.is_integral() ? &a : &b;
      if (!count->is_integral() || !(seq->is_string() || seq->is_list())) {
        return Unsupported("*", a, b);
      }
      const int64_t n = std::max<int64_t>(0, count->as_int());
      if (seq->is_string()) {
        const size_t len = seq->str().size();
        if (len > 0 && static_cast<uint64_t>(n) > limits_.max_output_bytes / len) {
          return ResourceExhausted("string repetition exceeds the limit of {} bytes",
                                   limits_.max_output_bytes);
        }
        XI_RETURN_IF_ERROR(CheckNewString(len * static_cast<size_t>(n)));
        std::string s;
        s.reserve(len * static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) s += seq->str();
        return Value::Str(std::move(s));
      }
      const size_t len = seq->list().items.size();
      if (len > 0 && static_cast<uint64_t>(n) > limits_.max_list_items / len) {
        return ResourceExhausted("list would exceed the limit of {} items", limits_.max_list_items);
      }
      XI_RETURN_IF_ERROR(budget_.Charge(static_cast<int64_t>(len) * n));
      std::vector<Value> items;
      items.reserve(len * static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) {
        items.insert(items.end(), seq->list().items.begin(), seq->list().items.end());
      }
      return Value::List(std::move(items), seq->is_tuple());
    }
    case Op::kDiv:
      if (!nums) return Unsupported("/", a, b);
      if (fy == 0) return InvalidArgument("division by zero");
      return Value::Float(fx / fy);
    case Op::kFloorDiv:
    case Op::kMod: {
      const bool floordiv = op == Op::kFloorDiv;
      if (op == Op::kMod && a.is_string()) {
        XI_ASSIGN_OR_RETURN(std::string s, PercentFormat(a.str(), b, limits_.max_output_bytes));
        return NewString(std::move(s));
      }
      if (!nums) return Unsupported(floordiv ? "//" : "%", a, b);
      if (ints) {
        if (y == 0) return InvalidArgument("integer division or modulo by zero");
        if (x == INT64_MIN && y == -1) {
          if (floordiv) return Overflow();
          return Value::Int(0);
        }
        int64_t q = x / y, m = x % y;
        if (m != 0 && ((m < 0) != (y < 0))) {
          m += y;
          q -= 1;
        }
        return Value::Int(floordiv ? q : m);
      }
      if (fy == 0) {
        return InvalidArgument("{}", floordiv ? "float floor division by zero" : "float modulo");
      }
      double q, m;
      FloatDivMod(fx, fy, &q, &m);
      return Value::Float(floordiv ? q : m);
    }
    case Op::kPow:
      if (!nums) return Unsupported("** or pow()", a, b);
      if (ints && y >= 0) {
        int64_t result = 1, base = x, e = y;
        while (e > 0) {
          if (e & 1) {
            if (__builtin_mul_overflow(result, base, &result)) return Overflow();
          }
          e >>= 1;
          if (e > 0 && __builtin_mul_overflow(base, base, &base)) return Overflow();
        }
        return Value::Int(result);
      }
      if (fx == 0 && fy < 0) return InvalidArgument("0.0 cannot be raised to a negative power");
      return Value::Float(std::pow(fx, fy));
    default:
      return Internal("not a binary operator");
  }
}

}  // namespace xinfer::jinja
