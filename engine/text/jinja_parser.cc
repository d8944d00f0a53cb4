// The statements of a chat template; the expressions are jinja_expression_parser.cc's.
#include "engine/text/jinja_parser.h"

#include <initializer_list>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/text/jinja_parser_internal.h"

namespace accel::text::jinja {
namespace {

// Recursive descent over the token list. A function that fails records the first error and
// returns null; callers pass null up (ACCEL_JINJA_REQUIRE), so the whole parse stops there.
class Parser : public ExpressionParser {
 public:
  using ExpressionParser::ExpressionParser;

  absl::StatusOr<std::vector<NodePtr>> Program() {
    std::vector<NodePtr> body;
    while (pos_ < t_.size()) {
      NodePtr n = Any();
      if (n == nullptr) return error_;
      body.push_back(std::move(n));
    }
    return body;
  }

 private:
  bool ExpectEnd(std::string_view name) {
    if (!Expect(Tok::kOpenStmt, absl::StrCat("{% ", std::string(name), " %}"))) return false;
    if (!IsIdent(name)) { Fail(absl::StrCat("expected '", std::string(name), "'")); return false; }
    ++pos_;
    return Expect(Tok::kCloseStmt, "'%}'");
  }
  // Statements up to one of `ends` (not consumed); an end of the template before it is an error.
  bool Block(std::vector<NodePtr>& into, std::initializer_list<std::string_view> ends,
             std::string_view opener, int opener_line) {
    while (!IsStatement(ends)) {
      if (pos_ >= t_.size()) {
        error_ = absl::InvalidArgumentError(absl::StrCat(
            "chat template line ", opener_line, ": '", std::string(opener),
            "' is never closed (no {% end", std::string(opener), " %})"));
        return false;
      }
      NodePtr n = Any();
      if (n == nullptr) return false;
      into.push_back(std::move(n));
    }
    return true;
  }

  NodePtr Any() {
    const Token& tok = t_[pos_];
    switch (tok.type) {
      case Tok::kComment: { auto n = Make(Kind::kComment, tok.line); ++pos_; return n; }
      case Tok::kText: { auto n = Make(Kind::kText, tok.line); n->str = tok.value; ++pos_; return n; }
      case Tok::kOpenStmt: return Statement();
      case Tok::kOpenExpr: {
        ++pos_;
        NodePtr e = Expression();
        ACCEL_JINJA_REQUIRE(e);
        ACCEL_JINJA_REQUIRE(Expect(Tok::kCloseExpr, "'}}'"));
        return e;
      }
      default: return Fail(absl::StrCat("unexpected '", tok.value, "'"));
    }
  }

  NodePtr Statement() {
    ++pos_;  // {%
    if (!Is(Tok::kIdent)) return Fail("expected a statement name after '{%'");
    const std::string name = t_[pos_].value;
    const int line = t_[pos_].line;
    ++pos_;
    if (name == "set") return SetStatement(line);
    if (name == "if") {
      NodePtr n = IfStatement(line);
      ACCEL_JINJA_REQUIRE(n);
      ACCEL_JINJA_REQUIRE(ExpectEnd("endif"));
      return n;
    }
    if (name == "for") return ForStatement(line);
    if (name == "macro") {
      auto n = Make(Kind::kMacro, line);
      if (!Is(Tok::kIdent)) return Fail("expected a name after 'macro'");
      n->str = t_[pos_++].value;
      ACCEL_JINJA_REQUIRE(Args(n->a, /*parameters=*/true));
      ACCEL_JINJA_REQUIRE(Expect(Tok::kCloseStmt, "'%}'"));
      ACCEL_JINJA_REQUIRE(Block(n->b, {"endmacro"}, "macro", line));
      ACCEL_JINJA_REQUIRE(ExpectEnd("endmacro"));
      return n;
    }
    if (name == "call") {
      auto n = Make(Kind::kCallBlock, line);
      if (Is(Tok::kLParen)) ACCEL_JINJA_REQUIRE(Args(n->a, /*parameters=*/true));
      if (!Is(Tok::kIdent)) return Fail("expected a macro name after 'call'");
      auto callee = Make(Kind::kIdent, line);
      callee->str = t_[pos_++].value;
      n->x = Make(Kind::kCall, line);
      n->x->x = std::move(callee);
      ACCEL_JINJA_REQUIRE(Args(n->x->a, /*parameters=*/false));
      ACCEL_JINJA_REQUIRE(Expect(Tok::kCloseStmt, "'%}'"));
      ACCEL_JINJA_REQUIRE(Block(n->b, {"endcall"}, "call", line));
      ACCEL_JINJA_REQUIRE(ExpectEnd("endcall"));
      return n;
    }
    if (name == "filter") {
      auto n = Make(Kind::kFilterBlock, line);
      ACCEL_JINJA_REQUIRE(n->x = Primary());
      if (n->x->kind == Kind::kIdent && Is(Tok::kLParen)) ACCEL_JINJA_REQUIRE(n->x = CallOn(std::move(n->x)));
      ACCEL_JINJA_REQUIRE(Expect(Tok::kCloseStmt, "'%}'"));
      ACCEL_JINJA_REQUIRE(Block(n->a, {"endfilter"}, "filter", line));
      ACCEL_JINJA_REQUIRE(ExpectEnd("endfilter"));
      return n;
    }
    if (name == "break" || name == "continue") {
      ACCEL_JINJA_REQUIRE(Expect(Tok::kCloseStmt, "'%}'"));
      return Make(name == "break" ? Kind::kBreak : Kind::kContinue, line);
    }
    --pos_;
    if (name.rfind("end", 0) == 0 || name == "elif" || name == "else") {
      return Fail(absl::StrCat("unexpected {% ", name, " %}"));
    }
    return Fail(absl::StrCat("unsupported statement '", name, "'"));
  }

  NodePtr SetStatement(int line) {
    auto n = Make(Kind::kSet, line);
    ACCEL_JINJA_REQUIRE(n->x = Sequence(false));
    if (Is(Tok::kEquals)) {
      ++pos_;
      ACCEL_JINJA_REQUIRE(n->y = Sequence(false));
    } else {
      ACCEL_JINJA_REQUIRE(Expect(Tok::kCloseStmt, "'=' or '%}'"));
      ACCEL_JINJA_REQUIRE(Block(n->a, {"endset"}, "set", line));
      ACCEL_JINJA_REQUIRE(Expect(Tok::kOpenStmt, "'{%'"));
      ++pos_;  // endset
    }
    ACCEL_JINJA_REQUIRE(Expect(Tok::kCloseStmt, "'%}'"));
    return n;
  }

  NodePtr IfStatement(int line) {
    auto n = Make(Kind::kIf, line);
    ACCEL_JINJA_REQUIRE(n->x = Expression());
    ACCEL_JINJA_REQUIRE(Expect(Tok::kCloseStmt, "'%}'"));
    ACCEL_JINJA_REQUIRE(Block(n->a, {"elif", "else", "endif"}, "if", line));
    if (IsStatement({"elif"})) {
      const int elif_line = t_[pos_ + 1].line;
      pos_ += 2;
      NodePtr e = IfStatement(elif_line);
      ACCEL_JINJA_REQUIRE(e);
      n->b.push_back(std::move(e));
    } else if (IsStatement({"else"})) {
      pos_ += 2;
      ACCEL_JINJA_REQUIRE(Expect(Tok::kCloseStmt, "'%}'"));
      ACCEL_JINJA_REQUIRE(Block(n->b, {"endif"}, "if", line));
    }
    return n;
  }

  NodePtr ForStatement(int line) {
    auto n = Make(Kind::kFor, line);
    ACCEL_JINJA_REQUIRE(n->x = Sequence(true));
    if (n->x->kind != Kind::kIdent && n->x->kind != Kind::kTuple) {
      return Fail("expected a name or a tuple of names for the loop variable");
    }
    if (!IsIdent("in")) return Fail("expected 'in' after the loop variable");
    ++pos_;
    ACCEL_JINJA_REQUIRE(n->y = Expression());
    ACCEL_JINJA_REQUIRE(Expect(Tok::kCloseStmt, "'%}'"));
    ACCEL_JINJA_REQUIRE(Block(n->a, {"endfor", "else"}, "for", line));
    if (IsStatement({"else"})) {
      pos_ += 2;
      ACCEL_JINJA_REQUIRE(Expect(Tok::kCloseStmt, "'%}'"));
      ACCEL_JINJA_REQUIRE(Block(n->b, {"endfor"}, "for", line));
    }
    ACCEL_JINJA_REQUIRE(ExpectEnd("endfor"));
    return n;
  }

};

}  // namespace

absl::StatusOr<std::vector<NodePtr>> Parse(const std::vector<Token>& tokens) {
  return Parser(tokens).Program();
}

}  // namespace accel::text::jinja
