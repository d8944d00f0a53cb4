// The operators of chat-template expressions on values (jinja_operators.h).
#include "engine/text/jinja_operators.h"

#include <algorithm>
#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/text/jinja_builtins.h"

namespace accel::text::jinja {
namespace {

absl::Status Error(std::string message) { return absl::InvalidArgumentError(std::move(message)); }

// JavaScript's toString of a value's payload (the "~" and string "+" operators).
std::string RawString(const Value& v) {
  if (v.is_number()) return NumberToString(v.num);
  if (v.is_array()) {
    std::string out;
    for (size_t i = 0; i < v.array->size(); ++i) out += i ? ",[object Object]" : "[object Object]";
    return out;
  }
  if (v.is_dict() || v.kind == Value::kNamespace) return "[object Map]";
  return ToString(v);
}

}  // namespace

absl::StatusOr<Value> Index(const Value& object, const Value& property) {
  if (object.is_dict() || object.kind == Value::kNamespace) {
    if (property.kind != Value::kString) {
      return Error(absl::StrCat("cannot access a dict with a ", TypeName(property), " key"));
    }
    if (const Value* v = object.object->Find(property.str)) return *v;
    return object.kind == Value::kNamespace ? Value() : BuiltinAttribute(object, property.str);
  }
  if (object.is_array() || object.kind == Value::kString) {
    if (property.kind == Value::kInt) {
      const std::vector<std::string> chars = object.is_array() ? std::vector<std::string>() : CodePoints(object.str);
      const auto size = static_cast<double>(object.is_array() ? object.array->size() : chars.size());
      double i = property.num < 0 ? property.num + size : property.num;
      if (i < 0 || i >= size) return Value();
      if (object.is_array()) return (*object.array)[static_cast<size_t>(i)];
      return Value::String(chars[static_cast<size_t>(i)]);
    }
    if (property.kind == Value::kString) return BuiltinAttribute(object, property.str);
    return Error(absl::StrCat("cannot index with a ", TypeName(property)));
  }
  if (property.kind != Value::kString) return Error(absl::StrCat("cannot index with a ", TypeName(property)));
  return BuiltinAttribute(object, property.str);
}

absl::StatusOr<Value> SliceOf(const Value& object, const Value& start, const Value& stop,
                              const Value& step) {
  if (!object.is_array() && object.kind != Value::kString) return Error("only lists and strings can be sliced");
  for (const Value* v : {&start, &stop, &step}) {
    if (v->kind != Value::kInt && v->kind != Value::kUndefined) return Error("slice bounds must be integers");
  }
  std::vector<std::string> chars;
  if (!object.is_array()) chars = CodePoints(object.str);
  const double len = static_cast<double>(object.is_array() ? object.array->size() : chars.size());
  const double st = step.kind == Value::kUndefined ? 1 : step.num;
  if (st == 0) return Error("slice step cannot be zero");
  double a, b;
  if (st > 0) {
    a = start.kind == Value::kUndefined ? 0 : start.num;
    a = a < 0 ? std::max(len + a, 0.0) : std::min(a, len);
    b = stop.kind == Value::kUndefined ? len : stop.num;
    b = b < 0 ? std::max(len + b, 0.0) : std::min(b, len);
  } else {
    a = start.kind == Value::kUndefined ? len - 1 : start.num;
    a = a < 0 ? std::max(len + a, -1.0) : std::min(a, len - 1);
    b = stop.kind == Value::kUndefined ? -1 : stop.num;
    b = b < -1 ? std::max(len + b, -1.0) : std::min(b, len - 1);
  }
  Array items;
  std::string text;
  for (double i = a; st > 0 ? i < b : i > b; i += st) {
    if (object.is_array()) items.push_back((*object.array)[static_cast<size_t>(i)]);
    else text += chars[static_cast<size_t>(i)];
  }
  return object.is_array() ? Value::List(std::move(items)) : Value::String(std::move(text));
}

absl::StatusOr<Value> BinaryOp(const std::string& op, const Value& l, const Value& r) {
  if (op == "==") return Value::Bool(LooseEquals(l, r));
  if (op == "!=") return Value::Bool(!LooseEquals(l, r));
  const bool in = op == "in" || op == "not in";
  if (l.kind == Value::kUndefined || r.kind == Value::kUndefined) {
    if (r.kind == Value::kUndefined && in) return Value::Bool(op == "not in");
    return Error(absl::StrCat("cannot apply '", op, "' to an undefined value"));
  }
  if (l.kind == Value::kNull || r.kind == Value::kNull) return Error(absl::StrCat("cannot apply '", op, "' to none"));
  if (op == "~") return Value::String(RawString(l) + RawString(r));
  auto numeric = [](const Value& v) { return v.is_number() || v.kind == Value::kBool; };
  if (op == "**" && numeric(l) && numeric(r)) {
    const double a = l.kind == Value::kBool ? l.boolean : l.num, b = r.kind == Value::kBool ? r.boolean : r.num;
    if (a == 0 && b < 0) return Error("0.0 cannot be raised to a negative power");
    const double p = std::pow(a, b);
    if (!std::isfinite(p)) return Error("exponentiation result is not a finite real number");
    return l.kind == Value::kFloat || r.kind == Value::kFloat || b < 0 ? Value::Float(p) : Value::Int(p);
  }
  if (l.is_number() && r.is_number()) {
    const double a = l.num, b = r.num;
    const bool f = l.kind == Value::kFloat || r.kind == Value::kFloat;
    auto num = [f](double x) { return f ? Value::Float(x) : Value::Int(x); };
    if (op == "+") return num(a + b);
    if (op == "-") return num(a - b);
    if (op == "*") return num(a * b);
    if (op == "/") return Value::Float(a / b);
    if (op == "//") return num(std::floor(a / b));
    if (op == "%") return num(std::fmod(a, b));
    if (op == "<") return Value::Bool(a < b);
    if (op == ">") return Value::Bool(a > b);
    if (op == ">=") return Value::Bool(a >= b);
    if (op == "<=") return Value::Bool(a <= b);
  } else if (l.is_array() && r.is_array() && op == "+") {
    Array all = *l.array;
    all.insert(all.end(), r.array->begin(), r.array->end());
    return Value::List(std::move(all));
  } else if (r.is_array() && in) {
    bool member = false;
    for (const Value& e : *r.array) member = member || StrictEquals(e, l);
    return Value::Bool(member == (op == "in"));
  }
  if ((l.kind == Value::kString || r.kind == Value::kString) && op == "+") {
    return Value::String(RawString(l) + RawString(r));
  }
  if (l.kind == Value::kString && r.kind == Value::kString && in) {
    return Value::Bool((r.str.find(l.str) != std::string::npos) == (op == "in"));
  }
  if (l.kind == Value::kString && r.is_dict() && in) {
    return Value::Bool((r.object->Find(l.str) != nullptr) == (op == "in"));
  }
  return Error(absl::StrCat("unsupported operator '", op, "' between ", TypeName(l), " and ", TypeName(r)));
}

}  // namespace accel::text::jinja
