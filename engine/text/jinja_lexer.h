// The tokenizer of the Jinja subset chat templates use, as Hugging Face's own renderer
// (@huggingface/jinja 0.5.x, src/lexer.ts) reads a template: first its preprocessing with
// transformers' settings trim_blocks=True and lstrip_blocks=True (one trailing newline of the
// template dropped; blanks before a "{%"/"{#" line start dropped; the newline after "%}"/"#}"
// dropped; "{% generation %}" markers removed), then tokens with the whitespace control of
// "{%-", "-%}", "{{-", "-}}", "{#-", "-#}" applied. Every token carries the line of the ORIGINAL
// template it starts on, so errors can name it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace accel::text::jinja {

enum class Tok {
  kText, kNumber, kString, kIdent, kEquals, kLParen, kRParen, kOpenStmt, kCloseStmt,
  kOpenExpr, kCloseExpr, kLBracket, kRBracket, kLBrace, kRBrace, kComma, kDot, kColon, kPipe,
  kAdd,      // + - ~
  kMul,      // * / // %
  kPow,      // **
  kCompare,  // < > <= >= == !=
  kUnary,    // a lone + or - before an operand
  kComment,
};

struct Token {
  Tok type;
  std::string value;
  int line;  // 1-based, in the template as written
};

// InvalidArgument "chat template line N: ..." on text the lexer cannot read (an unterminated
// string or comment, an unknown character, a bad escape).
[[nodiscard]] absl::StatusOr<std::vector<Token>> Tokenize(std::string_view source);

// JavaScript's notion of white space (String.prototype.trim, /\s/): ASCII blanks plus the
// Unicode space separators, U+2028/2029 and U+FEFF. Returns the byte length of the white-space
// character at `pos` of UTF-8 `s`, or 0.
size_t JsSpaceAt(std::string_view s, size_t pos);
// Removes JS white space at the end (TrimEnd) or the start (TrimStart) of `s`.
std::string_view TrimEnd(std::string_view s);
std::string_view TrimStart(std::string_view s);

}  // namespace accel::text::jinja
