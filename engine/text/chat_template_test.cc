// Each construct of the chat-template subset and each refusal, on small templates. The
// expected strings are what @huggingface/jinja 0.5.11 renders for the same template and
// variables (checked with Node when written); the real templates are compared with it live
// in chat_template_oracle_test.cc.
#include "engine/text/chat_template.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "absl/strings/match.h"

namespace accel::text {
namespace {

using nlohmann::json;

// Renders `source` over messages `m` (JSON text), or returns "ERR <message>".
std::string R(std::string_view source, std::string_view m = "[]", bool generation = false) {
  auto t = ChatTemplate::Parse(source, "<s>", "</s>");
  if (!t.ok()) return "ERR " + std::string(t.status().message());
  auto out = t->Render(json::parse(m), generation);
  if (!out.ok()) return "ERR " + std::string(out.status().message());
  return *out;
}

TEST(ChatTemplateTest, LoopVariablesAndConditions) {
  EXPECT_EQ(R("{% for m in messages %}{{ loop.index0 }}{{ m.role }}{% if not loop.last %},"
              "{% endif %}{% endfor %}",
              R"([{"role":"a"},{"role":"b"}])"),
            "0a,1b");
  EXPECT_EQ(R("{% for m in messages if m.role != 'x' %}{{ loop.length }}{{ m.role }}{% endfor %}",
              R"([{"role":"x"},{"role":"b"},{"role":"c"}])"),
            "2b2c");
  EXPECT_EQ(R("{% for a, b in [[1,2],[3,4]] %}{{ a }}{{ b }}{% else %}empty{% endfor %}"
              "{% for x in [] %}x{% else %}E{% endfor %}"),
            "1234E");
  EXPECT_EQ(R("{% if false %}a{% elif 1 > 2 %}b{% elif 'x' %}c{% else %}d{% endif %}"), "c");
  EXPECT_EQ(R("{{ bos_token }}{% if add_generation_prompt %}G{% endif %}", "[]", true), "<s>G");
}

TEST(ChatTemplateTest, BreakAndContinueDropTheIterationsOutput) {
  EXPECT_EQ(R("{% for x in [1,2,3,4] %}{% if x == 2 %}{% continue %}{% endif %}"
              "{% if x == 4 %}{% break %}{% endif %}{{ x }}{% endfor %}"),
            "13");
}

TEST(ChatTemplateTest, WhitespaceControlAndHfBlockTrimming) {
  // trim_blocks + lstrip_blocks, and the template's one trailing newline dropped.
  EXPECT_EQ(R("a\n  {% if true %}\n  x\n  {% endif %}\nb\n"), "a\n  x\nb");
  EXPECT_EQ(R("{{ 'x' }}  \n {{- 'y' -}}  \n z"), "xyz");
  EXPECT_EQ(R("{# c #}\n{#- d -#}  k"), "k");
}

TEST(ChatTemplateTest, LiteralsAndArithmeticPrintAsHf) {
  EXPECT_EQ(R("{{ [1, 2.5, 'a', none, true] }}|{{ {'a': 1} }}|{{ 1.0 }}|{{ 7 / 2 }}|{{ 7 // 2 }}|"
              "{{ 2 ** 10 }}|{{ -3 }}"),
            "[1, 2.5, \"a\", null, true]|{\"a\": 1}|1.0|3.5|3|1024|-3");
  EXPECT_EQ(R("{{ 'a' ~ 1 ~ 1.0 ~ true }}{{ 'a' + 'b' }}{{ 1 if false }}{{ 'y' if true else 'n' }}"),
            "a11trueaby");
  EXPECT_EQ(R("{{ 5 % 3 }}{{ 1.5 + 1 }}{{ 0.1 + 0.2 }}"), "22.50.30000000000000004");
  EXPECT_EQ(R("{{ 1 == 1.0 }}{{ '1' == 1 }}{{ none == x }}{{ 'a' in ['a'] }}{{ 'b' not in 'abc' }}"
              "{{ 'k' in {'k':1} }}"),
            "truetruetruetruefalsetrue");
}

TEST(ChatTemplateTest, Filters) {
  EXPECT_EQ(R("{{ [3,1,2]|sort|join(',') }}|{{ 'abc'[::-1] }}|{{ [1,2,3][1:] }}|{{ 'Hello'|upper }}|"
              "{{ ' x '|trim }}|{{ 'a b'|capitalize }}|{{ 'hi'|length }}"),
            "1,2,3|cba|[2, 3]|HELLO|x|A b|2");
  EXPECT_EQ(R("{{ {'a': 'é', 'b': [1, \"q\\\"\"]}|tojson }}|{{ {'a': 1, 'b': [1,2]}|tojson(indent=2) }}|"
              "{{ 'é'|tojson(ensure_ascii=true) }}"),
            "{\"a\": \"é\", \"b\": [1, \"q\\\"\"]}|{\n  \"a\": 1,\n  \"b\": [\n    1,\n    2\n  ]\n}|"
            "\"\\u00e9\"");
  EXPECT_EQ(R("{{ messages|selectattr('role', 'equalto', 'user')|list|length }}"
              "{{ messages|map(attribute='role')|join('+') }}",
              R"([{"role":"user"},{"role":"b"},{"role":"user"}])"),
            "2user+b+user");
  EXPECT_EQ(R("{{ 'abc'|title }}{{ 'hello world'|title }}{{ 'x\\ny'|indent(2) }}{{ '%s'|default('q') }}"
              "{{ u|default('q') }}"),
            "AbcHello Worldx\n  y%sq");
  EXPECT_EQ(R("{{ messages[0].content|first }}{{ [1,2]|last }}{{ ['a','b']|reverse|join }}",
              R"([{"content":["z"]}])"),
            "z2ba");
}

TEST(ChatTemplateTest, TestsAndStringMethods) {
  EXPECT_EQ(R("{{ x is defined }}{{ messages[0].y is none }}{{ 'a' is string }}{{ {} is mapping }}"
              "{{ 3 is number }}{{ [] is iterable }}{{ x is not defined }}",
              R"([{"y":null}])"),
            "falsetruetruetruetruetruetrue");
  // HF's .strip()/.lstrip()/.rstrip() ignore their argument: all white space goes.
  EXPECT_EQ(R("{{ 'a,b,c'.split(',') }}{{ ' a  b '.split() }}{{ 'xx'.startswith('x') }}"
              "{{ 'abc'.replace('b', 'B') }}{{ '\\n a \\n'.strip('\\n') }}"),
            "[\"a\", \"b\", \"c\"][\"a\", \"b\"]trueaBca");
}

TEST(ChatTemplateTest, SetNamespaceMacroAndDicts) {
  EXPECT_EQ(R("{% set ns = namespace(found=false) %}{% for x in [1,2,3] %}{% if x == 2 %}"
              "{% set ns.found = true %}{% endif %}{% endfor %}{{ ns.found }}"),
            "true");
  EXPECT_EQ(R("{% set x %}a{{ 1 }}b{% endset %}{{ x }}{% set a, b = [1, 2] %}{{ a + b }}"), "a1b3");
  EXPECT_EQ(R("{% macro f(a, b='d') %}[{{ a }}{{ b }}]{% endmacro %}{{ f(1) }}{{ f(1, b=2) }}"),
            "[1d][12]");
  // Dict keys keep the order they have in `messages` (nlohmann::json sorts them by name).
  EXPECT_EQ(R("{% set d = messages[0] %}{{ d.items() }}{% for k, v in d.items() %}{{ k }}={{ v }};"
              "{% endfor %}{{ d.get('z', 5) }}{{ d|length }}{% for k in d %}{{k}}{% endfor %}",
              R"([{"a": 2, "b": 1}])"),
            "[[\"a\", 2], [\"b\", 1]]a=2;b=1;52ab");
}

TEST(ChatTemplateTest, RaiseExceptionIsOneLineWithTheTemplateLine) {
  EXPECT_EQ(R("x\n{% if messages|length == 0 %}\n{{ raise_exception('bad role') }}\n{% endif %}"),
            "ERR chat template line 3: raise_exception: bad role");
}

TEST(ChatTemplateTest, UnsupportedConstructsNameThemselvesAndTheirLine) {
  EXPECT_EQ(R("a\nb\n{% include 'x' %}"), "ERR chat template line 3: unsupported statement 'include'");
  EXPECT_EQ(R("{{ messages|frobnicate }}"), "ERR chat template line 1: unsupported filter 'frobnicate' on a ArrayValue");
  EXPECT_EQ(R("\n{{ 1 is prime }}"), "ERR chat template line 2: unsupported test 'prime'");
  EXPECT_EQ(R("{% for x in y %}"), "ERR chat template line 1: 'for' is never closed (no {% endfor %})");
  EXPECT_EQ(R("{% if x %}\n{% endfor %}"), "ERR chat template line 2: unexpected {% endfor %}");
  EXPECT_EQ(R("{{ 'abc }}"), "ERR chat template line 1: unterminated string literal");
  EXPECT_EQ(R("\n\n{{ a $ b }}"), "ERR chat template line 3: unexpected character '$'");
  EXPECT_EQ(R("{{ messages.content|trim }}"),
            "ERR chat template line 1: unsupported filter 'trim' on a UndefinedValue");
}

TEST(ChatTemplateTest, FromTokenizerConfigFileReadsStringAndListForms) {
  const std::string dir = ::testing::TempDir();
  const std::string a = dir + "/tc_string.json", b = dir + "/tc_list.json", c = dir + "/tc_none.json";
  std::ofstream(a) << R"({"chat_template": "{{ bos_token }}{{ messages[0].content }}{{ eos_token }}",
                         "bos_token": {"content": "<B>"}, "eos_token": "<E>"})";
  std::ofstream(b) << R"({"chat_template": [{"name": "tool_use", "template": "T"},
                                            {"name": "default", "template": "D{{ eos_token }}"}],
                         "eos_token": "<E>"})";
  std::ofstream(c) << R"({"eos_token": "<E>"})";
  auto ta = ChatTemplate::FromTokenizerConfigFile(a);
  ASSERT_TRUE(ta.ok()) << ta.status();
  EXPECT_EQ(*ta->Render(json::parse(R"([{"role":"user","content":"hi"}])"), false), "<B>hi<E>");
  auto tb = ChatTemplate::FromTokenizerConfigFile(b);
  ASSERT_TRUE(tb.ok()) << tb.status();
  const ChatTemplate copy = *tb;  // copies share the parsed template
  tb = absl::InvalidArgumentError("gone");
  EXPECT_EQ(*copy.Render(json::array(), false), "D<E>");
  auto tc = ChatTemplate::FromTokenizerConfigFile(c);
  EXPECT_TRUE(absl::StrContains(tc.status().message(), "chat_template: absent")) << tc.status();
  EXPECT_EQ(ChatTemplate::FromTokenizerConfigFile(dir + "/nope.json").status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace accel::text
