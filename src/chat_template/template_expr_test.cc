// Expressions, filters, tests and methods. Every expected string is what Jinja2 3.1 renders
// under Hugging Face's environment (tojson = json.dumps(ensure_ascii=False)).
#include <gtest/gtest.h>

#include "chat_template/test_util.h"

namespace xinfer {
namespace {

// clang-format off
const testing::RenderCase kExprCases[] = {
  // ---- literals and printing ----
  {"print_scalars", "{{ none }} {{ None }} {{ true }} {{ False }} {{ 42 }} {{ -7 }} {{ 1.5 }} {{ 'x' }}", R"~({})~", "None None True False 42 -7 1.5 x"},
  {"print_list_repr", "{{ [1, 'a', none, true, 1.0, {'k': 'v'}, (1,), (1, 2)] }}", R"~({})~", "[1, 'a', None, True, 1.0, {'k': 'v'}, (1,), (1, 2)]"},
  {"print_str_repr_quotes", R"~({{ ["it's", 'say "hi"', "both ' \"", 'tab\there'] }})~", R"~({})~", R"~(["it's", 'say "hi"', 'both \' "', 'tab\there'])~"},
  {"print_dict_from_context", "{{ d }}", R"~({"d": {"b": [1, 2.5], "a": null}})~", "{'b': [1, 2.5], 'a': None}"},
  {"print_float_repr", "{{ 1e16 }} {{ 1e15 }} {{ 0.0001 }} {{ 0.00001 }} {{ 0.1 + 0.2 }} {{ 1.0 / 3 }} {{ 2.5e-7 }} {{ 1e300 * 1e10 }}", R"~({})~", "1e+16 1000000000000000.0 0.0001 1e-05 0.30000000000000004 0.3333333333333333 2.5e-07 inf"},
  {"string_escapes", R"~({{ 'a\nb\t\x41\u00e9\\' }})~", R"~({})~", "a\nb\tA\xc3\xa9\\"},
  {"adjacent_strings", "{{ 'a' \"b\" 'c' }}", R"~({})~", "abc"},
  {"integer_literals", "{{ 0x1F }} {{ 0o17 }} {{ 0b101 }} {{ 1_000 }} {{ 1_0.5 }}", R"~({})~", "31 15 5 1000 10.5"},
  // ---- arithmetic ----
  {"int_float_arith", "{{ 7 / 2 }} {{ 4 / 2 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7.5 // 2 }} {{ -7.5 % 2 }}", R"~({})~", "3.5 2.0 3 -4 1 2 3.0 0.5"},
  {"pow_left_assoc", "{{ 2 ** 3 ** 2 }} {{ 2 ** -1 }} {{ 2.0 ** 2 }}", R"~({})~", "64 0.5 4.0"},
  {"precedence", "{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ -2 ** 2 }} {{ 10 - 2 - 3 }}", R"~({})~", "7 9 4 5"},
  {"bool_arith", "{{ true + 1 }} {{ true * 2.5 }}", R"~({})~", "2 2.5"},
  {"string_ops", "{{ 'ab' + 'cd' }} {{ 'ab' * 3 }} {{ 3 * 'x' }} {{ 1 ~ 'a' ~ none }} {{ [1] + [2] }} {{ [0] * 3 }}", R"~({})~", "abcd ababab xxx 1aNone [1, 2] [0, 0, 0]"},
  {"concat_undefined_empty", "[{{ 'a' ~ nothing }}]", R"~({})~", "[a]"},
  {"percent_format", "{{ '%s-%d-%05.2f%%' % ('a', 3, 2.5) }} {{ 'x=%s' % 5 }}", R"~({})~", "a-3-02.50% x=5"},
  // ---- comparisons and logic ----
  {"comparisons", "{{ 1 < 2 }} {{ 2 <= 1 }} {{ 'a' < 'b' }} {{ 1 == 1.0 }} {{ 1 == true }} {{ [1, 2] == [1, 2] }} {{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }}", R"~({})~", "True False True True True True True False"},
  {"in_operator", "{{ 'b' in 'abc' }} {{ 2 in [1, 2] }} {{ 'k' in d }} {{ 'z' not in d }} {{ 'x' in nothing }}", R"~({"d": {"k": 1}})~", "True True True True False"},
  {"and_or_values", "{{ 0 or 'x' }} {{ 1 and 'y' }} {{ '' or [] }} {{ none and 1 }} {{ not 0 }} {{ not 'a' }}", R"~({})~", "x y [] None True False"},
  {"cond_expr", "{{ 'y' if 1 else 'n' }} {{ 'y' if 0 else 'n' }} [{{ 'y' if 0 }}] {{ 'a' if false else 'b' if true else 'c' }}", R"~({})~", "y n [] b"},
  {"undefined_equality", "{{ x == y }} {{ x == none }} {{ x is defined }} {{ x is undefined }}", R"~({})~", "True False False True"},
  // ---- attribute / item access ----
  {"attr_and_item", "{{ m.role }} {{ m['role'] }} {{ m.content }}", R"~({"m": {"role": "user", "content": "hi"}})~", "user user hi"},
  {"missing_key_prints_empty", "[{{ m.nope }}][{{ m['nope'] }}][{{ xs[10] }}][{{ n.x }}]", R"~({"m": {}, "xs": [], "n": null})~", "[][][][]"},
  {"negative_index", "{{ xs[-1] }} {{ xs.0 }} {{ 'hello'[1] }} {{ 'h\xc3\xa9llo'[1] }}", R"~({"xs": [1, 2, 3]})~", "3 1 e \xc3\xa9"},
  {"slicing", "{{ xs[1:] }} {{ xs[:-1] }} {{ xs[::2] }} {{ xs[::-1] }} {{ xs[5:] }} {{ 'abcdef'[1:4] }} {{ 'h\xc3\xa9llo'[::-1] }} {{ xs[-2:] }}", R"~({"xs": [1, 2, 3, 4]})~", "[2, 3, 4] [1, 2, 3] [1, 3] [4, 3, 2, 1] [] bcd oll\xc3\xa9h [3, 4]"},
  {"key_named_like_method", "{{ d['items'] }} {{ d.get('items') }}", R"~({"d": {"items": 5}})~", "5 5"},
  // ---- string methods ----
  {"startswith_endswith", "{{ s.startswith('<tool') }} {{ s.endswith('>') }} {{ s.startswith(('x', '<')) }} {{ s.endswith('nope') }}", R"~({"s": "<tool_response>"})~", "True True True False"},
  {"split", "{{ 'a,b,,c'.split(',') }} {{ '  a  b c '.split() }} {{ 'a,b,c'.split(',', 1) }} {{ 'a b c'.rsplit(' ', 1) }} {{ 'x</think>y</think>z'.split('</think>')[-1] }}", R"~({})~", "['a', 'b', '', 'c'] ['a', 'b', 'c'] ['a', 'b,c'] ['a b', 'c'] z"},
  {"strip_family", "[{{ '  x  '.strip() }}][{{ '\\n\\nx\\n'.lstrip('\\n') }}][{{ 'xxabcxx'.rstrip('x') }}][{{ '<a>'.strip('<>') }}]", R"~({})~", "[x][x\n][xxabc][a]"},
  {"replace_upper_lower", "{{ 'aXa'.replace('a', 'b') }} {{ 'abc'.upper() }} {{ 'ABC'.lower() }} {{ 'hello world'.title() }} {{ 'hELLO'.capitalize() }} {{ 'ab'.replace('', '-') }}", R"~({})~", "bXb ABC abc Hello World Hello -a-b-"},
  {"format_find_count", "{{ '{} and {}'.format('a', 1) }} {{ '{0}{0}{name}'.format('x', name='y') }} {{ 'h\xc3\xa9llo'.find('l') }} {{ 'abc'.find('z') }} {{ 'banana'.count('a') }} {{ '-'.join(['a', 'b']) }}", R"~({})~", "a and 1 xxy 2 -1 3 a-b"},
  {"str_predicates", "{{ '123'.isdigit() }} {{ 'ab'.isalpha() }} {{ ' '.isspace() }} {{ 'ab1'.isalnum() }} {{ 'abc'.islower() }} {{ 'ABC'.isupper() }}", R"~({})~", "True True True True True True"},
  {"unicode_case", "{{ 'héllo wörld'|upper }} {{ 'ÉCOLE'.lower() }} {{ 'élan vital'.title() }} {{ 'éTÉ'|capitalize }}", R"~({})~", "HÉLLO WÖRLD école Élan Vital Été"},
  {"list_methods", "{{ [1, 2, 1].count(1) }} {{ ['a', 'b'].index('b') }}", R"~({})~", "2 1"},
  // ---- dict methods ----
  {"dict_methods", "{{ d.keys()|list }} {{ d.values()|list }} {{ d.items()|list }} {{ d.get('a') }} {{ d.get('z') }} {{ d.get('z', 0) }}", R"~({"d": {"a": 1, "b": 2}})~", "['a', 'b'] [1, 2] [('a', 1), ('b', 2)] 1 None 0"},
  // ---- tests ----
  {"type_tests", "{{ 'a' is string }} {{ 1 is number }} {{ 1 is integer }} {{ 1.0 is float }} {{ 1.0 is integer }} {{ true is boolean }} {{ true is integer }} {{ d is mapping }} {{ xs is sequence }} {{ xs is iterable }} {{ none is none }} {{ d is sequence }} {{ 1 is iterable }}", R"~({"d": {}, "xs": []})~", "True True True True False True False True True True True True False"},
  {"value_tests", "{{ true is true }} {{ 1 is true }} {{ false is false }} {{ 0 is false }} {{ 3 is odd }} {{ 4 is even }} {{ 9 is divisibleby 3 }} {{ 2 is equalto 2 }} {{ 2 is eq 3 }} {{ 'a' is in 'abc' }} {{ 'abc' is lower }} {{ 3 is gt 2 }} {{ 3 is not lt 2 }}", R"~({})~", "True False True False True True True True False True True True True"},
  {"is_not_none", "{{ x is not none }} {{ y is not none }} {{ z is not none }}", R"~({"x": null, "y": 0})~", "False True True"},
  {"float_parity_tests", "{{ 2.5 is odd }} {{ 3.0 is odd }} {{ 4.0 is even }} {{ 7.5 is divisibleby 2.5 }}", R"~({})~", "False True True True"},
  {"callable_test", "{{ range is callable }} {{ 'x' is callable }} {{ 'x'.upper is callable }}", R"~({})~", "True False True"},
  // ---- filters ----
  {"length_count", "{{ xs|length }} {{ 'h\xc3\xa9'|length }} {{ d|count }} {{ nothing|length }}", R"~({"xs": [1, 2], "d": {"a": 1}})~", "2 2 1 0"},
  {"trim_string_list", "[{{ '  a '|trim }}][{{ 'xxaxx'|trim('x') }}] {{ 12|string + '!' }} {{ 'ab'|list }} {{ d|list }}", R"~({"d": {"k": 1, "j": 2}})~", "[a][a] 12! ['a', 'b'] ['k', 'j']"},
  {"first_last", "{{ xs|first }} {{ xs|last }} {{ 'abc'|first }} [{{ []|first }}]", R"~({"xs": [1, 2, 3]})~", "1 3 a []"},
  {"join", "{{ xs|join(', ') }} {{ [1, 2]|join }} {{ users|join(',', attribute='name') }}", R"~({"xs": ["a", "b"], "users": [{"name": "u1"}, {"name": "u2"}]})~", "a, b 12 u1,u2"},
  {"default", "{{ x|default('d') }} {{ none|default('d') }} {{ ''|default('d', true) }} {{ 'v'|d('d') }} {{ 0|default('d', boolean=true) }}", R"~({})~", "d None d v d"},
  {"case_filters", "{{ 'aB'|upper }} {{ 'aB'|lower }} {{ 'hELLO wORLD'|capitalize }} {{ 'hello-world foo(bar'|title }}", R"~({})~", "AB ab Hello world Hello-World Foo(Bar"},
  {"replace_filter", "{{ 'aaa'|replace('a', 'b') }} {{ 'aaa'|replace('a', 'b', 2) }} {{ 'x'|safe }}", R"~({})~", "bbb bba x"},
  {"items_filter", "{% for k, v in d|items %}{{ k }}{{ v }}{% endfor %}", R"~({"d": {"x": 1, "y": 2}})~", "x1y2"},
  {"selectattr_rejectattr", "{{ ms|selectattr('role', 'equalto', 'user')|map(attribute='c')|list }} {{ ms|rejectattr('role', 'eq', 'user')|map(attribute='c')|list }} {{ ms|selectattr('flag')|list|length }} {{ ms|selectattr('flag', 'defined')|list|length }}", R"~({"ms": [{"role": "user", "c": 1, "flag": true}, {"role": "tool", "c": 2}, {"role": "user", "c": 3, "flag": false}]})~", "[1, 3] [2] 1 2"},
  {"select_reject", "{{ [1, 2, 3, 4]|select('odd')|list }} {{ [1, 2, 3, 4]|reject('odd')|list }} {{ [0, 1, '', 'a']|select|list }} {{ [1, 5, 10]|select('gt', 4)|list }}", R"~({})~", "[1, 3] [2, 4] [1, 'a'] [5, 10]"},
  {"falsy_input_to_select_map", "{{ none|map('string')|list }} {{ false|select|list }}", R"~({})~", "[] []"},
  {"map", "{{ ['A', 'b']|map('lower')|list }} {{ [1, 2]|map('string')|join('|') }} {{ ts|map(attribute='f.name')|list }} {{ ts|map(attribute='x', default='-')|list }}", R"~({"ts": [{"f": {"name": "a"}}, {"f": {"name": "b"}}]})~", "['a', 'b'] 1|2 ['a', 'b'] ['-', '-']"},
  {"int_float_filters", "{{ '42'|int }} {{ '4.7'|int }} {{ 'x'|int }} {{ 'x'|int(7) }} {{ 3.9|int }} {{ '0x1A'|int(0, 16) }} {{ '2.5'|float }} {{ 3|float }} {{ 'x'|float }}", R"~({})~", "42 4 0 7 3 26 2.5 3.0 0.0"},
  {"abs_round", "{{ -3|abs }} {{ (-2.5)|abs }} {{ 2.5|round }} {{ 3.5|round }} {{ 2.675|round(2) }} {{ 2.1|round(0, 'ceil') }} {{ 2.9|round(method='floor') }} {{ 5|round }}", R"~({})~", "3 2.5 2.0 4.0 2.67 3.0 2.0 5"},
  {"unique_sort", "{{ ['a', 'B', 'A', 'b', 'c']|unique|list }} {{ [3, 1, 2]|sort }} {{ [3, 1, 2]|sort(reverse=true) }} {{ ['b', 'A', 'c']|sort }} {{ us|sort(attribute='n')|map(attribute='n')|list }}", R"~({"us": [{"n": 2}, {"n": 1}]})~", "['a', 'B', 'c'] [1, 2, 3] [3, 2, 1] ['A', 'b', 'c'] [1, 2]"},
  {"dictsort_reverse_minmax_sum", "{{ d|dictsort }} {{ [1, 2, 3]|reverse|list }} {{ 'abc'|reverse }} {{ [3, 1, 2]|min }} {{ [3, 1, 2]|max }} {{ [1, 2, 3]|sum }} {{ [1.5, 2]|sum }}", R"~({"d": {"b": 1, "a": 2}})~", "[('a', 2), ('b', 1)] [3, 2, 1] cba 1 3 6 3.5"},
  {"indent", "{{ 'a\\nb\\n\\nc'|indent }}|{{ 'a\\nb'|indent(2, true) }}|{{ 'a\\n\\nb'|indent(width='> ', blank=true) }}", R"~({})~", "a\n    b\n\n    c|  a\n  b|a\n> \n> b"},
  {"escape_format", "{{ '<a href=\"x\">&</a>'|e }} {{ '%s=%d'|format('n', 3) }}", R"~({})~", "&lt;a href=&#34;x&#34;&gt;&amp;&lt;/a&gt; n=3"},
  // ---- tojson ----
  {"tojson_basic", "{{ v|tojson }}", R"~({"v": {"b": 1, "a": [true, false, null], "c": 1.5, "d": "s"}})~", R"~({"b": 1, "a": [true, false, null], "c": 1.5, "d": "s"})~"},
  {"tojson_unicode_and_escapes", "{{ v|tojson }}", R"~({"v": "北京 \"q\" \\ \n\t\u0001 <&> é"})~", R"~("北京 \"q\" \\ \n\t\u0001 <&> é")~"},
  {"tojson_ensure_ascii", "{{ v|tojson(ensure_ascii=true) }}", R"~({"v": "é😀"})~", R"~("\u00e9\ud83d\ude00")~"},
  {"tojson_floats", "{{ [1.0, 0.5, 1e20, 1e-7, 100.0, 3]|tojson }} {{ v|tojson }}", R"~({"v": [2.0, 1e2, 12345678.9]})~", "[1.0, 0.5, 1e+20, 1e-07, 100.0, 3] [2.0, 100.0, 12345678.9]"},
  {"tojson_indent", "{{ v|tojson(indent=2) }}", R"~({"v": {"a": [1, {"b": null}], "e": [], "f": {}}})~", "{\n  \"a\": [\n    1,\n    {\n      \"b\": null\n    }\n  ],\n  \"e\": [],\n  \"f\": {}\n}"},
  {"tojson_sort_keys_separators", "{{ v|tojson(sort_keys=true) }} {{ v|tojson(separators=(',', ':')) }}", R"~({"v": {"b": 1, "a": 2}})~", R"~({"a": 2, "b": 1} {"b":1,"a":2})~"},
  {"tojson_literals", "{{ {'k': (1, 2), 'n': none}|tojson }} {{ 'x'|tojson }} {{ 5|tojson }}", R"~({})~", R"~({"k": [1, 2], "n": null} "x" 5)~"},
  {"tojson_nested_key_order", "{{ tools[0]|tojson }}", R"~({"tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {"z": {"type": "string"}, "a": {"type": "integer"}}, "required": ["z"]}}}]})~", R"~({"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {"z": {"type": "string"}, "a": {"type": "integer"}}, "required": ["z"]}}})~"},
  // ---- globals ----
  {"range", "{{ range(3)|list }} {{ range(1, 7, 2)|list }} {{ range(3, 0, -1)|list }} {{ range(0)|list }}", R"~({})~", "[0, 1, 2] [1, 3, 5] [3, 2, 1] []"},
  {"dict_global", "{{ dict(a=1, b='x') }}", R"~({})~", "{'a': 1, 'b': 'x'}"},
  {"namespace_print_attr", "{% set ns = namespace(a=1) %}{{ ns.a }} {{ ns.b is defined }}", R"~({})~", "1 False"},
  // ---- undefined semantics ----
  {"undefined_prints_empty", "[{{ nothing }}]", R"~({})~", "[]"},
  {"undefined_default_chain", "{{ nothing|default(none) is none }}", R"~({})~", "True"},
  {"undefined_iterates_empty", "{{ nothing|list }} {{ nothing|length }}", R"~({})~", "[] 0"},
  {"missing_attr_is_undefined", "{{ m.content is defined }} {{ m.tool_calls is undefined }}", R"~({"m": {"content": "x"}})~", "True True"},
};
// clang-format on

class TemplateExprTest : public ::testing::TestWithParam<testing::RenderCase> {};

TEST_P(TemplateExprTest, RendersLikeJinja2) {
  const testing::RenderCase& c = GetParam();
  EXPECT_EQ(testing::RenderOrError(c.tmpl, c.ctx), c.want) << "template: " << c.tmpl;
}

INSTANTIATE_TEST_SUITE_P(Expressions, TemplateExprTest, ::testing::ValuesIn(kExprCases),
                         [](const ::testing::TestParamInfo<testing::RenderCase>& info) {
                           return std::string(info.param.name);
                         });

}  // namespace
}  // namespace xinfer
