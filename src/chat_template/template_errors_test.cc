// Syntax errors, runtime errors and hostile templates: each must end in a clear Status within
// bounded time and memory, never a crash, hang or abort.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "chat_template/chat_template.h"
#include "chat_template/test_util.h"

namespace xinfer {
namespace {

using ::testing::HasSubstr;
using testing::RenderOrError;

Status ParseStatus(const std::string& src) {
  auto t = ChatTemplate::Parse(src);
  return t.ok() ? Status::Ok() : t.status();
}

Status RenderStatus(const std::string& src, const std::string& ctx = "{}",
                    const TemplateLimits& limits = {}) {
  auto t = ChatTemplate::Parse(src, limits);
  if (!t.ok()) return t.status();
  auto out = t->Render(nlohmann::ordered_json::parse(ctx));
  return out.ok() ? Status::Ok() : out.status();
}

std::string Repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

// ---- syntax errors carry line and column ----

TEST(TemplateSyntaxErrorTest, ReportsLineAndColumn) {
  const Status s = ParseStatus("{% if x %}\n  {{ 1 + }}\n{% endif %}");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "line 2, column 10: expected an expression, got end of print statement '}}'");
}

TEST(TemplateSyntaxErrorTest, UnterminatedBlockTag) {
  EXPECT_EQ(ParseStatus("ab\n{% if x").message(),
            "line 2, column 1: unexpected end of template, expected '%}' to close the tag");
}

TEST(TemplateSyntaxErrorTest, UnterminatedPrintTag) {
  EXPECT_EQ(ParseStatus("hello {{ name").message(),
            "line 1, column 7: unexpected end of template, expected '}}' to close the tag");
}

TEST(TemplateSyntaxErrorTest, UnterminatedString) {
  EXPECT_EQ(ParseStatus("{{ 'abc }}").message(), "line 1, column 4: unterminated string literal");
}

TEST(TemplateSyntaxErrorTest, UnterminatedComment) {
  EXPECT_EQ(ParseStatus("x {# never closed").message(),
            "line 1, column 3: Missing end of comment tag");
}

TEST(TemplateSyntaxErrorTest, MissingEndfor) {
  EXPECT_EQ(ParseStatus("{% for x in xs %}\nbody").message(),
            "line 2, column 5: unexpected end of template: expected 'endfor' or 'else' to close "
            "the 'for' block opened at line 1");
}

TEST(TemplateSyntaxErrorTest, MissingEndifInsideFor) {
  EXPECT_THAT(ParseStatus("{% for x in xs %}{% if x %}{% endfor %}").message(),
              HasSubstr("unexpected 'endfor' tag (expected 'elif' or 'else' or 'endif'"));
}

TEST(TemplateSyntaxErrorTest, StrayEndTag) {
  EXPECT_EQ(ParseStatus("{% endif %}").message(), "line 1, column 4: unexpected 'endif' tag");
}

TEST(TemplateSyntaxErrorTest, UnknownFilterAndTest) {
  EXPECT_EQ(ParseStatus("{{ x|nope }}").message(), "line 1, column 6: no filter named 'nope'");
  EXPECT_EQ(ParseStatus("{{ x is nope }}").message(), "line 1, column 9: no test named 'nope'");
}

TEST(TemplateSyntaxErrorTest, UnknownTag) {
  EXPECT_EQ(ParseStatus("{% frobnicate %}").message(),
            "line 1, column 4: unknown tag 'frobnicate'");
}

TEST(TemplateSyntaxErrorTest, UnbalancedBrackets) {
  EXPECT_EQ(ParseStatus("{{ (1 ] }}").message(), "line 1, column 7: unexpected ']', expected ')'");
  EXPECT_EQ(ParseStatus("{{ 1) }}").message(), "line 1, column 5: unexpected ')'");
}

TEST(TemplateSyntaxErrorTest, BreakOutsideLoop) {
  EXPECT_EQ(ParseStatus("{% break %}").message(), "line 1, column 4: 'break' outside of a loop");
}

TEST(TemplateSyntaxErrorTest, FileAccessIsRefused) {
  for (const char* tag : {"include 'x.j2'", "import 'x.j2' as x", "from 'x' import y",
                          "extends 'base.j2'", "block body"}) {
    const Status s = ParseStatus(std::string("{% ") + tag + " %}");
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(s.message(), HasSubstr("is not supported: chat templates cannot load"));
  }
}

// ---- runtime errors ----

TEST(TemplateRuntimeErrorTest, RaiseExceptionMessageIsExact) {
  const Status s = RenderStatus(
      "{% for m in messages %}{% if m.role not in ['user', 'assistant'] %}"
      "{{ raise_exception('Conversation roles must be user/assistant') }}{% endif %}{% endfor %}",
      R"({"messages": [{"role": "user"}, {"role": "robot"}]})");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "Conversation roles must be user/assistant");
}

TEST(TemplateRuntimeErrorTest, RaiseExceptionInsideMacro) {
  EXPECT_EQ(
      RenderStatus("{% macro f() %}{{ raise_exception('from macro') }}{% endmacro %}{{ f() }}")
          .message(),
      "from macro");
}

TEST(TemplateRuntimeErrorTest, UndefinedAttributeOfUndefined) {
  EXPECT_EQ(RenderStatus("\n{{ x.y }}").message(), "line 2: 'x' is undefined");
  EXPECT_EQ(RenderStatus("{{ d.a.b }}", R"({"d": {}})").message(),
            "line 1: 'dict object' has no attribute 'a'");
  EXPECT_EQ(RenderStatus("{{ xs[3].a }}", R"({"xs": []})").message(),
            "line 1: list object has no element 3");
  EXPECT_EQ(RenderStatus("{{ x + 1 }}").message(), "line 1: 'x' is undefined");
  EXPECT_EQ(RenderStatus("{{ f() }}").message(), "line 1: 'f' is undefined");
}

TEST(TemplateRuntimeErrorTest, TypeErrors) {
  EXPECT_EQ(RenderStatus("{{ 'a' + 1 }}").message(),
            "line 1: can only concatenate str (not \"int\") to str");
  EXPECT_EQ(RenderStatus("{{ 1 / 0 }}").message(), "line 1: division by zero");
  EXPECT_EQ(RenderStatus("{{ 1 < 'a' }}").message(),
            "line 1: '<' not supported between instances of 'int' and 'str'");
  EXPECT_EQ(RenderStatus("{% for x in 5 %}{% endfor %}").message(),
            "line 1: 'int' object is not iterable");
  EXPECT_EQ(RenderStatus("{{ 5() }}").message(), "line 1: 'int' object is not callable");
  EXPECT_EQ(RenderStatus("{% set x = 1 %}{% set x.a = 2 %}").message(),
            "line 1: cannot assign attribute on non-namespace object");
  EXPECT_EQ(RenderStatus("{{ 2 ** 100 }}").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(RenderStatus("{{ undefined_fn|tojson }}").message(),
            "line 1: Object of type Undefined is not JSON serializable");
}

TEST(TemplateRuntimeErrorTest, ContextMustBeAnObject) {
  auto t = ChatTemplate::Parse("x");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->Render(nlohmann::ordered_json::array()).status().code(),
            StatusCode::kInvalidArgument);
}

// ---- hostile templates ----

TEST(TemplateHostileTest, DeepParentheses) {
  const std::string src = "{{ " + Repeat("(", 100000) + "1" + Repeat(")", 100000) + " }}";
  EXPECT_THAT(ParseStatus(src).message(), HasSubstr("nested too deeply"));
}

TEST(TemplateHostileTest, DeepBracketsBracesAndNots) {
  EXPECT_THAT(ParseStatus("{{ " + Repeat("[", 100000) + Repeat("]", 100000) + " }}").message(),
              HasSubstr("nested too deeply"));
  EXPECT_THAT(
      ParseStatus("{{ " + Repeat("{'a': ", 50000) + "1" + Repeat("}", 50000) + " }}").message(),
      HasSubstr("nested too deeply"));
  EXPECT_THAT(ParseStatus("{{ " + Repeat("not ", 100000) + "x }}").message(),
              HasSubstr("nested too deeply"));
  EXPECT_THAT(ParseStatus("{{ " + Repeat("-", 100000) + "1 }}").message(),
              HasSubstr("nested too deeply"));
}

TEST(TemplateHostileTest, LongOperatorChainsAreBounded) {
  // Built iteratively by the parser but evaluated recursively: the tree height is capped.
  EXPECT_THAT(ParseStatus("{{ 1" + Repeat(" + 1", 100000) + " }}").message(),
              HasSubstr("nested too deeply"));
  EXPECT_THAT(ParseStatus("{{ x" + Repeat(".a", 100000) + " }}").message(),
              HasSubstr("nested too deeply"));
  EXPECT_THAT(ParseStatus("{{ x" + Repeat("|string", 100000) + " }}").message(),
              HasSubstr("nested too deeply"));
  // A chain within the limit renders.
  EXPECT_EQ(RenderOrError("{{ 1" + Repeat(" + 1", 100) + " }}"), "101");
}

TEST(TemplateHostileTest, DeepBlockNesting) {
  const std::string src = Repeat("{% if true %}", 10000) + "x" + Repeat("{% endif %}", 10000);
  EXPECT_THAT(ParseStatus(src).message(), HasSubstr("nested too deeply"));
  const std::string ok = Repeat("{% if true %}", 50) + "x" + Repeat("{% endif %}", 50);
  EXPECT_EQ(RenderOrError(ok), "x");
}

TEST(TemplateHostileTest, HugeRange) {
  const Status s = RenderStatus("{% for i in range(10**9) %}x{% endfor %}");
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(s.message(), HasSubstr("Range too big"));
}

TEST(TemplateHostileTest, NestedLoopsHitIterationLimit) {
  const auto start = std::chrono::steady_clock::now();
  const Status s = RenderStatus(
      "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}");
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(s.message(), HasSubstr("loops exceeded the limit of 1000000 iterations"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
}

TEST(TemplateHostileTest, OperationBudgetBoundsLoopFreeWork) {
  // A filter chain over a big list inside a modest loop: the operation budget stops it.
  TemplateLimits limits;
  limits.max_operations = 2'000'000;
  const Status s = RenderStatus(
      "{% set xs = range(100000)|list %}{% for i in range(1000) %}{{ xs|select('odd')|list|length "
      "}}"
      "{% endfor %}",
      "{}", limits);
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(s.message(), HasSubstr("operation budget"));
}

TEST(TemplateHostileTest, InfiniteMacroRecursion) {
  const Status s = RenderStatus("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}");
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(s.message(), HasSubstr("macro calls nested deeper than the limit of 64"));
}

TEST(TemplateHostileTest, DeepRecursionWithDeepExpressionsStaysOnTheStack) {
  // Each macro level evaluates a deep expression; the stack guard must stop it cleanly.
  const std::string deep = Repeat("(", 100) + "n" + Repeat(")", 100);
  TemplateLimits limits;
  limits.max_call_depth = 100000;
  const Status s = RenderStatus("{% macro f(n) %}{{ f(" + deep + " + 1) }}{% endmacro %}{{ f(0) }}",
                                "{}", limits);
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(s.message(), HasSubstr("recursion is too deep"));
}

TEST(TemplateHostileTest, HugeStringMultiplication) {
  const Status s = RenderStatus("{{ 'x' * 1000000000000 }}");
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(s.message(), HasSubstr("exceeds the limit"));
  EXPECT_EQ(RenderStatus("{{ ([1] * 100000000)|length }}").code(), StatusCode::kResourceExhausted);
}

TEST(TemplateHostileTest, RepeatedDoublingConcatenation) {
  const Status s = RenderStatus(
      "{% set ns = namespace(s='xxxxxxxx') %}{% for i in range(100) %}{% set ns.s = ns.s ~ ns.s %}"
      "{% endfor %}{{ ns.s|length }}");
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
}

TEST(TemplateHostileTest, OutputLimit) {
  TemplateLimits limits;
  limits.max_output_bytes = 1000;
  const Status s = RenderStatus("{% for i in range(1000) %}0123456789{% endfor %}", "{}", limits);
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(s.message(), HasSubstr("template output exceeds the limit of 1000 bytes"));
  // Output captured by macros counts too.
  const Status m = RenderStatus(
      "{% macro m() %}{% for i in range(1000) %}0123456789{% endfor %}{% endmacro %}{{ m() }}",
      "{}", limits);
  EXPECT_EQ(m.code(), StatusCode::kResourceExhausted);
}

TEST(TemplateHostileTest, ExponentialSharedStructureIsBounded) {
  // Each level doubles the printed size while memory stays small; printing must stop at the
  // output limit, and comparing at the operation budget, instead of running for 2^60 steps.
  TemplateLimits limits;
  limits.max_operations = 5'000'000;
  const Status s = RenderStatus(
      "{% set ns = namespace(v=[1]) %}{% for i in range(60) %}{% set ns.v = [ns.v, ns.v] %}"
      "{% endfor %}{{ ns.v }}",
      "{}", limits);
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  const Status eq = RenderStatus(
      "{% set ns = namespace(a=[1], b=[1]) %}{% for i in range(60) %}"
      "{% set ns.a = [ns.a, ns.a] %}{% set ns.b = [ns.b, ns.b] %}{% endfor %}{{ ns.a == ns.b }}",
      "{}", limits);
  EXPECT_EQ(eq.code(), StatusCode::kResourceExhausted);
}

TEST(TemplateHostileTest, DeeplyNestedValues) {
  const Status s = RenderStatus(
      "{% set ns = namespace(v=1) %}{% for i in range(100000) %}{% set ns.v = [ns.v] %}"
      "{% endfor %}{{ ns.v }}");
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(s.message(), HasSubstr("nested deeper than the limit"));
  std::string deep_json = Repeat("[", 100000) + Repeat("]", 100000);
  EXPECT_EQ(RenderStatus("{{ x }}", "{\"x\": " + deep_json + "}").code(),
            StatusCode::kInvalidArgument);
}

TEST(TemplateHostileTest, NamespaceCannotHoldNamespace) {
  EXPECT_THAT(RenderStatus("{% set ns = namespace() %}{% set ns.self = ns %}").message(),
              HasSubstr("cannot hold a namespace"));
  EXPECT_THAT(RenderStatus("{% set ns = namespace() %}{% set ns.l = [1, {'a': ns}] %}").message(),
              HasSubstr("cannot hold a namespace"));
}

}  // namespace
}  // namespace xinfer
