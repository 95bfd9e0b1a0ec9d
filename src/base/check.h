// XI_CHECK: aborts on a broken invariant (a bug in xinfer, never bad user input).
// Anything a client or a model file can trigger must return a Status instead.
#pragma once

#include <cstdio>
#include <cstdlib>

namespace xinfer::internal {
[[noreturn]] inline void CheckFailed(const char* expr, const char* file, int line,
                                     const char* msg) {
  std::fprintf(stderr, "xinfer: CHECK failed at %s:%d: %s %s\n", file, line, expr, msg);
  std::abort();
}
}  // namespace xinfer::internal

#define XI_CHECK(cond)                                                         \
  do {                                                                         \
    if (!(cond)) ::xinfer::internal::CheckFailed(#cond, __FILE__, __LINE__, ""); \
  } while (0)

#define XI_CHECK_MSG(cond, msg)                                                   \
  do {                                                                            \
    if (!(cond)) ::xinfer::internal::CheckFailed(#cond, __FILE__, __LINE__, (msg)); \
  } while (0)
