// The operators of chat-template expressions, on values, as @huggingface/jinja applies them:
// indexing (x.attr, x[key], x[-1]), slicing (x[a:b:c] on lists and strings, by code point) and
// the binary operators other than the short-circuit "and" / "or" (the interpreter's). Errors
// are InvalidArgument without a line; the interpreter adds the line of the expression.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "engine/text/jinja_value.h"

namespace accel::text::jinja {

// object[property] / object.property: a dict's entry or else its builtin method, a list's or a
// string's element (negative counts from the end; out of range is undefined) or builtin.
[[nodiscard]] absl::StatusOr<Value> Index(const Value& object, const Value& property);
// object[start:stop:step]; each bound an integer or undefined (left out).
[[nodiscard]] absl::StatusOr<Value> SliceOf(const Value& object, const Value& start,
                                            const Value& stop, const Value& step);
// l op r for op in == != ~ + - * / // % ** < > <= >= in "not in".
[[nodiscard]] absl::StatusOr<Value> BinaryOp(const std::string& op, const Value& l,
                                             const Value& r);

}  // namespace accel::text::jinja
