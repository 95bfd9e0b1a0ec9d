// Status and StatusOr: how every error a client or a model file can cause travels upward.
// Invariant violations (programming errors) use XI_CHECK in check.h instead and abort.
// Status is a value type; copying is cheap (code + string). Thread-compatible.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

#include <fmt/core.h>

namespace xinfer {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,     // bad request / bad flag / malformed input file contents
  kNotFound,            // missing file, tensor, route, model
  kDataLoss,            // truncated or corrupt file
  kUnimplemented,       // valid but unsupported (architecture, dtype, feature)
  kOutOfRange,          // e.g. prompt longer than the context
  kResourceExhausted,   // no memory / queue full
  kFailedPrecondition,  // state does not allow the operation
  kUnavailable,         // try again later
  kCancelled,
  kInternal,
};

const char* StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "InvalidArgument: message" (or "OK").
  std::string ToString() const;
  // Returns a copy whose message is prefixed with `context + ": "`.
  Status WithContext(const std::string& context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

template <typename... Args>
Status InvalidArgument(fmt::format_string<Args...> f, Args&&... args) {
  return Status(StatusCode::kInvalidArgument, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
Status NotFound(fmt::format_string<Args...> f, Args&&... args) {
  return Status(StatusCode::kNotFound, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
Status DataLoss(fmt::format_string<Args...> f, Args&&... args) {
  return Status(StatusCode::kDataLoss, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
Status Unimplemented(fmt::format_string<Args...> f, Args&&... args) {
  return Status(StatusCode::kUnimplemented, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
Status OutOfRange(fmt::format_string<Args...> f, Args&&... args) {
  return Status(StatusCode::kOutOfRange, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
Status ResourceExhausted(fmt::format_string<Args...> f, Args&&... args) {
  return Status(StatusCode::kResourceExhausted, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
Status FailedPrecondition(fmt::format_string<Args...> f, Args&&... args) {
  return Status(StatusCode::kFailedPrecondition, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
Status Internal(fmt::format_string<Args...> f, Args&&... args) {
  return Status(StatusCode::kInternal, fmt::format(f, std::forward<Args>(args)...));
}

// Holds either a value or a non-OK Status.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(Status status) : status_(std::move(status)) {  // NOLINT: implicit by design
    if (status_.ok()) status_ = Status(StatusCode::kInternal, "StatusOr built from OK status");
  }
  StatusOr(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace xinfer

#define XI_STATUS_CONCAT_INNER(a, b) a##b
#define XI_STATUS_CONCAT(a, b) XI_STATUS_CONCAT_INNER(a, b)

// Returns the Status from the enclosing function if `expr` is not OK.
#define XI_RETURN_IF_ERROR(expr)                 \
  do {                                           \
    ::xinfer::Status _xi_status = (expr);        \
    if (!_xi_status.ok()) return _xi_status;     \
  } while (0)

// `XI_ASSIGN_OR_RETURN(auto x, MakeX());` unwraps a StatusOr or returns its Status.
#define XI_ASSIGN_OR_RETURN(lhs, expr) \
  XI_ASSIGN_OR_RETURN_IMPL(XI_STATUS_CONCAT(_xi_or_, __LINE__), lhs, expr)
#define XI_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                             \
  if (!tmp.ok()) return tmp.status();            \
  lhs = std::move(tmp).value()
