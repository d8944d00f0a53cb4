// Env, the globals, the tests, and the methods of strings and dicts (see jinja_builtins.h);
// the filters are in jinja_filters.cc.
#include <unicode/locid.h>
#include <unicode/unistr.h>

#include <ctime>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "engine/text/jinja_builtins.h"
#include "engine/text/jinja_lexer.h"

namespace accel::text::jinja {
namespace {

absl::Status Error(std::string message) { return absl::InvalidArgumentError(std::move(message)); }

std::string CaseMap(std::string_view s, bool upper) {
  icu::UnicodeString u = icu::UnicodeString::fromUTF8(icu::StringPiece(s.data(), s.size()));
  if (upper) u.toUpper(icu::Locale::getRoot()); else u.toLower(icu::Locale::getRoot());
  std::string out;
  u.toUTF8String(out);
  return out;
}

bool AsciiWord(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

// Python's str.split(sep, maxsplit) as HF implements it.
absl::StatusOr<Value> Split(const std::string& s, const std::vector<Value>& args) {
  const Value sep = args.size() > 0 ? args[0] : Value::Null();
  const Value maxsplit = args.size() > 1 ? args[1] : Value::Int(-1);
  if (sep.kind != Value::kString && sep.kind != Value::kNull) {
    return Error("split(): sep must be a string or none");
  }
  if (maxsplit.kind != Value::kInt) return Error("split(): maxsplit must be a number");
  const auto max = static_cast<long>(maxsplit.num);
  std::vector<std::string> parts;
  if (sep.kind == Value::kNull) {
    std::string_view text = TrimStart(s);
    while (!text.empty()) {
      size_t end = 0;
      while (end < text.size() && JsSpaceAt(text, end) == 0) ++end;
      if (max != -1 && static_cast<long>(parts.size()) >= max) { parts.emplace_back(text); break; }
      parts.emplace_back(text.substr(0, end));
      text = TrimStart(text.substr(end));
    }
  } else {
    if (sep.str.empty()) return Error("split(): empty separator");
    parts = absl::StrSplit(s, sep.str);
    if (max != -1 && static_cast<long>(parts.size()) > max) {
      std::string rest = absl::StrJoin(parts.begin() + max, parts.end(), sep.str);
      parts.resize(max);
      parts.push_back(std::move(rest));
    }
  }
  Array out;
  for (auto& p : parts) out.push_back(Value::String(std::move(p)));
  return Value::List(std::move(out));
}

Value Method(Function f) { return Value::Func(std::move(f)); }

Value StringAttribute(const std::string& s, std::string_view name) {
  auto unary = [&s](std::string (*f)(const std::string&)) {
    return Method([s, f](std::vector<Value>, Env&) -> absl::StatusOr<Value> {
      return Value::String(f(s));
    });
  };
  if (name == "length") return Value::Int(static_cast<double>(Utf16Length(s)));
  if (name == "upper") return unary([](const std::string& x) { return CaseMap(x, true); });
  if (name == "lower") return unary([](const std::string& x) { return CaseMap(x, false); });
  if (name == "strip") {
    return unary([](const std::string& x) { return std::string(TrimEnd(TrimStart(x))); });
  }
  if (name == "lstrip") return unary([](const std::string& x) { return std::string(TrimStart(x)); });
  if (name == "rstrip") return unary([](const std::string& x) { return std::string(TrimEnd(x)); });
  if (name == "title") {
    return unary([](const std::string& x) {
      std::string out = x;
      for (size_t i = 0; i < out.size(); ++i) {
        if (AsciiWord(out[i]) && (i == 0 || !AsciiWord(out[i - 1])) && out[i] >= 'a' && out[i] <= 'z') {
          out[i] = static_cast<char>(out[i] - 'a' + 'A');
        }
      }
      return out;
    });
  }
  if (name == "capitalize") {
    return unary([](const std::string& x) {
      if (x.empty()) return x;
      const std::string first = CodePoints(x)[0];
      return CaseMap(first, true) + x.substr(first.size());
    });
  }
  if (name == "startswith" || name == "endswith") {
    const bool starts = name == "startswith";
    return Method([s, starts](std::vector<Value> args, Env&) -> absl::StatusOr<Value> {
      const char* fn = starts ? "startswith()" : "endswith()";
      if (args.empty()) return Error(absl::StrCat(fn, " requires an argument"));
      auto match = [&](const std::string& p) {
        return p.size() <= s.size() &&
               (starts ? s.compare(0, p.size(), p) == 0 : s.compare(s.size() - p.size(), p.size(), p) == 0);
      };
      if (args[0].kind == Value::kString) return Value::Bool(match(args[0].str));
      if (!args[0].is_array()) return Error(absl::StrCat(fn, " takes a string or a tuple of strings"));
      for (const Value& p : *args[0].array) {
        if (p.kind != Value::kString) return Error(absl::StrCat(fn, " tuple elements must be strings"));
        if (match(p.str)) return Value::Bool(true);
      }
      return Value::Bool(false);
    });
  }
  if (name == "split") {
    return Method([s](std::vector<Value> args, Env&) { return Split(s, args); });
  }
  if (name == "replace") {
    return Method([s](std::vector<Value> args, Env&) -> absl::StatusOr<Value> {
      if (args.size() < 2) return Error("replace() requires two arguments");
      if (args[0].kind != Value::kString || args[1].kind != Value::kString) {
        return Error("replace() arguments must be strings");
      }
      Value count = Value::Null();
      if (args.size() > 2) {
        if (args[2].kind == Value::kKwargs) {
          if (const Value* c = args[2].object->Find("count")) count = *c;
        } else {
          count = args[2];
        }
      }
      if (count.kind != Value::kInt && count.kind != Value::kNull) {
        return Error("replace() count must be a number or none");
      }
      long remaining = count.kind == Value::kNull || count.num < 0 ? -1 : static_cast<long>(count.num);
      const std::string& from = args[0].str;
      const std::string& to = args[1].str;
      std::string out;
      if (from.empty()) {  // HF: /(?=)/gu, a match at every code point boundary
        const auto points = CodePoints(s);
        for (size_t i = 0; i <= points.size(); ++i) {
          if (remaining != 0) { out += to; if (remaining > 0) --remaining; }
          if (i < points.size()) out += points[i];
        }
        return Value::String(std::move(out));
      }
      size_t pos = 0;
      while (remaining != 0) {
        const size_t at = s.find(from, pos);
        if (at == std::string::npos) break;
        out.append(s, pos, at - pos);
        out += to;
        pos = at + from.size();
        if (remaining > 0) --remaining;
      }
      out.append(s, pos, std::string::npos);
      return Value::String(std::move(out));
    });
  }
  return Value();
}

Value ItemsOf(const Object& o) {
  Array items;
  for (const auto& [k, v] : o.entries) items.push_back(Value::List({Value::String(k), v}));
  return Value::List(std::move(items));
}

Value DictAttribute(const Value& dict, std::string_view name) {
  const std::shared_ptr<Object> o = dict.object;
  if (name == "get") {
    return Method([o](std::vector<Value> args, Env&) -> absl::StatusOr<Value> {
      if (args.empty() || args[0].kind != Value::kString) {
        return Error("get(): the key must be a string");
      }
      if (const Value* v = o->Find(args[0].str)) return *v;
      return args.size() > 1 ? args[1] : Value::Null();
    });
  }
  if (name == "items") {
    return Method([o](std::vector<Value>, Env&) -> absl::StatusOr<Value> { return ItemsOf(*o); });
  }
  if (name == "keys" || name == "values") {
    const bool keys = name == "keys";
    return Method([o, keys](std::vector<Value>, Env&) -> absl::StatusOr<Value> {
      Array out;
      for (const auto& [k, v] : o->entries) out.push_back(keys ? Value::String(k) : v);
      return Value::List(std::move(out));
    });
  }
  return Value();
}

std::string Strftime(const std::string& format) {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  static constexpr const char* kMonths[] = {"January", "February", "March", "April", "May",
                                            "June", "July", "August", "September", "October",
                                            "November", "December"};
  auto pad2 = [](int n) { return absl::StrCat(n < 10 ? "0" : "", n); };
  std::string out;
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] != '%' || i + 1 >= format.size()) { out.push_back(format[i]); continue; }
    switch (format[++i]) {
      case 'Y': out += std::to_string(tm.tm_year + 1900); break;
      case 'm': out += pad2(tm.tm_mon + 1); break;
      case 'd': out += pad2(tm.tm_mday); break;
      case 'b': out += std::string(kMonths[tm.tm_mon]).substr(0, 3); break;
      case 'B': out += kMonths[tm.tm_mon]; break;
      case 'H': out += pad2(tm.tm_hour); break;
      case 'M': out += pad2(tm.tm_min); break;
      case '%': out += "%"; break;
      default: out.push_back('%'); out.push_back(format[i]);
    }
  }
  return out;
}

}  // namespace

Value Env::Lookup(std::string_view name) const {
  for (const Env* e = this; e != nullptr; e = e->parent_) {
    if (auto it = e->vars_.find(name); it != e->vars_.end()) return it->second;
  }
  return Value();
}

void InstallGlobals(Env& env) {
  env.Set("true", Value::Bool(true));
  env.Set("false", Value::Bool(false));
  env.Set("none", Value::Null());
  env.Set("True", Value::Bool(true));
  env.Set("False", Value::Bool(false));
  env.Set("None", Value::Null());
  env.Set("raise_exception", Value::Func([](std::vector<Value> args, Env&) -> absl::StatusOr<Value> {
    return Error(absl::StrCat("raise_exception: ", args.empty() ? "" : ToString(args[0])));
  }));
  env.Set("range", Value::Func([](std::vector<Value> args, Env&) -> absl::StatusOr<Value> {
    for (const Value& a : args) if (!a.is_number()) return Error("range(): arguments must be numbers");
    double start = 0, stop = 0, step = 1;
    if (args.size() == 1) stop = args[0].num;
    if (args.size() >= 2) { start = args[0].num; stop = args[1].num; }
    if (args.size() >= 3) step = args[2].num;
    if (args.empty() || args.size() > 3) return Error("range() takes 1 to 3 arguments");
    if (step == 0) return Error("range() step must not be zero");
    Array out;
    for (double i = start; step > 0 ? i < stop : i > stop; i += step) out.push_back(Value::Int(i));
    return Value::List(std::move(out));
  }));
  env.Set("strftime_now", Value::Func([](std::vector<Value> args, Env&) -> absl::StatusOr<Value> {
    if (args.empty() || args[0].kind != Value::kString) return Error("strftime_now() takes a format string");
    return Value::String(Strftime(args[0].str));
  }));
  env.Set("namespace", Value::Func([](std::vector<Value> args, Env&) -> absl::StatusOr<Value> {
    Object entries;
    Value kwargs;
    if (!args.empty() && args.back().kind == Value::kKwargs) { kwargs = args.back(); args.pop_back(); }
    if (args.size() > 1) return Error("namespace() takes at most 1 positional argument");
    if (args.size() == 1) {
      if (args[0].is_dict()) {
        for (const auto& [k, v] : args[0].object->entries) entries.Set(k, v);
      } else if (args[0].is_array()) {
        for (const Value& pair : *args[0].array) {
          if (!pair.is_array() || pair.array->size() != 2 || (*pair.array)[0].kind != Value::kString) {
            return Error("namespace() expects a dict or (key, value) pairs");
          }
          entries.Set((*pair.array)[0].str, (*pair.array)[1]);
        }
      } else {
        return Error(absl::StrCat("namespace(): '", TypeName(args[0]), "' object is not iterable"));
      }
    }
    if (kwargs.object) for (const auto& [k, v] : kwargs.object->entries) entries.Set(k, v);
    return Value::Dict(std::move(entries), Value::kNamespace);
  }));
}

Value BuiltinAttribute(const Value& object, std::string_view name) {
  if (object.kind == Value::kString) return StringAttribute(object.str, name);
  if (object.is_array() && name == "length") {
    return Value::Int(static_cast<double>(object.array->size()));
  }
  if (object.is_dict()) return DictAttribute(object, name);
  return Value();
}

absl::StatusOr<bool> RunTest(std::string_view name, const Value& v, const Value* arg) {
  using K = Value::Kind;
  if (name == "boolean") return v.kind == K::kBool;
  if (name == "callable") return v.kind == K::kFunction;
  if (name == "odd" || name == "even") {
    if (v.kind != K::kInt) return Error(absl::StrCat("cannot ", std::string(name), " on ", TypeName(v)));
    const bool odd = std::fmod(v.num, 2) != 0;
    return name == "odd" ? odd : !odd;
  }
  if (name == "false") return v.kind == K::kBool && !v.boolean;
  if (name == "true") return v.kind == K::kBool && v.boolean;
  if (name == "none") return v.kind == K::kNull;
  if (name == "string") return v.kind == K::kString;
  if (name == "number") return v.is_number();
  if (name == "integer") return v.kind == K::kInt;
  if (name == "iterable") return v.kind == K::kArray || v.kind == K::kString;
  if (name == "mapping") return v.is_dict();
  if (name == "sequence") return v.is_array() || v.is_dict() || v.kind == K::kString;
  if (name == "lower") return v.kind == K::kString && v.str == CaseMap(v.str, false);
  if (name == "upper") return v.kind == K::kString && v.str == CaseMap(v.str, true);
  if (name == "defined") return v.kind != K::kUndefined;
  if (name == "undefined") return v.kind == K::kUndefined;
  if (name == "equalto" || name == "eq") {
    const Value other = arg != nullptr ? *arg : Value();
    return StrictEquals(v, other);
  }
  return Error(absl::StrCat("unsupported test '", std::string(name), "'"));
}

}  // namespace accel::text::jinja
