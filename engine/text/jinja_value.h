// The values a chat template computes with, with the semantics of @huggingface/jinja's
// src/runtime.ts (JavaScript's underneath): numbers are doubles (an "integer" is one written or
// computed without a fraction), strings are UTF-8, lists and dicts are shared by reference (a
// namespace's attribute set is seen by every holder), dicts keep insertion order, "undefined"
// is distinct from none. Rendering a value ({{ x }}) and |tojson follow HF byte for byte.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace accel::text::jinja {

class Env;
struct Value;
using Array = std::vector<Value>;
struct Object {
  std::vector<std::pair<std::string, Value>> entries;  // insertion order
  const Value* Find(std::string_view key) const;
  void Set(std::string key, Value v);
};
// Positional arguments; keyword arguments arrive as a trailing kKwargs value, as in HF.
using Function = std::function<absl::StatusOr<Value>(std::vector<Value> args, Env& env)>;

struct Value {
  enum Kind { kUndefined, kNull, kBool, kInt, kFloat, kString, kArray, kTuple, kObject, kKwargs,
              kNamespace, kFunction };
  Kind kind = kUndefined;
  bool boolean = false;
  double num = 0;
  std::string str;
  std::shared_ptr<Array> array;       // kArray, kTuple
  std::shared_ptr<Object> object;     // kObject, kKwargs, kNamespace
  std::shared_ptr<Function> function; // kFunction

  static Value Null() { Value v; v.kind = kNull; return v; }
  static Value Bool(bool b) { Value v; v.kind = kBool; v.boolean = b; return v; }
  static Value Int(double n) { Value v; v.kind = kInt; v.num = n; return v; }
  static Value Float(double n) { Value v; v.kind = kFloat; v.num = n; return v; }
  static Value String(std::string s) { Value v; v.kind = kString; v.str = std::move(s); return v; }
  static Value List(Array items, Kind kind = kArray);
  static Value Dict(Object o, Kind kind = kObject);
  static Value Func(Function f);

  bool is_array() const { return kind == kArray || kind == kTuple; }
  bool is_dict() const { return kind == kObject || kind == kKwargs; }
  bool is_number() const { return kind == kInt || kind == kFloat; }
  bool is_missing() const { return kind == kUndefined || kind == kNull; }
};

// The type names HF's errors use ("StringValue", "ArrayValue", ...).
const char* TypeName(const Value& v);
// Python truthiness as HF implements it: empty strings, 0, empty lists and dicts are false.
bool Truthy(const Value& v);
// What {{ v }} prints (none and undefined print nothing; callers skip them).
std::string ToString(const Value& v);
// JavaScript's String(number): integers without a fraction, others shortest round-trip.
std::string NumberToString(double d);

struct JsonOptions {
  int indent = 0;  // 0: one line, ", " and ": " separators
  bool ensure_ascii = false;
  bool sort_keys = false;
  bool has_separators = false;
  std::string item_separator, key_separator;
};
// HF's toJSON (|tojson and the printing of lists and dicts); `undefined_as_null` false prints
// "undefined" as HF does for lists printed with {{ }}.
absl::StatusOr<std::string> ToJson(const Value& v, const JsonOptions& options, int depth = 0,
                                   bool undefined_as_null = true);

// JavaScript's `a == b` on the values' payloads (HF's "==" and "!="): strings against numbers
// compare as numbers, none equals undefined, lists and dicts only equal themselves.
bool LooseEquals(const Value& a, const Value& b);
// `a === b` on payloads (membership with "in", |unique).
bool StrictEquals(const Value& a, const Value& b);

// A JSON document (the messages, tokens and flags a template receives) as values. JSON numbers
// that are whole become integers, as JavaScript's Number.isInteger decides.
Value FromJson(const nlohmann::json& j);
Value FromJson(const nlohmann::ordered_json& j);

// The number of UTF-16 code units of a UTF-8 string (JavaScript's length).
size_t Utf16Length(std::string_view s);
// The code points of a UTF-8 string, one string each (Array.from(str)).
std::vector<std::string> CodePoints(std::string_view s);

}  // namespace accel::text::jinja
