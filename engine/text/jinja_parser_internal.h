// The expression half of the chat-template parser (jinja_parser.cc has the statements): a
// cursor over the tokens with the first error kept, and recursive descent over @huggingface/
// jinja's expression grammar. Internal to engine/text.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/text/jinja_ast.h"
#include "engine/text/jinja_lexer.h"

namespace accel::text::jinja {

// A function that fails records the first error and returns null; callers pass null up.
#define ACCEL_JINJA_REQUIRE(expr) \
  if (!(expr)) return nullptr

class ExpressionParser {
 public:
  explicit ExpressionParser(const std::vector<Token>& t) : t_(t) {}

 protected:
  int Line() const { return t_.empty() ? 1 : t_[pos_ < t_.size() ? pos_ : t_.size() - 1].line; }
  NodePtr Fail(std::string what) {
    if (error_.ok()) {
      error_ = absl::InvalidArgumentError(absl::StrCat("chat template line ", Line(), ": ", what));
    }
    return nullptr;
  }
  NodePtr Make(Kind kind, int line) {
    auto n = std::make_unique<Node>();
    n->kind = kind;
    n->line = line;
    return n;
  }
  bool Is(Tok type, size_t ahead = 0) const {
    return pos_ + ahead < t_.size() && t_[pos_ + ahead].type == type;
  }
  bool IsIdent(std::string_view name, size_t ahead = 0) const {
    return Is(Tok::kIdent, ahead) && t_[pos_ + ahead].value == name;
  }
  bool IsStatement(std::initializer_list<std::string_view> names) const {
    if (!Is(Tok::kOpenStmt) || !Is(Tok::kIdent, 1)) return false;
    for (std::string_view n : names) if (t_[pos_ + 1].value == n) return true;
    return false;
  }
  bool Expect(Tok type, std::string_view what) {
    if (Is(type)) { ++pos_; return true; }
    Fail(absl::StrCat("expected ", std::string(what), pos_ < t_.size() ? absl::StrCat(", got '", t_[pos_].value, "'")
                                                          : std::string(" at the end of the template")));
    return false;
  }

  NodePtr Sequence(bool primary);
  NodePtr Expression();
  NodePtr Binary(std::string op, NodePtr l, NodePtr r, int line);
  NodePtr Or();
  NodePtr And();
  NodePtr Not();
  NodePtr Comparison();
  NodePtr Additive();
  NodePtr Multiplicative();
  NodePtr Power();
  NodePtr TestExpr();
  NodePtr FilterExpr();
  NodePtr UnarySign();
  NodePtr CallOn(NodePtr callee);
  bool Args(std::vector<NodePtr>& args, bool parameters);
  NodePtr Member(NodePtr object);
  NodePtr Subscript();
  NodePtr Primary();

  const std::vector<Token>& t_;
  size_t pos_ = 0;
  absl::Status error_;
};

}  // namespace accel::text::jinja
