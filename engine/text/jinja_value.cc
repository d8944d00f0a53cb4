#include "engine/text/jinja_value.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/text/jinja_lexer.h"

namespace accel::text::jinja {
namespace {

// Decodes the code point at `i` of UTF-8 `s` and advances `i` (an invalid byte is taken alone).
uint32_t NextCodePoint(std::string_view s, size_t& i) {
  const auto c = static_cast<unsigned char>(s[i]);
  const int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
  if (n == 1 || i + n > s.size()) { ++i; return c; }
  uint32_t cp = c & (0x7F >> n);
  for (int k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  i += n;
  return cp;
}

void AppendHex4(std::string& out, uint32_t unit) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += "\\u";
  for (int shift = 12; shift >= 0; shift -= 4) out.push_back(kHex[(unit >> shift) & 0xF]);
}

// JSON.stringify of a string, then makeAsciiSafe when asked.
std::string QuoteJson(std::string_view s, bool ensure_ascii) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80 || (ensure_ascii && c == 0x7F)) {
      const size_t begin = i;
      const uint32_t cp = NextCodePoint(s, i);
      if (!ensure_ascii) { out.append(s.substr(begin, i - begin)); continue; }
      if (cp > 0xFFFF) {
        AppendHex4(out, 0xD800 + ((cp - 0x10000) >> 10));
        AppendHex4(out, 0xDC00 + ((cp - 0x10000) & 0x3FF));
      } else {
        AppendHex4(out, cp);
      }
      continue;
    }
    ++i;
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) AppendHex4(out, c); else out.push_back(static_cast<char>(c));
    }
  }
  out += "\"";
  return out;
}

template <typename J>
Value FromJsonT(const J& j) {
  switch (j.type()) {
    case J::value_t::null: return Value::Null();
    case J::value_t::boolean: return Value::Bool(j.template get<bool>());
    case J::value_t::number_integer:
    case J::value_t::number_unsigned: return Value::Int(j.template get<double>());
    case J::value_t::number_float: {
      const double d = j.template get<double>();
      return std::isfinite(d) && d == std::floor(d) ? Value::Int(d) : Value::Float(d);
    }
    case J::value_t::string: return Value::String(j.template get<std::string>());
    case J::value_t::array: {
      Array items;
      for (const auto& e : j) items.push_back(FromJsonT(e));
      return Value::List(std::move(items));
    }
    case J::value_t::object: {
      Object o;
      for (const auto& [k, v] : j.items()) o.entries.emplace_back(k, FromJsonT(v));
      return Value::Dict(std::move(o));
    }
    default: return Value();
  }
}

}  // namespace

const Value* Object::Find(std::string_view key) const {
  for (const auto& [k, v] : entries) if (k == key) return &v;
  return nullptr;
}

void Object::Set(std::string key, Value v) {
  for (auto& [k, old] : entries) {
    if (k == key) { old = std::move(v); return; }
  }
  entries.emplace_back(std::move(key), std::move(v));
}

Value Value::List(Array items, Kind kind) {
  Value v;
  v.kind = kind;
  v.array = std::make_shared<Array>(std::move(items));
  return v;
}
Value Value::Dict(Object o, Kind kind) {
  Value v;
  v.kind = kind;
  v.object = std::make_shared<Object>(std::move(o));
  return v;
}
Value Value::Func(Function f) {
  Value v;
  v.kind = kFunction;
  v.function = std::make_shared<Function>(std::move(f));
  return v;
}

const char* TypeName(const Value& v) {
  static constexpr const char* kNames[] = {
      "UndefinedValue", "NullValue", "BooleanValue", "IntegerValue", "FloatValue", "StringValue",
      "ArrayValue", "TupleValue", "ObjectValue", "KeywordArgumentsValue", "NamespaceValue",
      "FunctionValue"};
  return kNames[v.kind];
}

bool Truthy(const Value& v) {
  switch (v.kind) {
    case Value::kUndefined: case Value::kNull: return false;
    case Value::kBool: return v.boolean;
    case Value::kInt: case Value::kFloat: return v.num != 0 && !std::isnan(v.num);
    case Value::kString: return !v.str.empty();
    case Value::kArray: case Value::kTuple: return !v.array->empty();
    case Value::kObject: case Value::kKwargs: return !v.object->entries.empty();
    default: return true;
  }
}

std::string NumberToString(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
  if (d == 0) return "0";
  std::string sign = d < 0 ? "-" : "";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, std::fabs(d), std::chars_format::scientific);
  const std::string sci(buf, r.ptr);  // d.ddde[+-]xx
  const size_t e = sci.find('e');
  std::string digits = sci.substr(0, 1) + (e > 2 ? sci.substr(2, e - 2) : "");
  const int n = std::atoi(sci.c_str() + e + 1) + 1;  // position of the decimal point
  const int k = static_cast<int>(digits.size());
  if (k <= n && n <= 21) return sign + digits + std::string(n - k, '0');
  if (0 < n && n <= 21) return sign + digits.substr(0, n) + "." + digits.substr(n);
  if (-6 < n && n <= 0) return sign + "0." + std::string(-n, '0') + digits;
  return absl::StrCat(sign, digits.substr(0, 1), k > 1 ? "." + digits.substr(1) : "", "e",
                      n - 1 >= 0 ? "+" : "-", std::abs(n - 1));
}

std::string ToString(const Value& v) {
  switch (v.kind) {
    case Value::kUndefined: return "undefined";
    case Value::kNull: return "null";
    case Value::kBool: return v.boolean ? "true" : "false";
    case Value::kInt: return NumberToString(v.num);
    case Value::kFloat:
      if (v.num == 0 && std::signbit(v.num)) return "-0.0";
      return std::isfinite(v.num) && v.num == std::floor(v.num)
                 ? absl::StrCat(NumberToString(v.num), ".0")
                 : NumberToString(v.num);
    case Value::kString: return v.str;
    case Value::kFunction: return "[function]";
    default: {
      auto s = ToJson(v, JsonOptions{}, 0, /*undefined_as_null=*/false);
      return s.ok() ? *s : "";
    }
  }
}

absl::StatusOr<std::string> ToJson(const Value& v, const JsonOptions& o, int depth,
                                   bool undefined_as_null) {
  const std::string item_sep = o.has_separators ? o.item_separator : o.indent ? "," : ", ";
  const std::string key_sep = o.has_separators ? o.key_separator : ": ";
  switch (v.kind) {
    case Value::kNull: return std::string("null");
    case Value::kUndefined: return std::string(undefined_as_null ? "null" : "undefined");
    case Value::kInt: case Value::kFloat:
      return std::isfinite(v.num) ? NumberToString(v.num) : std::string("null");
    case Value::kBool: return std::string(v.boolean ? "true" : "false");
    case Value::kString: return QuoteJson(v.str, o.ensure_ascii);
    case Value::kArray: case Value::kTuple: case Value::kObject: case Value::kKwargs:
    case Value::kNamespace: {
      const std::string indent(o.indent, ' ');
      std::string base = "\n";
      for (int i = 0; i < depth; ++i) base += indent;
      const std::string child = base + indent;
      std::vector<std::string> core;
      if (v.is_array()) {
        for (const Value& e : *v.array) {
          ACCEL_ASSIGN_OR_RETURN(std::string s, ToJson(e, o, depth + 1, undefined_as_null));
          core.push_back(std::move(s));
        }
        if (o.indent && !core.empty()) {
          std::string out = "[" + child;
          for (size_t i = 0; i < core.size(); ++i) out += (i ? item_sep + child : "") + core[i];
          return out + base + "]";
        }
      } else {
        auto entries = v.object->entries;
        if (o.sort_keys) {
          std::stable_sort(entries.begin(), entries.end(),
                           [](const auto& a, const auto& b) { return a.first < b.first; });
        }
        for (const auto& [key, value] : entries) {
          ACCEL_ASSIGN_OR_RETURN(std::string s, ToJson(value, o, depth + 1, undefined_as_null));
          core.push_back((o.indent ? child : "") + QuoteJson(key, o.ensure_ascii) + key_sep + s);
        }
        if (o.indent && !core.empty()) {
          std::string out = "{";
          for (size_t i = 0; i < core.size(); ++i) out += (i ? item_sep : "") + core[i];
          return out + base + "}";
        }
      }
      std::string out = v.is_array() ? "[" : "{";
      for (size_t i = 0; i < core.size(); ++i) out += (i ? item_sep : "") + core[i];
      return out + (v.is_array() ? "]" : "}");
    }
    default:
      return absl::InvalidArgumentError(absl::StrCat("cannot convert to JSON: ", TypeName(v)));
  }
}

namespace {
// JavaScript's ToNumber of a string: blank is 0, otherwise the whole trimmed text or NaN.
double JsNumber(const std::string& s) {
  const std::string t(TrimEnd(TrimStart(s)));
  if (t.empty()) return 0;
  char* end = nullptr;
  const double d = std::strtod(t.c_str(), &end);
  return end == t.c_str() + t.size() ? d : std::nan("");
}
}  // namespace

bool LooseEquals(const Value& a, const Value& b) {
  if (a.is_missing() || b.is_missing()) return a.is_missing() && b.is_missing();
  auto primitive = [](const Value& v) {
    return v.kind == Value::kBool || v.is_number() || v.kind == Value::kString;
  };
  if (primitive(a) && primitive(b)) {
    if (a.kind == Value::kString && b.kind == Value::kString) return a.str == b.str;
    auto num = [](const Value& v) {
      return v.kind == Value::kBool ? (v.boolean ? 1.0 : 0.0)
             : v.kind == Value::kString ? JsNumber(v.str) : v.num;
    };
    return num(a) == num(b);
  }
  return StrictEquals(a, b);
}

bool StrictEquals(const Value& a, const Value& b) {
  if (a.is_missing() || b.is_missing()) return a.is_missing() && b.is_missing();
  if (a.is_number() && b.is_number()) return a.num == b.num;
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case Value::kBool: return a.boolean == b.boolean;
    case Value::kString: return a.str == b.str;
    case Value::kArray: case Value::kTuple: return a.array == b.array;
    case Value::kFunction: return a.function == b.function;
    default: return a.object == b.object;
  }
}

Value FromJson(const nlohmann::json& j) { return FromJsonT(j); }
Value FromJson(const nlohmann::ordered_json& j) { return FromJsonT(j); }

size_t Utf16Length(std::string_view s) {
  size_t n = 0;
  for (size_t i = 0; i < s.size();) n += NextCodePoint(s, i) > 0xFFFF ? 2 : 1;
  return n;
}

std::vector<std::string> CodePoints(std::string_view s) {
  std::vector<std::string> out;
  for (size_t i = 0; i < s.size();) {
    const size_t begin = i;
    NextCodePoint(s, i);
    out.emplace_back(s.substr(begin, i - begin));
  }
  return out;
}

}  // namespace accel::text::jinja
