#include "engine/text/jinja_interpreter.h"

#include <cmath>
#include <functional>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/text/jinja_operators.h"

namespace accel::text::jinja {
namespace {

absl::Status Error(std::string message) { return absl::InvalidArgumentError(std::move(message)); }

// Whether a macro body reads `kwargs` or `varargs` (then extra arguments are allowed).
bool Reads(const Node* n, std::string_view name) {
  if (n == nullptr) return false;
  if (n->kind == Kind::kIdent && n->str == name) return true;
  if (Reads(n->x.get(), name) || Reads(n->y.get(), name) || Reads(n->z.get(), name)) return true;
  for (const auto& c : n->a) if (Reads(c.get(), name)) return true;
  for (const auto& c : n->b) if (Reads(c.get(), name)) return true;
  return false;
}

class Interpreter {
 public:
  absl::StatusOr<std::string> Block(const std::vector<NodePtr>& body, Env& env) {
    std::string out;
    for (const NodePtr& n : body) {
      ACCEL_ASSIGN_OR_RETURN(Value v, Eval(*n, env));
      if (control_ != Control::kNone) return out;  // the enclosing loop discards it
      if (!v.is_missing()) out += ToString(v);
    }
    return out;
  }

 private:
  enum class Control { kNone, kBreak, kContinue };

  absl::StatusOr<Value> Eval(const Node& n, Env& env) {
    absl::StatusOr<Value> v = EvalInner(n, env);
    if (!v.ok() && !absl::StartsWith(v.status().message(), "chat template line ")) {
      return absl::Status(v.status().code(), absl::StrCat("chat template line ", n.line, ": ",
                                                          v.status().message()));
    }
    return v;
  }
  absl::StatusOr<Value> EvalOrUndefined(const Node* n, Env& env) {
    return n == nullptr ? Value() : Eval(*n, env);
  }

  absl::StatusOr<Value> EvalInner(const Node& n, Env& env) {
    switch (n.kind) {
      case Kind::kText: case Kind::kString: return Value::String(n.str);
      case Kind::kComment: return Value::Null();
      case Kind::kInt: return Value::Int(n.num);
      case Kind::kFloat: return Value::Float(n.num);
      case Kind::kIdent: return env.Lookup(n.str);
      case Kind::kBreak: control_ = Control::kBreak; return Value::Null();
      case Kind::kContinue: control_ = Control::kContinue; return Value::Null();
      case Kind::kArray: case Kind::kTuple: {
        Array items;
        for (const auto& e : n.a) {
          ACCEL_ASSIGN_OR_RETURN(Value v, Eval(*e, env));
          items.push_back(std::move(v));
        }
        return Value::List(std::move(items), n.kind == Kind::kTuple ? Value::kTuple : Value::kArray);
      }
      case Kind::kObject: {
        Object o;
        for (size_t i = 0; i < n.a.size(); ++i) {
          ACCEL_ASSIGN_OR_RETURN(Value k, Eval(*n.a[i], env));
          if (k.kind != Value::kString) return Error(absl::StrCat("dict keys must be strings, got ", TypeName(k)));
          ACCEL_ASSIGN_OR_RETURN(Value v, Eval(*n.b[i], env));
          o.Set(k.str, std::move(v));
        }
        return Value::Dict(std::move(o));
      }
      case Kind::kIf: {
        ACCEL_ASSIGN_OR_RETURN(Value test, Eval(*n.x, env));
        ACCEL_ASSIGN_OR_RETURN(std::string s, Block(Truthy(test) ? n.a : n.b, env));
        return Value::String(std::move(s));
      }
      case Kind::kFor: return For(n, env);
      case Kind::kSet: return Set(n, env);
      case Kind::kMacro: {
        env.Set(n.str, MacroFunction(n, n.a, n.b, absl::StrCat("'", n.str, "'"), nullptr));
        return Value::Null();
      }
      case Kind::kCallBlock: return CallBlock(n, env);
      case Kind::kFilterBlock: {
        ACCEL_ASSIGN_OR_RETURN(std::string s, Block(n.a, env));
        return Filter(Value::String(std::move(s)), *n.x, env);
      }
      case Kind::kMember: return Member(n, env);
      case Kind::kCall: {
        std::vector<Value> args;
        ACCEL_RETURN_IF_ERROR(Arguments(n.a, env, args, /*kwargs_last=*/true));
        ACCEL_ASSIGN_OR_RETURN(Value fn, Eval(*n.x, env));
        if (fn.kind != Value::kFunction) {
          return Error(absl::StrCat("cannot call something that is not a function: got ", TypeName(fn)));
        }
        return (*fn.function)(std::move(args), env);
      }
      case Kind::kUnary: {
        ACCEL_ASSIGN_OR_RETURN(Value v, Eval(*n.x, env));
        if (n.str == "not") return Value::Bool(!Truthy(v));
        const double sign = n.str == "-" ? -1 : 1;
        if (v.is_number()) return v.kind == Value::kFloat ? Value::Float(sign * v.num) : Value::Int(sign * v.num);
        if (v.kind == Value::kBool) return Value::Int(sign * (v.boolean ? 1 : 0));
        return Error(absl::StrCat("unsupported operator '", n.str, "' on a ", TypeName(v)));
      }
      case Kind::kBinary: return Binary(n, env);
      case Kind::kFilter: {
        ACCEL_ASSIGN_OR_RETURN(Value operand, Eval(*n.x, env));
        return Filter(operand, *n.y, env);
      }
      case Kind::kTest: {
        ACCEL_ASSIGN_OR_RETURN(Value operand, Eval(*n.x, env));
        ACCEL_ASSIGN_OR_RETURN(bool r, RunTest(n.str, operand));
        return Value::Bool(n.flag ? !r : r);
      }
      case Kind::kSelect: {
        ACCEL_ASSIGN_OR_RETURN(Value test, Eval(*n.y, env));
        if (!Truthy(test)) return Value();
        return Eval(*n.x, env);
      }
      case Kind::kTernary: {
        ACCEL_ASSIGN_OR_RETURN(Value test, Eval(*n.x, env));
        return Eval(Truthy(test) ? *n.y : *n.z, env);
      }
      default:
        return Error("unsupported expression here");
    }
  }

  // Positional values, then one kKwargs value holding the keyword arguments when there are
  // any (always when `kwargs_last` is false and the caller wants them apart).
  absl::Status Arguments(const std::vector<NodePtr>& nodes, Env& env, std::vector<Value>& args,
                         bool kwargs_last, Object* kwargs_out = nullptr) {
    Object kwargs;
    for (const NodePtr& a : nodes) {
      if (a->kind == Kind::kSpread) {
        ACCEL_ASSIGN_OR_RETURN(Value v, Eval(*a->x, env));
        if (!v.is_array()) return Error(absl::StrCat("cannot unpack non-iterable type: ", TypeName(v)));
        for (const Value& e : *v.array) args.push_back(e);
      } else if (a->kind != Kind::kKwarg && a->kind != Kind::kKwSpread) {
        ACCEL_ASSIGN_OR_RETURN(Value v, Eval(*a, env));
        args.push_back(std::move(v));
      }
    }
    for (const NodePtr& a : nodes) {
      if (a->kind == Kind::kKwarg) {
        if (kwargs.Find(a->str)) return Error(absl::StrCat("got multiple values for keyword argument '", a->str, "'"));
        ACCEL_ASSIGN_OR_RETURN(Value v, Eval(*a->x, env));
        kwargs.Set(a->str, std::move(v));
      } else if (a->kind == Kind::kKwSpread) {
        ACCEL_ASSIGN_OR_RETURN(Value v, Eval(*a->x, env));
        if (!v.is_dict()) return Error(absl::StrCat("argument after ** must be a mapping, not ", TypeName(v)));
        for (const auto& [k, e] : v.object->entries) {
          if (kwargs.Find(k)) return Error(absl::StrCat("got multiple values for keyword argument '", k, "'"));
          kwargs.Set(k, e);
        }
      }
    }
    if (kwargs_out != nullptr) {
      *kwargs_out = std::move(kwargs);
    } else if (kwargs_last && !kwargs.entries.empty()) {
      args.push_back(Value::Dict(std::move(kwargs), Value::kKwargs));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<Value> Filter(const Value& operand, const Node& filter, Env& env) {
    if (filter.kind == Kind::kIdent) return ApplyFilter(operand, filter.str, false, {}, Object{}, env);
    if (filter.kind != Kind::kCall || filter.x->kind != Kind::kIdent) return Error("unsupported filter form");
    std::vector<Value> args;
    Object kwargs;
    ACCEL_RETURN_IF_ERROR(Arguments(filter.a, env, args, false, &kwargs));
    return ApplyFilter(operand, filter.x->str, true, args, kwargs, env);
  }

  absl::StatusOr<Value> Member(const Node& n, Env& env) {
    ACCEL_ASSIGN_OR_RETURN(Value object, Eval(*n.x, env));
    if (n.flag && n.y->kind == Kind::kSlice) {
      ACCEL_ASSIGN_OR_RETURN(Value start, EvalOrUndefined(n.y->x.get(), env));
      ACCEL_ASSIGN_OR_RETURN(Value stop, EvalOrUndefined(n.y->y.get(), env));
      ACCEL_ASSIGN_OR_RETURN(Value step, EvalOrUndefined(n.y->z.get(), env));
      return SliceOf(object, start, stop, step);
    }
    Value property;
    if (n.flag) {
      ACCEL_ASSIGN_OR_RETURN(property, Eval(*n.y, env));
    } else if (n.y->kind == Kind::kInt) {
      property = Value::Int(n.y->num);
    } else {
      property = Value::String(n.y->str);
    }
    return Index(object, property);
  }

  absl::StatusOr<Value> Binary(const Node& n, Env& env) {
    ACCEL_ASSIGN_OR_RETURN(Value l, Eval(*n.x, env));
    if (n.str == "and") return Truthy(l) ? Eval(*n.y, env) : l;
    if (n.str == "or") return Truthy(l) ? l : Eval(*n.y, env);
    ACCEL_ASSIGN_OR_RETURN(Value r, Eval(*n.y, env));
    return BinaryOp(n.str, l, r);
  }

  absl::StatusOr<Value> Set(const Node& n, Env& env) {
    Value rhs;
    if (n.y) {
      ACCEL_ASSIGN_OR_RETURN(rhs, Eval(*n.y, env));
    } else {
      ACCEL_ASSIGN_OR_RETURN(std::string s, Block(n.a, env));
      rhs = Value::String(std::move(s));
    }
    const Node& target = *n.x;
    if (target.kind == Kind::kIdent) {
      env.Set(target.str, std::move(rhs));
    } else if (target.kind == Kind::kTuple) {
      if (!rhs.is_array()) return Error(absl::StrCat("cannot unpack a ", TypeName(rhs), " in set"));
      if (rhs.array->size() != target.a.size()) return Error("wrong number of items to unpack in set");
      for (size_t i = 0; i < target.a.size(); ++i) {
        if (target.a[i]->kind != Kind::kIdent) return Error("set can only unpack into names");
        env.Set(target.a[i]->str, (*rhs.array)[i]);
      }
    } else if (target.kind == Kind::kMember && !target.flag) {
      ACCEL_ASSIGN_OR_RETURN(Value object, Eval(*target.x, env));
      if (object.kind != Value::kNamespace) return Error("cannot assign an attribute of a non-namespace object");
      if (target.y->kind != Kind::kIdent) return Error("cannot assign to a member with a non-name property");
      object.object->Set(target.y->str, std::move(rhs));
    } else {
      return Error("unsupported target of set");
    }
    return Value::Null();
  }

  absl::StatusOr<Value> For(const Node& n, Env& env) {
    Env scope(&env);
    const Node* test = nullptr;
    Value iterable;
    if (n.y->kind == Kind::kSelect) {
      ACCEL_ASSIGN_OR_RETURN(iterable, Eval(*n.y->x, scope));
      test = n.y->y.get();
    } else {
      ACCEL_ASSIGN_OR_RETURN(iterable, Eval(*n.y, scope));
    }
    if (iterable.is_dict()) {
      Array keys;
      for (const auto& [k, v] : iterable.object->entries) keys.push_back(Value::String(k));
      iterable = Value::List(std::move(keys));
    }
    if (!iterable.is_array()) return Error(absl::StrCat("a for loop needs a list or a dict, got ", TypeName(iterable)));
    auto bind = [&n](Env& into, const Value& item) -> absl::Status {
      if (n.x->kind == Kind::kIdent) { into.Set(n.x->str, item); return absl::OkStatus(); }
      if (!item.is_array()) return Error(absl::StrCat("cannot unpack a ", TypeName(item)));
      if (item.array->size() != n.x->a.size()) {
        return Error(absl::StrCat("too ", n.x->a.size() > item.array->size() ? "few" : "many", " items to unpack"));
      }
      for (size_t j = 0; j < n.x->a.size(); ++j) {
        if (n.x->a[j]->kind != Kind::kIdent) return Error("a for loop can only unpack into names");
        into.Set(n.x->a[j]->str, (*item.array)[j]);
      }
      return absl::OkStatus();
    };
    Array items;
    for (const Value& item : *iterable.array) {
      if (test != nullptr) {
        Env loop_scope(&scope);
        ACCEL_RETURN_IF_ERROR(bind(loop_scope, item));
        ACCEL_ASSIGN_OR_RETURN(Value keep, Eval(*test, loop_scope));
        if (!Truthy(keep)) continue;
      }
      items.push_back(item);
    }
    std::string out;
    bool no_iteration = true;
    const double len = static_cast<double>(items.size());
    for (size_t i = 0; i < items.size(); ++i) {
      const double d = static_cast<double>(i);
      Object loop;
      loop.entries = {{"index", Value::Int(d + 1)}, {"index0", Value::Int(d)},
                      {"revindex", Value::Int(len - d)}, {"revindex0", Value::Int(len - d - 1)},
                      {"first", Value::Bool(i == 0)}, {"last", Value::Bool(i + 1 == items.size())},
                      {"length", Value::Int(len)}, {"previtem", i > 0 ? items[i - 1] : Value()},
                      {"nextitem", i + 1 < items.size() ? items[i + 1] : Value()}};
      scope.Set("loop", Value::Dict(std::move(loop)));
      ACCEL_RETURN_IF_ERROR(bind(scope, items[i]));
      ACCEL_ASSIGN_OR_RETURN(std::string s, Block(n.a, scope));
      const Control c = control_;
      control_ = Control::kNone;
      if (c == Control::kContinue) continue;
      if (c == Control::kBreak) break;
      out += s;
      no_iteration = false;
    }
    if (no_iteration) {
      ACCEL_ASSIGN_OR_RETURN(std::string s, Block(n.b, scope));
      out += s;
    }
    return Value::String(std::move(out));
  }

  // A macro (or the caller of a call block) as a function value; `frame` is the scope a call
  // block's caller runs in (null for a macro: it runs in a child of its caller's scope).
  Value MacroFunction(const Node& n, const std::vector<NodePtr>& params,
                      const std::vector<NodePtr>& body, std::string display, Env* frame) {
    const bool reads_kwargs = Reads(&n, "kwargs"), reads_varargs = Reads(&n, "varargs");
    return Value::Func([this, &params, &body, display, frame, reads_kwargs, reads_varargs](
                           std::vector<Value> args, Env& caller) -> absl::StatusOr<Value> {
      Env scope(frame != nullptr ? frame : &caller);
      Object kwargs;
      if (!args.empty() && args.back().kind == Value::kKwargs) {
        kwargs = *args.back().object;
        args.pop_back();
      }
      std::vector<std::pair<std::string, const Node*>> defaults;
      for (size_t i = 0; i < params.size(); ++i) {
        const Node& p = *params[i];
        const std::string& name = p.kind == Kind::kKwarg ? p.str : p.str;
        Value v;
        bool have = i < args.size();
        if (have) v = args[i];
        if (!have) {
          for (auto it = kwargs.entries.begin(); it != kwargs.entries.end(); ++it) {
            if (it->first == name) { v = it->second; have = true; kwargs.entries.erase(it); break; }
          }
        }
        if (!have && p.kind == Kind::kKwarg) defaults.emplace_back(name, p.x.get());
        scope.Set(name, v);
      }
      if (reads_kwargs) {
        scope.Set("kwargs", Value::Dict(kwargs));
      } else if (!kwargs.entries.empty()) {
        return Error(absl::StrCat("macro ", display, " takes no keyword argument '", kwargs.entries[0].first, "'"));
      }
      if (reads_varargs) {
        scope.Set("varargs", Value::List(args.size() > params.size() ? Array(args.begin() + params.size(), args.end()) : Array()));
      } else if (args.size() > params.size()) {
        return Error(absl::StrCat("macro ", display, " takes not more than ", params.size(), " argument(s)"));
      }
      for (const auto& [name, def] : defaults) {
        ACCEL_ASSIGN_OR_RETURN(Value v, Eval(*def, scope));
        scope.Set(name, std::move(v));
      }
      ACCEL_ASSIGN_OR_RETURN(std::string s, Block(body, scope));
      return Value::String(std::move(s));
    });
  }

  absl::StatusOr<Value> CallBlock(const Node& n, Env& env) {
    Value caller = MacroFunction(n, n.a, n.b, "None", &env);
    std::vector<Value> args;
    Object kwargs;
    ACCEL_RETURN_IF_ERROR(Arguments(n.x->a, env, args, false, &kwargs));
    args.push_back(Value::Dict(std::move(kwargs), Value::kKwargs));
    ACCEL_ASSIGN_OR_RETURN(Value fn, Eval(*n.x->x, env));
    if (fn.kind != Value::kFunction) return Error(absl::StrCat("cannot call a ", TypeName(fn)));
    Env scope(&env);
    scope.Set("caller", std::move(caller));
    return (*fn.function)(std::move(args), scope);
  }

  Control control_ = Control::kNone;
};

}  // namespace

absl::StatusOr<std::string> Render(const std::vector<NodePtr>& program, Env& env) {
  Interpreter interpreter;
  return interpreter.Block(program, env);
}

}  // namespace accel::text::jinja
