// Parses the tokens of a chat template into a tree with the grammar of @huggingface/jinja's
// src/parser.ts (its operator precedence included: filters bind tighter than "is" tests, which
// bind tighter than "*"/"/"; "a if b" without else yields undefined when b is false).
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "engine/text/jinja_ast.h"
#include "engine/text/jinja_lexer.h"

namespace accel::text::jinja {

// The statements of the whole template, in order. InvalidArgument "chat template line N: ..."
// on a syntax error or an unsupported statement ("unsupported statement 'include'").
[[nodiscard]] absl::StatusOr<std::vector<NodePtr>> Parse(const std::vector<Token>& tokens);

}  // namespace accel::text::jinja
