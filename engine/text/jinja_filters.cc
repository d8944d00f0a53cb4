// The filters of @huggingface/jinja (src/runtime.ts applyFilter), case for case: which filter
// applies to which operand type, and with or without parentheses.
#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/text/jinja_builtins.h"
#include "engine/text/jinja_lexer.h"

namespace accel::text::jinja {
namespace {

absl::Status Error(std::string message) { return absl::InvalidArgumentError(std::move(message)); }

absl::Status NotFor(std::string_view name, const Value& operand) {
  return Error(absl::StrCat("unsupported filter '", std::string(name), "' on a ", TypeName(operand)));
}

// Array.prototype.join of the values' payloads (none and undefined join as "").
std::string JoinPayloads(const Array& items, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += sep;
    const Value& v = items[i];
    if (v.is_missing()) continue;
    out += v.kind == Value::kFloat ? NumberToString(v.num) : ToString(v);
  }
  return out;
}

const Value* Arg(const std::vector<Value>& args, size_t i, const Object& kwargs,
                 std::string_view key) {
  if (i < args.size()) return &args[i];
  return kwargs.Find(key);
}

// Orders values as HF's compareRuntimeValues does; an incomparable pair is an error.
absl::StatusOr<int> Compare(const Value& a, const Value& b, bool case_sensitive) {
  auto numeric = [](const Value& v) { return v.is_number() || v.kind == Value::kBool; };
  if (a.kind == Value::kNull && b.kind == Value::kNull) return 0;
  if (a.kind == Value::kUndefined && b.kind == Value::kUndefined) return 0;
  if (numeric(a) && numeric(b)) {
    const double x = a.kind == Value::kBool ? a.boolean : a.num;
    const double y = b.kind == Value::kBool ? b.boolean : b.num;
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (a.kind == Value::kString && b.kind == Value::kString) {
    std::string x = a.str, y = b.str;
    if (!case_sensitive) {
      for (char& c : x) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      for (char& c : y) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    return x < y ? -1 : x > y ? 1 : 0;
  }
  return Error(absl::StrCat("cannot compare ", TypeName(a), " with ", TypeName(b)));
}

absl::StatusOr<Value> Sorted(const Value& operand, bool reverse, bool case_sensitive,
                             const Value& attribute) {
  Array items = *operand.array;
  auto key = [&](const Value& item) -> Value {
    if (attribute.kind == Value::kNull) return item;
    if (!item.is_dict() && item.kind != Value::kNamespace) return Value();
    const std::string path = attribute.kind == Value::kString ? attribute.str : NumberToString(attribute.num);
    const Value* v = item.object->Find(path);
    return v != nullptr ? *v : Value();
  };
  absl::Status status;
  std::stable_sort(items.begin(), items.end(), [&](const Value& a, const Value& b) {
    auto c = Compare(key(a), key(b), case_sensitive);
    if (!c.ok()) { status = c.status(); return false; }
    return reverse ? *c > 0 : *c < 0;
  });
  ACCEL_RETURN_IF_ERROR(status);
  return Value::List(std::move(items));
}

absl::StatusOr<Value> Indent(const std::string& s, double width, bool first, bool blank) {
  const std::string pad(static_cast<size_t>(std::max(0.0, width)), ' ');
  std::string out;
  size_t start = 0;
  for (size_t line = 0;; ++line) {
    const size_t end = s.find('\n', start);
    const std::string_view x = std::string_view(s).substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (line) out += "\n";
    if (!((!first && line == 0) || (!blank && x.empty()))) out += pad;
    out += x;
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return Value::String(std::move(out));
}

absl::StatusOr<Value> CalledFilter(const Value& operand, std::string_view name,
                                   const std::vector<Value>& args, const Object& kwargs,
                                   Env& env) {
  if (name == "tojson") {
    JsonOptions o;
    if (const Value* v = kwargs.Find("indent"); v && v->kind != Value::kNull) {
      if (v->kind != Value::kInt) return Error("tojson: indent must be a number");
      o.indent = static_cast<int>(v->num);
    }
    if (const Value* v = kwargs.Find("ensure_ascii")) {
      if (v->kind != Value::kBool) return Error("tojson: ensure_ascii must be a boolean");
      o.ensure_ascii = v->boolean;
    }
    if (const Value* v = kwargs.Find("sort_keys")) {
      if (v->kind != Value::kBool) return Error("tojson: sort_keys must be a boolean");
      o.sort_keys = v->boolean;
    }
    if (const Value* v = kwargs.Find("separators"); v && v->kind != Value::kNull) {
      if (!v->is_array() || v->array->size() != 2 || (*v->array)[0].kind != Value::kString ||
          (*v->array)[1].kind != Value::kString) {
        return Error("tojson: separators must be a tuple of two strings");
      }
      o.has_separators = true;
      o.item_separator = (*v->array)[0].str;
      o.key_separator = (*v->array)[1].str;
    }
    ACCEL_ASSIGN_OR_RETURN(std::string s, ToJson(operand, o));
    return Value::String(std::move(s));
  }
  if (name == "join") {
    const Value* sep = Arg(args, 0, kwargs, "separator");
    if (sep != nullptr && sep->kind != Value::kString) return Error("join: separator must be a string");
    const std::string s = sep ? sep->str : "";
    if (operand.kind == Value::kString) {
      Array chars;
      for (auto& c : CodePoints(operand.str)) chars.push_back(Value::String(c));
      return Value::String(JoinPayloads(chars, s));
    }
    if (operand.is_array()) return Value::String(JoinPayloads(*operand.array, s));
    return NotFor(name, operand);
  }
  if (name == "int" || name == "float") {
    const bool is_int = name == "int";
    const Value* def = Arg(args, 0, kwargs, "default");
    const Value fallback = def ? *def : is_int ? Value::Int(0) : Value::Float(0);
    if (operand.kind == Value::kString) {
      char* end = nullptr;
      const double d = is_int ? static_cast<double>(std::strtol(operand.str.c_str(), &end, 10))
                              : std::strtod(operand.str.c_str(), &end);
      if (end == operand.str.c_str()) return fallback;
      return is_int ? Value::Int(d) : Value::Float(d);
    }
    if (operand.is_number()) return operand;
    if (operand.kind == Value::kBool) {
      return is_int ? Value::Int(operand.boolean) : Value::Float(operand.boolean);
    }
    return NotFor(name, operand);
  }
  if (name == "default") {
    const Value def = args.size() > 0 ? args[0] : Value::String("");
    const Value* boolean = Arg(args, 1, kwargs, "boolean");
    if (boolean != nullptr && boolean->kind != Value::kBool) return Error("default: boolean must be a boolean");
    if (operand.kind == Value::kUndefined || (boolean && boolean->boolean && !Truthy(operand))) return def;
    return operand;
  }
  if (operand.is_array()) {
    if (name == "sort") {
      const Value* reverse = Arg(args, 0, kwargs, "reverse");
      const Value* cs = Arg(args, 1, kwargs, "case_sensitive");
      const Value* attribute = Arg(args, 2, kwargs, "attribute");
      return Sorted(operand, reverse && Truthy(*reverse), cs && Truthy(*cs),
                    attribute ? *attribute : Value::Null());
    }
    if (name == "selectattr" || name == "rejectattr") {
      const bool select = name == "selectattr";
      if (args.empty()) return Error(absl::StrCat(std::string(name), " needs an attribute name"));
      for (const Value& a : args) {
        if (a.kind != Value::kString) return Error(absl::StrCat("arguments of ", std::string(name), " must be strings"));
      }
      Array out;
      for (const Value& item : *operand.array) {
        if (!item.is_dict() && item.kind != Value::kNamespace) {
          return Error(absl::StrCat(std::string(name), " can only be applied to a list of dicts"));
        }
        const Value* a = item.object->Find(args[0].str);
        bool result = false;
        if (a != nullptr) {
          if (args.size() > 1) {
            ACCEL_ASSIGN_OR_RETURN(result, RunTest(args[1].str, *a, args.size() > 2 ? &args[2] : nullptr));
          } else {
            result = Truthy(*a);
          }
        }
        if (result == select) out.push_back(item);
      }
      return Value::List(std::move(out));
    }
    if (name == "map") {
      const Value* attr = kwargs.Find("attribute");
      if (attr == nullptr) return Error("map without attribute= is not supported");
      if (attr->kind != Value::kString) return Error("map: attribute must be a string");
      Array out;
      for (const Value& item : *operand.array) {
        if (!item.is_dict() && item.kind != Value::kNamespace) return Error("map: items must be dicts");
        const Value* v = item.object->Find(attr->str);
        const Value* def = kwargs.Find("default");
        out.push_back(v != nullptr ? *v : def != nullptr ? *def : Value());
      }
      return Value::List(std::move(out));
    }
    return NotFor(name, operand);
  }
  if (operand.kind == Value::kString) {
    if (name == "indent") {
      const Value* width = Arg(args, 0, kwargs, "width");
      const Value* first = Arg(args, 1, kwargs, "first");
      const Value* blank = Arg(args, 2, kwargs, "blank");
      if (width != nullptr && width->kind != Value::kInt) return Error("indent: width must be a number");
      return Indent(operand.str, width ? width->num : 4, first && Truthy(*first), blank && Truthy(*blank));
    }
    if (name == "replace") {
      std::vector<Value> all = args;
      all.push_back(Value::Dict(kwargs, Value::kKwargs));
      return (*BuiltinAttribute(operand, "replace").function)(std::move(all), env);
    }
    return NotFor(name, operand);
  }
  if (operand.is_dict()) {
    const Value method = BuiltinAttribute(operand, name);
    if (method.kind != Value::kFunction) return NotFor(name, operand);
    std::vector<Value> all = args;
    if (!kwargs.entries.empty()) all.push_back(Value::Dict(kwargs, Value::kKwargs));
    return (*method.function)(std::move(all), env);
  }
  return NotFor(name, operand);
}

}  // namespace

absl::StatusOr<Value> ApplyFilter(const Value& operand, std::string_view name, bool called,
                                  const std::vector<Value>& args, const Object& kwargs,
                                  Env& env) {
  if (called) return CalledFilter(operand, name, args, kwargs, env);
  if (name == "safe") return operand;
  if (name == "tojson") {
    ACCEL_ASSIGN_OR_RETURN(std::string s, ToJson(operand, JsonOptions{}));
    return Value::String(std::move(s));
  }
  if (operand.is_array()) {
    const Array& a = *operand.array;
    if (name == "list") return operand;
    if (name == "first") return a.empty() ? Value() : a.front();
    if (name == "last") return a.empty() ? Value() : a.back();
    if (name == "length") return Value::Int(static_cast<double>(a.size()));
    if (name == "reverse") return Value::List(Array(a.rbegin(), a.rend()));
    if (name == "sort") return Sorted(operand, false, false, Value::Null());
    if (name == "join") return Value::String(JoinPayloads(a, ""));
    if (name == "string") {
      ACCEL_ASSIGN_OR_RETURN(std::string s, ToJson(operand, JsonOptions{}, 0, false));
      return Value::String(std::move(s));
    }
    if (name == "unique") {
      Array out;
      for (const Value& v : a) {
        bool seen = false;
        for (const Value& o : out) seen = seen || StrictEquals(o, v);
        if (!seen) out.push_back(v);
      }
      return Value::List(std::move(out));
    }
    return NotFor(name, operand);
  }
  if (operand.kind == Value::kString) {
    if (name == "length" || name == "upper" || name == "lower" || name == "title" ||
        name == "capitalize") {
      const Value b = BuiltinAttribute(operand, name);
      if (b.kind != Value::kFunction) return b;
      return (*b.function)({}, env);
    }
    if (name == "trim") return Value::String(std::string(TrimEnd(TrimStart(operand.str))));
    if (name == "indent") return Indent(operand.str, 4, false, false);
    if (name == "join" || name == "string") return operand;
    if (name == "int" || name == "float") return CalledFilter(operand, name, {}, Object{}, env);
    return NotFor(name, operand);
  }
  if (operand.is_number()) {
    if (name == "abs") return operand.kind == Value::kInt ? Value::Int(std::fabs(operand.num)) : Value::Float(std::fabs(operand.num));
    if (name == "int") return Value::Int(std::floor(operand.num));
    if (name == "float") return Value::Float(operand.num);
    if (name == "string") return Value::String(ToString(operand));
    return NotFor(name, operand);
  }
  if (operand.is_dict()) {
    if (name == "items" || name == "length") {
      if (name == "length") return Value::Int(static_cast<double>(operand.object->entries.size()));
    }
    const Value b = BuiltinAttribute(operand, name);
    if (b.kind == Value::kFunction) return (*b.function)({}, env);
    return NotFor(name, operand);
  }
  if (operand.kind == Value::kBool) {
    if (name == "bool") return operand;
    if (name == "int") return Value::Int(operand.boolean);
    if (name == "float") return Value::Float(operand.boolean);
    if (name == "string") return Value::String(operand.boolean ? "true" : "false");
    return NotFor(name, operand);
  }
  return NotFor(name, operand);
}

}  // namespace accel::text::jinja
