// Evaluates a parsed chat template (jinja_parser.h) against variables, with the semantics of
// @huggingface/jinja's Interpreter: output of {{ }} as HF prints values, HF's scoping, loop.*
// (index, index0, revindex, revindex0, first, last, length, previtem, nextitem), break and
// continue (an iteration left by either contributes no output, as in HF), macros and call
// blocks. Errors are InvalidArgument "chat template line N: ..." with the line of the construct.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/text/jinja_ast.h"
#include "engine/text/jinja_builtins.h"

namespace accel::text::jinja {

// Renders `program` with the variables of `env` (which InstallGlobals has filled).
[[nodiscard]] absl::StatusOr<std::string> Render(const std::vector<NodePtr>& program, Env& env);

}  // namespace accel::text::jinja
