#include "engine/text/jinja_parser.h"

#include <cstdlib>
#include <initializer_list>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace accel::text::jinja {
namespace {

// Recursive descent over the token list. A function that fails records the first error and
// returns null; callers pass null up (the REQUIRE macro), so the whole parse stops there.
class Parser {
 public:
  explicit Parser(const std::vector<Token>& t) : t_(t) {}

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
#define REQUIRE(expr) \
  if (!(expr)) return nullptr

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
        REQUIRE(e);
        REQUIRE(Expect(Tok::kCloseExpr, "'}}'"));
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
      REQUIRE(n);
      REQUIRE(ExpectEnd("endif"));
      return n;
    }
    if (name == "for") return ForStatement(line);
    if (name == "macro") {
      auto n = Make(Kind::kMacro, line);
      if (!Is(Tok::kIdent)) return Fail("expected a name after 'macro'");
      n->str = t_[pos_++].value;
      REQUIRE(Args(n->a, /*parameters=*/true));
      REQUIRE(Expect(Tok::kCloseStmt, "'%}'"));
      REQUIRE(Block(n->b, {"endmacro"}, "macro", line));
      REQUIRE(ExpectEnd("endmacro"));
      return n;
    }
    if (name == "call") {
      auto n = Make(Kind::kCallBlock, line);
      if (Is(Tok::kLParen)) REQUIRE(Args(n->a, /*parameters=*/true));
      if (!Is(Tok::kIdent)) return Fail("expected a macro name after 'call'");
      auto callee = Make(Kind::kIdent, line);
      callee->str = t_[pos_++].value;
      n->x = Make(Kind::kCall, line);
      n->x->x = std::move(callee);
      REQUIRE(Args(n->x->a, /*parameters=*/false));
      REQUIRE(Expect(Tok::kCloseStmt, "'%}'"));
      REQUIRE(Block(n->b, {"endcall"}, "call", line));
      REQUIRE(ExpectEnd("endcall"));
      return n;
    }
    if (name == "filter") {
      auto n = Make(Kind::kFilterBlock, line);
      REQUIRE(n->x = Primary());
      if (n->x->kind == Kind::kIdent && Is(Tok::kLParen)) REQUIRE(n->x = CallOn(std::move(n->x)));
      REQUIRE(Expect(Tok::kCloseStmt, "'%}'"));
      REQUIRE(Block(n->a, {"endfilter"}, "filter", line));
      REQUIRE(ExpectEnd("endfilter"));
      return n;
    }
    if (name == "break" || name == "continue") {
      REQUIRE(Expect(Tok::kCloseStmt, "'%}'"));
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
    REQUIRE(n->x = Sequence(false));
    if (Is(Tok::kEquals)) {
      ++pos_;
      REQUIRE(n->y = Sequence(false));
    } else {
      REQUIRE(Expect(Tok::kCloseStmt, "'=' or '%}'"));
      REQUIRE(Block(n->a, {"endset"}, "set", line));
      REQUIRE(Expect(Tok::kOpenStmt, "'{%'"));
      ++pos_;  // endset
    }
    REQUIRE(Expect(Tok::kCloseStmt, "'%}'"));
    return n;
  }

  NodePtr IfStatement(int line) {
    auto n = Make(Kind::kIf, line);
    REQUIRE(n->x = Expression());
    REQUIRE(Expect(Tok::kCloseStmt, "'%}'"));
    REQUIRE(Block(n->a, {"elif", "else", "endif"}, "if", line));
    if (IsStatement({"elif"})) {
      const int elif_line = t_[pos_ + 1].line;
      pos_ += 2;
      NodePtr e = IfStatement(elif_line);
      REQUIRE(e);
      n->b.push_back(std::move(e));
    } else if (IsStatement({"else"})) {
      pos_ += 2;
      REQUIRE(Expect(Tok::kCloseStmt, "'%}'"));
      REQUIRE(Block(n->b, {"endif"}, "if", line));
    }
    return n;
  }

  NodePtr ForStatement(int line) {
    auto n = Make(Kind::kFor, line);
    REQUIRE(n->x = Sequence(true));
    if (n->x->kind != Kind::kIdent && n->x->kind != Kind::kTuple) {
      return Fail("expected a name or a tuple of names for the loop variable");
    }
    if (!IsIdent("in")) return Fail("expected 'in' after the loop variable");
    ++pos_;
    REQUIRE(n->y = Expression());
    REQUIRE(Expect(Tok::kCloseStmt, "'%}'"));
    REQUIRE(Block(n->a, {"endfor", "else"}, "for", line));
    if (IsStatement({"else"})) {
      pos_ += 2;
      REQUIRE(Expect(Tok::kCloseStmt, "'%}'"));
      REQUIRE(Block(n->b, {"endfor"}, "for", line));
    }
    REQUIRE(ExpectEnd("endfor"));
    return n;
  }

  // "a, b, c" (a tuple) or one expression.
  NodePtr Sequence(bool primary) {
    const int line = Line();
    NodePtr first = primary ? Primary() : Expression();
    REQUIRE(first);
    if (!Is(Tok::kComma)) return first;
    auto tuple = Make(Kind::kTuple, line);
    tuple->a.push_back(std::move(first));
    while (Is(Tok::kComma)) {
      ++pos_;
      NodePtr e = primary ? Primary() : Expression();
      REQUIRE(e);
      tuple->a.push_back(std::move(e));
    }
    return tuple;
  }

  NodePtr Expression() {
    const int line = Line();
    NodePtr a = Or();
    REQUIRE(a);
    if (!IsIdent("if")) return a;
    ++pos_;
    NodePtr test = Or();
    REQUIRE(test);
    if (IsIdent("else")) {
      ++pos_;
      auto n = Make(Kind::kTernary, line);
      n->x = std::move(test);
      n->y = std::move(a);
      REQUIRE(n->z = Expression());
      return n;
    }
    auto n = Make(Kind::kSelect, line);
    n->x = std::move(a);
    n->y = std::move(test);
    return n;
  }
  NodePtr Binary(std::string op, NodePtr l, NodePtr r, int line) {
    auto n = Make(Kind::kBinary, line);
    n->str = std::move(op);
    n->x = std::move(l);
    n->y = std::move(r);
    return n;
  }
  NodePtr Or() {
    NodePtr l = And();
    while (l && IsIdent("or")) { const int ln = Line(); ++pos_; NodePtr r = And(); REQUIRE(r); l = Binary("or", std::move(l), std::move(r), ln); }
    return l;
  }
  NodePtr And() {
    NodePtr l = Not();
    while (l && IsIdent("and")) { const int ln = Line(); ++pos_; NodePtr r = Not(); REQUIRE(r); l = Binary("and", std::move(l), std::move(r), ln); }
    return l;
  }
  NodePtr Not() {
    if (!IsIdent("not")) return Comparison();
    auto n = Make(Kind::kUnary, Line());
    ++pos_;
    n->str = "not";
    REQUIRE(n->x = Not());
    return n;
  }
  NodePtr Comparison() {
    NodePtr l = Additive();
    while (l) {
      const int ln = Line();
      std::string op;
      if (IsIdent("not") && IsIdent("in", 1)) { op = "not in"; pos_ += 2; }
      else if (IsIdent("in") || Is(Tok::kCompare)) { op = t_[pos_++].value; }
      else break;
      NodePtr r = Additive();
      REQUIRE(r);
      l = Binary(op, std::move(l), std::move(r), ln);
    }
    return l;
  }
  NodePtr Additive() {
    NodePtr l = Multiplicative();
    while (l && Is(Tok::kAdd)) { const int ln = Line(); std::string op = t_[pos_++].value; NodePtr r = Multiplicative(); REQUIRE(r); l = Binary(op, std::move(l), std::move(r), ln); }
    return l;
  }
  NodePtr Multiplicative() {
    NodePtr l = Power();
    while (l && Is(Tok::kMul)) { const int ln = Line(); std::string op = t_[pos_++].value; NodePtr r = Power(); REQUIRE(r); l = Binary(op, std::move(l), std::move(r), ln); }
    return l;
  }
  NodePtr Power() {
    NodePtr l = TestExpr();
    while (l && Is(Tok::kPow)) { const int ln = Line(); ++pos_; NodePtr r = TestExpr(); REQUIRE(r); l = Binary("**", std::move(l), std::move(r), ln); }
    return l;
  }
  NodePtr TestExpr() {
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
  NodePtr FilterExpr() {
    NodePtr operand = UnarySign();
    while (operand && Is(Tok::kPipe)) {
      auto n = Make(Kind::kFilter, Line());
      ++pos_;
      if (!Is(Tok::kIdent)) return Fail("expected a filter name after '|'");
      REQUIRE(n->y = Primary());
      if (Is(Tok::kLParen)) REQUIRE(n->y = CallOn(std::move(n->y)));
      n->x = std::move(operand);
      operand = std::move(n);
    }
    return operand;
  }
  NodePtr UnarySign() {
    if ((Is(Tok::kUnary) || Is(Tok::kAdd)) && (t_[pos_].value == "-" || t_[pos_].value == "+")) {
      auto n = Make(Kind::kUnary, Line());
      n->str = t_[pos_++].value;
      REQUIRE(n->x = UnarySign());
      return n;
    }
    NodePtr m = Member(Primary());
    REQUIRE(m);
    if (Is(Tok::kLParen)) return CallOn(std::move(m));
    return m;
  }
  NodePtr CallOn(NodePtr callee) {
    REQUIRE(callee);
    auto n = Make(Kind::kCall, callee->line);
    n->x = std::move(callee);
    REQUIRE(Args(n->a, false));
    NodePtr m = Member(std::move(n));
    REQUIRE(m);
    if (Is(Tok::kLParen)) return CallOn(std::move(m));
    return m;
  }
  bool Args(std::vector<NodePtr>& args, bool parameters) {
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
  NodePtr Member(NodePtr object) {
    while (object && (Is(Tok::kDot) || Is(Tok::kLBracket))) {
      auto n = Make(Kind::kMember, Line());
      n->flag = Is(Tok::kLBracket);
      ++pos_;
      if (n->flag) {
        REQUIRE(n->y = Subscript());
        REQUIRE(Expect(Tok::kRBracket, "']'"));
      } else {
        REQUIRE(n->y = Primary());
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
  NodePtr Subscript() {
    const int line = Line();
    std::vector<NodePtr> parts;
    bool slice = false;
    while (!Is(Tok::kRBracket)) {
      if (pos_ >= t_.size()) return Fail("expected ']'");
      if (Is(Tok::kColon)) { parts.push_back(nullptr); ++pos_; slice = true; continue; }
      NodePtr e = Expression();
      REQUIRE(e);
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
  NodePtr Primary() {
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
        REQUIRE(e);
        REQUIRE(Expect(Tok::kRParen, "')'"));
        return e;
      }
      case Tok::kLBracket: {
        auto n = Make(Kind::kArray, tok.line);
        while (!Is(Tok::kRBracket)) {
          if (pos_ >= t_.size()) return Fail("expected ']'");
          NodePtr e = Expression();
          REQUIRE(e);
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
          REQUIRE(k);
          REQUIRE(Expect(Tok::kColon, "':' in a dict literal"));
          NodePtr v = Expression();
          REQUIRE(v);
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
#undef REQUIRE

  const std::vector<Token>& t_;
  size_t pos_ = 0;
  absl::Status error_;
};

}  // namespace

absl::StatusOr<std::vector<NodePtr>> Parse(const std::vector<Token>& tokens) {
  return Parser(tokens).Program();
}

}  // namespace accel::text::jinja
