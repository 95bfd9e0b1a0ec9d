// Chat templates: a Jinja2-compatible template engine that renders Hugging Face chat templates
// (as found in tokenizer_config.json) byte for byte like transformers' apply_chat_template,
// i.e. Jinja2 with trim_blocks=True, lstrip_blocks=True, the loopcontrols extension,
// raise_exception() and a tojson filter that behaves like json.dumps(ensure_ascii=False).
//
// Templates are untrusted input as far as safety goes: nothing a template or a request can do
// crashes, hangs or exhausts memory; every problem comes back as a Status. There is no file
// access ({% include %}, {% import %}, {% extends %} are refused).
//
// Thread safety: a ChatTemplate is immutable after Parse(); Render() may be called
// concurrently from any number of threads. Copies share the parsed tree.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "base/status.h"

namespace xinfer {

namespace jinja {
struct TemplateAst;
}

struct TemplateLimits {
  // Maximum rendered size; also the cap on any single string value built while rendering.
  size_t max_output_bytes = size_t{16} << 20;
  // Iterations of all {% for %} loops of one render together.
  int64_t max_loop_iterations = 1'000'000;
  // Evaluation steps of one render (expression nodes, elements visited by filters and
  // comparisons, and one per 8 bytes of strings created), bounding both time and memory.
  int64_t max_operations = 100'000'000;
  // Elements of any single list built while rendering (iterating a string, split, list * n).
  size_t max_list_items = 1'000'000;
  // Nested macro calls.
  int max_call_depth = 64;
  // Stack bytes a render may use for recursion (renders must run on threads with at least
  // this plus ~256 KiB of stack; the default thread stack is 8 MiB).
  size_t max_stack_bytes = size_t{1} << 20;
  // Nesting of blocks and expressions when parsing.
  int max_parse_depth = 256;
  // Nesting of lists/dicts in the context and in values built by the template.
  int max_value_depth = 256;
  // Largest range() (Jinja2's sandbox uses the same bound).
  int64_t max_range = 100'000;
};

class ChatTemplate {
 public:
  // Parses Jinja source. Syntax errors are InvalidArgument("line L, column C: ...").
  static StatusOr<ChatTemplate> Parse(std::string_view source, const TemplateLimits& limits = {});

  // Renders with `context`, a JSON object of top-level variables. Object key order is kept
  // (it is visible through tojson and dict iteration), hence ordered_json; a plain
  // nlohmann::json converts implicitly but arrives with sorted keys.
  // raise_exception(msg) fails with InvalidArgument whose message is exactly msg; a limit
  // overrun fails with ResourceExhausted; other runtime errors (undefined attribute of an
  // undefined value, type errors, ...) fail with InvalidArgument("line L: ...").
  StatusOr<std::string> Render(const nlohmann::ordered_json& context) const;

  const TemplateLimits& limits() const { return limits_; }

 private:
  ChatTemplate(std::shared_ptr<const jinja::TemplateAst> ast, const TemplateLimits& limits)
      : ast_(std::move(ast)), limits_(limits) {}

  std::shared_ptr<const jinja::TemplateAst> ast_;
  TemplateLimits limits_;
};

// Builds the context transformers passes to the template: messages, tools (left undefined when
// null or empty, as transformers passes tools=None), add_generation_prompt, bos_token,
// eos_token, then every key of `kwargs` (an object or null) at top level, e.g. enable_thinking.
nlohmann::ordered_json MakeChatContext(const nlohmann::ordered_json& messages,
                                       const nlohmann::ordered_json& tools,
                                       bool add_generation_prompt, const std::string& bos_token,
                                       const std::string& eos_token,
                                       const nlohmann::ordered_json& kwargs);

struct ChatTemplateConfig {
  std::string source;
  std::string bos_token;
  std::string eos_token;
};

// Reads model_dir/tokenizer_config.json: chat_template is a string, or a list of
// {name, template} entries of which "default" is taken; bos_token/eos_token are strings, null
// (empty) or {"content": ...} objects. A missing chat_template is NotFound.
StatusOr<ChatTemplateConfig> LoadChatTemplateConfig(const std::string& model_dir);

// `--chat-template X`: X names a file if one exists (its contents are returned), otherwise X is
// the template text itself.
StatusOr<std::string> ResolveChatTemplateArg(const std::string& arg);

}  // namespace xinfer
