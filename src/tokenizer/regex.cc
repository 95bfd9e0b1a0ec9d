#include "tokenizer/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "base/utf8.h"

namespace xinfer::tok {
namespace {

std::string PcreError(int code) {
  PCRE2_UCHAR buf[256];
  pcre2_get_error_message(code, buf, sizeof(buf));
  return reinterpret_cast<const char*>(buf);
}

// Match data and a JIT stack large enough for long whitespace runs, one set per thread, so
// that FindAll stays const and lock-free.
struct ThreadMatchState {
  pcre2_match_data* data = nullptr;
  pcre2_match_context* context = nullptr;
  pcre2_jit_stack* jit_stack = nullptr;
  ThreadMatchState() {
    data = pcre2_match_data_create(32, nullptr);
    context = pcre2_match_context_create(nullptr);
    jit_stack = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, nullptr);
    if (context != nullptr && jit_stack != nullptr) {
      pcre2_jit_stack_assign(context, nullptr, jit_stack);
    }
  }
  ~ThreadMatchState() {
    pcre2_jit_stack_free(jit_stack);
    pcre2_match_context_free(context);
    pcre2_match_data_free(data);
  }
};

ThreadMatchState& GetThreadState() {
  thread_local ThreadMatchState state;
  return state;
}

}  // namespace

StatusOr<std::unique_ptr<Regex>> Regex::Compile(std::string_view pattern) {
  int err = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   PCRE2_UTF | PCRE2_UCP, &err, &offset, nullptr);
  if (code == nullptr) {
    return InvalidArgument("bad regex '{}' at offset {}: {}", pattern, offset, PcreError(err));
  }
  // JIT is an optimization only: pcre2_match falls back to the interpreter without it.
  (void)pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
  return std::unique_ptr<Regex>(new Regex(std::string(pattern), code));
}

Regex::~Regex() { pcre2_code_free(static_cast<pcre2_code*>(code_)); }

Status Regex::FindAll(std::string_view text,
                      std::vector<std::pair<size_t, size_t>>* matches) const {
  ThreadMatchState& st = GetThreadState();
  if (st.data == nullptr || st.context == nullptr) return Internal("pcre2: out of memory");
  auto* code = static_cast<pcre2_code*>(code_);
  auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t start = 0;
  while (start <= text.size()) {
    int rc =
        pcre2_match(code, subject, text.size(), start, PCRE2_NO_UTF_CHECK, st.data, st.context);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
      // Pathological input for the JIT stack: the interpreter keeps its frames on the heap.
      rc = pcre2_match(code, subject, text.size(), start, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT,
                       st.data, st.context);
    }
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) return Internal("regex '{}' failed: {}", pattern_, PcreError(rc));
    // rc == 0 only means the ovector was too small for all groups; group 0 is still set.
    PCRE2_SIZE* ov = pcre2_get_ovector_pointer(st.data);
    size_t b = ov[0], e = ov[1];
    if (e > b) {
      matches->emplace_back(b, e);
      start = e;
    } else {
      // Empty match: step over one whole character so that we stay on UTF-8 boundaries.
      if (b >= text.size()) break;
      size_t next = b + 1;
      while (next < text.size() && IsUtf8Continuation(text[next])) ++next;
      start = next;
    }
  }
  return Status::Ok();
}

}  // namespace xinfer::tok
