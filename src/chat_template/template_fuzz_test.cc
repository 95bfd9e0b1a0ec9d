// Fixed-seed fuzzing: thousands of mutated real templates and random token soups are parsed
// and rendered. Each must either render or fail with a Status; crashes, hangs and sanitizer
// reports are the bugs this looks for (run it under ASan/UBSan).
#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "chat_template/chat_template.h"
#include "chat_template/test_util.h"

namespace xinfer {
namespace {

const char* const kVocabulary[] = {
    "{%",
    "%}",
    "{{",
    "}}",
    "{#",
    "#}",
    "{%-",
    "-%}",
    "{{-",
    "-}}",
    "{%+",
    "+%}",
    " ",
    "\n",
    "\t",
    "if",
    "elif",
    "else",
    "endif",
    "for",
    "endfor",
    "in",
    "not",
    "and",
    "or",
    "is",
    "set",
    "endset",
    "macro",
    "endmacro",
    "raw",
    "endraw",
    "break",
    "continue",
    "namespace(",
    "ns.x",
    "=",
    "==",
    "!=",
    "<",
    ">",
    "+",
    "-",
    "*",
    "**",
    "/",
    "//",
    "%",
    "~",
    "|",
    ".",
    ",",
    ":",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    "'",
    "\"",
    "\\",
    "x",
    "messages",
    "message",
    "loop.index0",
    "loop.last",
    "m.content",
    "tools",
    "true",
    "none",
    "0",
    "1",
    "-1",
    "1.5",
    "1e400",
    "'a'",
    "\"b\"",
    "|tojson",
    "|length",
    "|join(', ')",
    "|default('d')",
    "|selectattr('role')",
    "|map(attribute='x')",
    "|items",
    "|list",
    "|first",
    "|trim",
    "|int",
    "|sort",
    "|unique",
    "is defined",
    "is none",
    "is string",
    "range(",
    "raise_exception(",
    "caller",
    "varargs",
    "[::-1]",
    "[1:]",
    ".split(",
    ".strip(",
    ".startswith(",
    "'%s' % ",
    "x * 99999",
    "\xff",
    "\xe4\xbd\xa0",
    "{{ 'x' * 1000 }}",
    "{% for i in range(100) %}",
    "{% if x %}",
    "{% set ns = namespace(x=[]) %}",
    "{% set ns.x = ns.x + [ns.x] %}",
    "{% macro f(a, b=1) %}",
    "f(f(1))",
    "{% endmacro %}",
    "{{ f(",
    "include",
    "extends",
    "import",
};

std::vector<std::string> SeedTemplates() {
  std::vector<std::string> seeds = {
      "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}",
      "{% set ns = namespace(n=0) %}{% for m in messages if m.role == 'user' %}"
      "{% set ns.n = ns.n + 1 %}{% endfor %}{{ ns.n }}",
      "{% macro r(v, d=0) %}{% if v is mapping %}{% for k, x in v.items() %}{{ k }}={{ r(x, d+1) }}"
      "{% endfor %}{% else %}{{ v|tojson }}{% endif %}{% endmacro %}{{ r(tools) }}",
      "{{ messages|map(attribute='content')|join('|') }}{{ (messages|last).content[::-1] }}",
  };
  const std::string shared = testing::SharedDir();
  for (const char* model : {"tiny-qwen3", "tiny-qwen2"}) {
    auto config = LoadChatTemplateConfig(shared + "/models/" + model);
    if (config.ok()) seeds.push_back(config->source);
  }
  return seeds;
}

std::string Mutate(const std::string& src, std::mt19937& rng) {
  std::string s = src;
  const int edits = 1 + static_cast<int>(rng() % 4);
  for (int e = 0; e < edits; ++e) {
    const size_t n = s.size();
    const size_t pos = n == 0 ? 0 : rng() % (n + 1);
    const size_t len = n == 0 ? 0 : rng() % std::min<size_t>(n - std::min(pos, n) + 1, 64);
    switch (rng() % 6) {
      case 0:
        s.erase(pos, len);
        break;
      case 1:
        s.insert(pos, s.substr(pos, len));
        break;
      case 2:
        s.insert(pos, kVocabulary[rng() % std::size(kVocabulary)]);
        break;
      case 3:
        if (pos < n) s[pos] = static_cast<char>(rng() % 256);
        break;
      case 4:
        s.resize(pos);
        break;
      default: {
        const size_t other = n == 0 ? 0 : rng() % n;
        s.insert(pos, s.substr(other, len));
      }
    }
  }
  return s;
}

std::string Soup(std::mt19937& rng) {
  std::string s;
  const int tokens = 1 + static_cast<int>(rng() % 40);
  for (int i = 0; i < tokens; ++i) s += kVocabulary[rng() % std::size(kVocabulary)];
  return s;
}

TEST(TemplateFuzzTest, MutatedAndRandomTemplatesNeverCrash) {
  const nlohmann::ordered_json context = MakeChatContext(
      nlohmann::ordered_json::parse(
          R"([{"role": "system", "content": "sys"}, {"role": "user", "content": "hi <tool_response>"},
              {"role": "assistant", "content": "<think>\nr\n</think>\n\nok",
               "tool_calls": [{"function": {"name": "f", "arguments": {"a": [1, 2.5, null]}}}]},
              {"role": "tool", "content": "{\"t\": 1}"}])"),
      nlohmann::ordered_json::parse(
          R"([{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}])"),
      true, "", "<|im_end|>", nlohmann::ordered_json::parse(R"({"enable_thinking": false})"));
  // Small limits keep thousands of renders fast; the code paths are the same.
  TemplateLimits limits;
  limits.max_output_bytes = 64 << 10;
  limits.max_loop_iterations = 5000;
  limits.max_operations = 200'000;
  limits.max_list_items = 10'000;
  const std::vector<std::string> seeds = SeedTemplates();
  std::mt19937 rng(20240611);
  int parsed = 0, rendered = 0;
  constexpr int kIterations = 10000;
  for (int i = 0; i < kIterations; ++i) {
    const std::string src = i % 4 == 3 ? Soup(rng) : Mutate(seeds[rng() % seeds.size()], rng);
    auto tmpl = ChatTemplate::Parse(src, limits);
    if (!tmpl.ok()) {
      EXPECT_FALSE(tmpl.status().message().empty());
      EXPECT_NE(tmpl.status().code(), StatusCode::kInternal) << tmpl.status().message();
      continue;
    }
    ++parsed;
    auto out = tmpl->Render(context);
    if (out.ok()) {
      ++rendered;
      EXPECT_LE(out->size(), limits.max_output_bytes);
    } else {
      EXPECT_NE(out.status().code(), StatusCode::kInternal)
          << out.status().message() << "\ntemplate:\n"
          << src;
    }
  }
  // The generator must exercise rendering, not only the parser's error paths.
  EXPECT_GT(parsed, kIterations / 10);
  EXPECT_GT(rendered, kIterations / 20);
}

}  // namespace
}  // namespace xinfer
