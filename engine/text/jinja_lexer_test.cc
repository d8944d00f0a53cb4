// The lexer alone: HF's preprocessing (trim_blocks, lstrip_blocks, generation markers), the
// whitespace control, JS white space, and lines of the template as written on every token.
#include "engine/text/jinja_lexer.h"

#include <gtest/gtest.h>

namespace accel::text::jinja {
namespace {

std::string Kinds(const std::vector<Token>& tokens) {
  std::string out;
  for (const Token& t : tokens) {
    out += t.type == Tok::kText ? "T(" + t.value + ")" : t.value;
    out += " ";
  }
  return out;
}

TEST(JinjaLexerTest, WhitespaceControlStripsTheNeighbouringText) {
  auto t = Tokenize("a  {{- x -}}  b");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(Kinds(*t), "T(a) {{ x }} T(b) ");
}

TEST(JinjaLexerTest, LinesAreThoseOfTheTemplateAsWritten) {
  // trim_blocks removes the newline after "%}", which must not shift the lines reported.
  auto t = Tokenize("{% if a %}\n{% if b %}\n  {{ c }}");
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_GE(t->size(), 10u);
  EXPECT_EQ(t->front().line, 1);
  EXPECT_EQ((*t)[6].value, "b");
  EXPECT_EQ((*t)[6].line, 2);
  EXPECT_EQ(t->back().value, "}}");
  EXPECT_EQ(t->back().line, 3);
}

TEST(JinjaLexerTest, GenerationMarkersAreRemoved) {
  auto t = Tokenize("a {% generation %} b {%- endgeneration %} c");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(Kinds(*t), "T(a  b c) ");  // as @huggingface/jinja: "a  b c"
}

TEST(JinjaLexerTest, StringEscapesAndUnicodeWhiteSpace) {
  auto t = Tokenize("x\xE3\x80\x80\xC2\xA0{{- '\\u00e9\\x41\\n' }}");
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->size(), 4u);
  EXPECT_EQ((*t)[0].value, "x");  // U+3000 and U+00A0 are JS white space
  EXPECT_EQ((*t)[2].value, "\xC3\xA9" "A\n");
  EXPECT_EQ(TrimEnd("a \xE2\x80\xA8"), "a");
  EXPECT_EQ(TrimStart("\xEF\xBB\xBF b"), "b");
}

TEST(JinjaLexerTest, ErrorsNameTheLine) {
  EXPECT_EQ(Tokenize("a\n{# open").status().message(),
            "chat template line 2: missing end of comment tag \"#}\"");
  EXPECT_EQ(Tokenize("{{ 'a\\q' }}").status().message(),
            "chat template line 1: unexpected escaped character 'q'");
}

}  // namespace
}  // namespace accel::text::jinja
