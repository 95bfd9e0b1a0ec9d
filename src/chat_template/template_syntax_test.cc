// Statements and whitespace handling. Every expected string is what Jinja2 3.1 renders under
// Hugging Face's environment (trim_blocks, lstrip_blocks, loopcontrols).
#include <gtest/gtest.h>

#include "chat_template/test_util.h"

namespace xinfer {
namespace {

// clang-format off
const testing::RenderCase kSyntaxCases[] = {
  // ---- text, comments, whitespace control ----
  {"plain_text", R"~(hello world)~", R"~({})~", R"~(hello world)~"},
  {"trailing_newline_dropped", "a\n", R"~({})~", "a"},
  {"only_one_trailing_newline_dropped", "a\n\n", R"~({})~", "a\n"},
  {"crlf_normalized", "a\r\nb\rc", R"~({})~", "a\nb\nc"},
  {"comment", R"~(a{# hidden #}b)~", R"~({})~", R"~(ab)~"},
  {"comment_trim_blocks", "a\n{# c #}\nb", R"~({})~", "a\nb"},
  {"trim_blocks_after_block", "{% if true %}\nyes\n{% endif %}\nafter", R"~({})~", "yes\nafter"},
  {"trim_blocks_not_for_vars", "{{ 'x' }}\ny", R"~({})~", "x\ny"},
  {"lstrip_blocks", "  {% if true %}\n  x\n  {% endif %}", R"~({})~", "  x\n"},
  {"lstrip_only_at_line_start", "  {{ 1 }}\n  {% if true %}  y  {% endif %}  z", R"~({})~", "  1\n  y    z"},
  {"lstrip_tabs", "\t \t{% if true %}x{% endif %}", R"~({})~", "x"},
  {"lstrip_not_for_vars", "  {{ 'v' }}", R"~({})~", "  v"},
  {"minus_strips_before", "a  \n  {%- if true %}b{% endif %}", R"~({})~", "ab"},
  {"minus_strips_after", "{% if true -%}  \n  b{% endif %}", R"~({})~", "b"},
  {"var_minus_both", "a \n {{- 'b' -}} \n c", R"~({})~", "abc"},
  {"plus_disables_lstrip", "  {%+ if true %}x{% endif %}", R"~({})~", "  x"},
  {"plus_disables_trim", "{% if true +%}\nx{% endif %}", R"~({})~", "\nx"},
  {"comment_minus", "a \n{#- c -#}\n b", R"~({})~", "ab"},
  {"raw_block", "{% raw %}{{ not parsed }}{% endraw %}", R"~({})~", "{{ not parsed }}"},
  {"raw_keeps_newline_after_begin", "{% raw %}\n {{ a }} {% endraw %}\nafter\n", R"~({})~", "\n {{ a }} after"},
  {"raw_minus", "x  {%- raw -%}  y  {%- endraw -%}  z", R"~({})~", "xyz"},
  {"block_inside_line_not_stripped", "a {% if true %}b{% endif %} c", R"~({})~", "a b c"},
  {"unicode_whitespace_lstrip", "\xe3\x80\x80{% if true %}x{% endif %}", R"~({})~", "x"},
  // ---- if ----
  {"if_elif_else", "{% for x in [1,2,3] %}{% if x == 1 %}one{% elif x == 2 %}two{% else %}many{% endif %},{% endfor %}", R"~({})~", "one,two,many,"},
  {"if_undefined_is_false", "{% if missing %}y{% else %}n{% endif %}", R"~({})~", "n"},
  {"if_truthiness", "{% for v in [0, 1, '', 'a', [], [0], {}, none, 0.0] %}{{ 'T' if v else 'F' }}{% endfor %}", R"~({})~", "FTFTFTFFF"},
  {"if_empty_dict_ctx", "{% if d %}y{% else %}n{% endif %}", R"~({"d": {}})~", "n"},
  // ---- for ----
  {"for_loop_vars", "{% for x in xs %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }};{% endfor %}", R"~({"xs": ["a", "b"]})~", "1021TrueFalse2;2110FalseTrue2;"},
  {"for_cycle", "{% for a in [1,2,3] %}{{ loop.cycle('x', 'y') }}{% endfor %}", R"~({})~", "xyx"},
  {"for_prev_next", "{% for a in [1,2,3] %}{{ loop.previtem }}-{{ loop.nextitem }};{% endfor %}", R"~({})~", "-2;1-3;2-;"},
  {"for_else", "{% for x in [] %}x{% else %}empty{% endfor %}", R"~({})~", "empty"},
  {"for_else_not_run", "{% for x in [1] %}x{% else %}empty{% endfor %}", R"~({})~", "x"},
  {"for_filtered", "{% for x in range(10) if x is odd %}{{ x }}/{{ loop.index }}/{{ loop.length }} {% endfor %}", R"~({})~", "1/1/5 3/2/5 5/3/5 7/4/5 9/5/5 "},
  {"for_filtered_else", "{% for x in [1,2] if x > 5 %}{{ x }}{% else %}none{% endfor %}", R"~({})~", "none"},
  {"for_dict_items", "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}", R"~({"d": {"z": 1, "a": 2, "m": 3}})~", "z=1;a=2;m=3;"},
  {"for_over_dict_keys", "{% for k in d %}{{ k }}{% endfor %}", R"~({"d": {"b": 1, "a": 2}})~", "ba"},
  {"for_over_string", "{% for c in 'h\xc3\xa9!' %}[{{ c }}]{% endfor %}", R"~({})~", "[h][\xc3\xa9][!]"},
  {"for_undefined", "{% for x in nothing %}x{% endfor %}done", R"~({})~", "done"},
  {"for_unpack_paren", "{% for (a, b) in [[1, 2], [3, 4]] %}{{ a + b }}{% endfor %}", R"~({})~", "37"},
  {"for_nested_loop_var", "{% for a in [1,2] %}{% for b in 'xy' %}{{ loop.index }}{% endfor %}{{ loop.index }}{% endfor %}", R"~({})~", "121122"},
  {"for_break_continue", "{% for x in range(10) %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 5 %}{% break %}{% endif %}{{ x }}{% endfor %}", R"~({})~", "0134"},
  {"for_reverse_slice", "{% for m in xs[::-1] %}{{ m }}{% endfor %}", R"~({"xs": [1, 2, 3]})~", "321"},
  // ---- set / scoping / namespace ----
  {"set_simple", "{% set x = 1 + 2 %}{{ x }}", R"~({})~", "3"},
  {"set_tuple_unpack", "{% set a, b = 1, 2 %}{{ b }}{{ a }}", R"~({})~", "21"},
  {"set_in_loop_does_not_leak", "{% set x = 1 %}{% for i in range(3) %}{% if i == 0 %}{% set x = 5 %}{% endif %}{{ x }}{% endfor %}{{ x }}", R"~({})~", "5111"},
  {"set_in_if_leaks", "{% if true %}{% set x = 'in' %}{% endif %}{{ x }}", R"~({})~", "in"},
  {"set_shadows_context", "{% set messages = 'mine' %}{{ messages }}", R"~({"messages": []})~", "mine"},
  {"namespace_assign", "{% set ns = namespace(n=0, found=false) %}{% for i in range(4) %}{% set ns.n = ns.n + i %}{% endfor %}{{ ns.n }} {{ ns.found }}", R"~({})~", "6 False"},
  {"namespace_new_attr", "{% set ns = namespace() %}{% set ns.a = 'x' %}{{ ns.a }}", R"~({})~", "x"},
  {"block_set", "{% set x %}a{{ 1 + 1 }}b{% endset %}[{{ x }}]", R"~({})~", "[a2b]"},
  // ---- macros ----
  {"macro_defaults", "{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('A') }} {{ greet('B', '?') }} {{ greet(punct='.', name='C') }}", R"~({})~", "Hi A! Hi B? Hi C."},
  {"macro_default_uses_earlier_arg", "{% macro f(a, b=a * 2) %}{{ a }},{{ b }}{% endmacro %}{{ f(3) }}", R"~({})~", "3,6"},
  {"macro_missing_arg_undefined", "{% macro f(a, b) %}[{{ b }}]{% endmacro %}{{ f(1) }}", R"~({})~", "[]"},
  {"macro_recursion", "{% macro fact(n) %}{% if n <= 1 %}1{% else %}{{ n * fact(n - 1)|int }}{% endif %}{% endmacro %}{{ fact(5) }}", R"~({})~", "120"},
  {"macro_sees_globals_not_caller_locals", "{% set g = 'G' %}{% macro m() %}{{ g }}{{ l }}{% endmacro %}{% for l in ['L'] %}{{ m() }}{% endfor %}", R"~({})~", "G"},
  {"macro_varargs", "{% macro m(a) %}{{ a }}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1, 2, 3, k='v') }}", R"~({})~", "1(2, 3){'k': 'v'}"},
  {"macro_output_whitespace", "{% macro m() %}\n  x\n{% endmacro %}[{{ m() }}]", R"~({})~", "[  x\n]"},
  // ---- misc statements ----
  // Hugging Face registers {% generation %} (AssistantTracker); it renders its body.
  {"generation_block", "{% generation %}abc{% endgeneration %}", R"~({})~", "abc"},
  {"output_tuple", "{{ 1, 'a' }}", R"~({})~", "(1, 'a')"},
  {"multiline_tag", "{{\n  'a'\n  ~ 'b'\n}}", R"~({})~", "ab"},
};
// clang-format on

class TemplateSyntaxTest : public ::testing::TestWithParam<testing::RenderCase> {};

TEST_P(TemplateSyntaxTest, RendersLikeJinja2) {
  const testing::RenderCase& c = GetParam();
  EXPECT_EQ(testing::RenderOrError(c.tmpl, c.ctx), c.want) << "template: " << c.tmpl;
}

INSTANTIATE_TEST_SUITE_P(Statements, TemplateSyntaxTest, ::testing::ValuesIn(kSyntaxCases),
                         [](const ::testing::TestParamInfo<testing::RenderCase>& info) {
                           return std::string(info.param.name);
                         });

}  // namespace
}  // namespace xinfer
