// The expressions of a chat template (see jinja_parser_internal.h).
#include <cstdlib>
#include <utility>

#include "engine/text/jinja_parser_internal.h"

namespace accel::text::jinja {

// "a, b, c" (a tuple) or one expression.
NodePtr ExpressionParser::Sequence(bool primary) {
  const int line = Line();
  NodePtr first = primary ? Primary() : Expression();
  ACCEL_JINJA_REQUIRE(first);
  if (!Is(Tok::kComma)) return first;
  auto tuple = Make(Kind::kTuple, line);
  tuple->a.push_back(std::move(first));
  while (Is(Tok::kComma)) {
    ++pos_;
    NodePtr e = primary ? Primary() : Expression();
    ACCEL_JINJA_REQUIRE(e);
    tuple->a.push_back(std::move(e));
  }
  return tuple;
}

NodePtr ExpressionParser::Expression() {
  const int line = Line();
  NodePtr a = Or();
  ACCEL_JINJA_REQUIRE(a);
  if (!IsIdent("if")) return a;
  ++pos_;
  NodePtr test = Or();
  ACCEL_JINJA_REQUIRE(test);
  if (IsIdent("else")) {
    ++pos_;
    auto n = Make(Kind::kTernary, line);
    n->x = std::move(test);
    n->y = std::move(a);
    ACCEL_JINJA_REQUIRE(n->z = Expression());
    return n;
  }
  auto n = Make(Kind::kSelect, line);
  n->x = std::move(a);
  n->y = std::move(test);
  return n;
}
NodePtr ExpressionParser::Binary(std::string op, NodePtr l, NodePtr r, int line) {
  auto n = Make(Kind::kBinary, line);
  n->str = std::move(op);
  n->x = std::move(l);
  n->y = std::move(r);
  return n;
}
NodePtr ExpressionParser::Or() {
  NodePtr l = And();
  while (l && IsIdent("or")) { const int ln = Line(); ++pos_; NodePtr r = And(); ACCEL_JINJA_REQUIRE(r); l = Binary("or", std::move(l), std::move(r), ln); }
  return l;
}
NodePtr ExpressionParser::And() {
  NodePtr l = Not();
  while (l && IsIdent("and")) { const int ln = Line(); ++pos_; NodePtr r = Not(); ACCEL_JINJA_REQUIRE(r); l = Binary("and", std::move(l), std::move(r), ln); }
  return l;
}
NodePtr ExpressionParser::Not() {
  if (!IsIdent("not")) return Comparison();
  auto n = Make(Kind::kUnary, Line());
  ++pos_;
  n->str = "not";
  ACCEL_JINJA_REQUIRE(n->x = Not());
  return n;
}
NodePtr ExpressionParser::Comparison() {
  NodePtr l = Additive();
  while (l) {
    const int ln = Line();
    std::string op;
    if (IsIdent("not") && IsIdent("in", 1)) { op = "not in"; pos_ += 2; }
    else if (IsIdent("in") || Is(Tok::kCompare)) { op = t_[pos_++].value; }
    else break;
    NodePtr r = Additive();
    ACCEL_JINJA_REQUIRE(r);
    l = Binary(op, std::move(l), std::move(r), ln);
  }
  return l;
}
NodePtr ExpressionParser::Additive() {
  NodePtr l = Multiplicative();
  while (l && Is(Tok::kAdd)) { const int ln = Line(); std::string op = t_[pos_++].value; NodePtr r = Multiplicative(); ACCEL_JINJA_REQUIRE(r); l = Binary(op, std::move(l), std::move(r), ln); }
  return l;
}
NodePtr ExpressionParser::Multiplicative() {
  NodePtr l = Power();
  while (l && Is(Tok::kMul)) { const int ln = Line(); std::string op = t_[pos_++].value; NodePtr r = Power(); ACCEL_JINJA_REQUIRE(r); l = Binary(op, std::move(l), std::move(r), ln); }
  return l;
}
NodePtr ExpressionParser::Power() {
  NodePtr l = TestExpr();
  while (l && Is(Tok::kPow)) { const int ln = Line(); ++pos_; NodePtr r = TestExpr(); ACCEL_JINJA_REQUIRE(r); l = Binary("**", std::move(l), std::move(r), ln); }
  return l;
}
NodePtr ExpressionParser::TestExpr() {
  NodePtr operand = FilterExpr();
  while (operand && IsIdent("is")) {
    auto n = Make(Kind::kTest, Line());
    ++pos_;
    if (IsIdent("not")) { n->flag = true; ++pos_; }
    if (!Is(Tok::kIdent)) return Fail("expected a test name after 'is'");
    n->str = t_[pos_++].value;
    n->x = std::move(operand);
    operand = std::move(n);
  }
  return operand;
}
NodePtr ExpressionParser::FilterExpr() {
  NodePtr operand = UnarySign();
  while (operand && Is(Tok::kPipe)) {
    auto n = Make(Kind::kFilter, Line());
    ++pos_;
    if (!Is(Tok::kIdent)) return Fail("expected a filter name after '|'");
    ACCEL_JINJA_REQUIRE(n->y = Primary());
    if (Is(Tok::kLParen)) ACCEL_JINJA_REQUIRE(n->y = CallOn(std::move(n->y)));
    n->x = std::move(operand);
    operand = std::move(n);
  }
  return operand;
}
NodePtr ExpressionParser::UnarySign() {
  if ((Is(Tok::kUnary) || Is(Tok::kAdd)) && (t_[pos_].value == "-" || t_[pos_].value == "+")) {
    auto n = Make(Kind::kUnary, Line());
    n->str = t_[pos_++].value;
    ACCEL_JINJA_REQUIRE(n->x = UnarySign());
    return n;
  }
  NodePtr m = Member(Primary());
  ACCEL_JINJA_REQUIRE(m);
  if (Is(Tok::kLParen)) return CallOn(std::move(m));
  return m;
}
NodePtr ExpressionParser::CallOn(NodePtr callee) {
  ACCEL_JINJA_REQUIRE(callee);
  auto n = Make(Kind::kCall, callee->line);
  n->x = std::move(callee);
  ACCEL_JINJA_REQUIRE(Args(n->a, false));
  NodePtr m = Member(std::move(n));
  ACCEL_JINJA_REQUIRE(m);
  if (Is(Tok::kLParen)) return CallOn(std::move(m));
  return m;
}
bool ExpressionParser::Args(std::vector<NodePtr>& args, bool parameters) {
  if (!Expect(Tok::kLParen, "'('")) return false;
  while (!Is(Tok::kRParen)) {
    if (pos_ >= t_.size()) { Fail("expected ')'"); return false; }
    const int line = Line();
    NodePtr arg;
    if (Is(Tok::kPow) || (Is(Tok::kMul) && t_[pos_].value == "*")) {
      if (parameters) { Fail("argument unpacking in a parameter list"); return false; }
      arg = Make(Is(Tok::kPow) ? Kind::kKwSpread : Kind::kSpread, line);
      ++pos_;
      if (!(arg->x = Expression())) return false;
    } else {
      if (!(arg = Expression())) return false;
      if (Is(Tok::kEquals)) {
        ++pos_;
        if (arg->kind != Kind::kIdent) { Fail("expected a name before '=' in an argument list"); return false; }
        auto kw = Make(Kind::kKwarg, line);
        kw->str = arg->str;
        if (!(kw->x = Expression())) return false;
        arg = std::move(kw);
      } else if (parameters && arg->kind != Kind::kIdent) {
        Fail("expected a parameter name");
        return false;
      }
    }
    args.push_back(std::move(arg));
    if (Is(Tok::kComma)) ++pos_;
  }
  ++pos_;
  return true;
}
NodePtr ExpressionParser::Member(NodePtr object) {
  while (object && (Is(Tok::kDot) || Is(Tok::kLBracket))) {
    auto n = Make(Kind::kMember, Line());
    n->flag = Is(Tok::kLBracket);
    ++pos_;
    if (n->flag) {
      ACCEL_JINJA_REQUIRE(n->y = Subscript());
      ACCEL_JINJA_REQUIRE(Expect(Tok::kRBracket, "']'"));
    } else {
      ACCEL_JINJA_REQUIRE(n->y = Primary());
      if (n->y->kind != Kind::kIdent && n->y->kind != Kind::kInt) {
        return Fail("expected a name or an integer after '.'");
      }
    }
    n->x = std::move(object);
    object = std::move(n);
  }
  return object;
}
// Inside [...]: one expression, or a slice start:stop:step with parts left out.
NodePtr ExpressionParser::Subscript() {
  const int line = Line();
  std::vector<NodePtr> parts;
  bool slice = false;
  while (!Is(Tok::kRBracket)) {
    if (pos_ >= t_.size()) return Fail("expected ']'");
    if (Is(Tok::kColon)) { parts.push_back(nullptr); ++pos_; slice = true; continue; }
    NodePtr e = Expression();
    ACCEL_JINJA_REQUIRE(e);
    parts.push_back(std::move(e));
    if (Is(Tok::kColon)) { ++pos_; slice = true; }
  }
  if (parts.empty()) return Fail("expected an index or a slice inside '[]'");
  if (!slice) return std::move(parts[0]);
  if (parts.size() > 3) return Fail("a slice takes at most 3 parts");
  auto n = Make(Kind::kSlice, line);
  parts.resize(3);
  n->x = std::move(parts[0]);
  n->y = std::move(parts[1]);
  n->z = std::move(parts[2]);
  return n;
}
NodePtr ExpressionParser::Primary() {
  if (pos_ >= t_.size()) return Fail("unexpected end of the template inside an expression");
  const Token& tok = t_[pos_++];
  switch (tok.type) {
    case Tok::kNumber: {
      auto n = Make(tok.value.find('.') != std::string::npos ? Kind::kFloat : Kind::kInt, tok.line);
      n->num = std::strtod(tok.value.c_str(), nullptr);
      return n;
    }
    case Tok::kString: {
      auto n = Make(Kind::kString, tok.line);
      n->str = tok.value;
      while (Is(Tok::kString)) n->str += t_[pos_++].value;
      return n;
    }
    case Tok::kIdent: { auto n = Make(Kind::kIdent, tok.line); n->str = tok.value; return n; }
    case Tok::kLParen: {
      NodePtr e = Sequence(false);
      ACCEL_JINJA_REQUIRE(e);
      ACCEL_JINJA_REQUIRE(Expect(Tok::kRParen, "')'"));
      return e;
    }
    case Tok::kLBracket: {
      auto n = Make(Kind::kArray, tok.line);
      while (!Is(Tok::kRBracket)) {
        if (pos_ >= t_.size()) return Fail("expected ']'");
        NodePtr e = Expression();
        ACCEL_JINJA_REQUIRE(e);
        n->a.push_back(std::move(e));
        if (Is(Tok::kComma)) ++pos_;
      }
      ++pos_;
      return n;
    }
    case Tok::kLBrace: {
      auto n = Make(Kind::kObject, tok.line);
      while (!Is(Tok::kRBrace)) {
        if (pos_ >= t_.size()) return Fail("expected '}'");
        NodePtr k = Expression();
        ACCEL_JINJA_REQUIRE(k);
        ACCEL_JINJA_REQUIRE(Expect(Tok::kColon, "':' in a dict literal"));
        NodePtr v = Expression();
        ACCEL_JINJA_REQUIRE(v);
        n->a.push_back(std::move(k));
        n->b.push_back(std::move(v));
        if (Is(Tok::kComma)) ++pos_;
      }
      ++pos_;
      return n;
    }
    default:
      --pos_;
      return Fail(absl::StrCat("unexpected '", tok.value, "'"));
  }
}

}  // namespace accel::text::jinja
