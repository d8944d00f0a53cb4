// The syntax tree of a chat template: one Node type whose kind says which fields it uses (the
// node kinds of @huggingface/jinja's src/ast.ts). Built by jinja_parser.h, walked by
// jinja_interpreter.h; every node keeps the template line it starts on, for errors.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace accel::text::jinja {

enum class Kind {
  // Statements.                 fields used
  kText,       // str: the literal text
  kIf,         // x: test, a: body, b: else / elif branch
  kFor,        // x: loop variable (identifier or tuple), y: iterable (maybe kSelect), a: body, b: else
  kSet,        // x: target (identifier, tuple, member), y: value or null, a: block body when y null
  kMacro,      // str: name, a: parameters (identifiers / keyword arguments), b: body
  kCallBlock,  // x: the call (kCall), a: caller parameters, b: body
  kFilterBlock,// x: filter (identifier or kCall), a: body
  kBreak, kContinue, kComment,
  // Expressions.
  kInt, kFloat,  // num
  kString,       // str
  kIdent,        // str
  kArray, kTuple,// a: items
  kObject,       // a: keys, b: values
  kMember,       // x: object, y: property (expression or kSlice), flag: computed ([...])
  kCall,         // x: callee, a: arguments (expressions, kKwarg, kSpread, kKwSpread)
  kUnary,        // str: "not" "-" "+", x
  kBinary,       // str: operator ("and", "in", "not in", "~", "==", ...), x, y
  kFilter,       // x: operand, y: filter (kIdent or kCall)
  kTest,         // x: operand, str: test name, flag: negated
  kSelect,       // x: value, y: condition ("a if b" without else)
  kTernary,      // x: condition, y: if true, z: if false
  kSlice,        // x, y, z: start, stop, step (each may be null)
  kKwarg,        // str: name, x: value
  kSpread,       // x (*args)
  kKwSpread,     // x (**kwargs)
};

struct Node;
using NodePtr = std::unique_ptr<Node>;

struct Node {
  Kind kind;
  int line = 0;
  std::string str;
  double num = 0;
  bool flag = false;
  NodePtr x, y, z;
  std::vector<NodePtr> a, b;
};

}  // namespace accel::text::jinja
