// What a chat template can call without defining it, with @huggingface/jinja's behaviour:
// filters (|trim, |tojson(indent=2), ...), tests (is defined, is string, ...), the methods of
// strings and dicts (.strip(), .split(), .get(), .items(), ...) and the globals (namespace(),
// range(), raise_exception(), strftime_now(), true/false/none). Note HF's own choices we keep:
// .strip()/.lstrip()/.rstrip() ignore their argument and remove all white space; |length counts
// UTF-16 code units; tests take no argument except through selectattr/rejectattr.
#pragma once

#include <string_view>
#include <vector>

#include <map>
#include <string>
#include "absl/status/statusor.h"
#include "engine/text/jinja_value.h"

namespace accel::text::jinja {

// A scope of variables; lookups walk to the parent. Templates see HF's scoping: a for loop has
// one scope for all its iterations, an if has none, a macro call gets a child of its caller's.
class Env {
 public:
  explicit Env(Env* parent = nullptr) : parent_(parent) {}
  Value Lookup(std::string_view name) const;
  void Set(std::string_view name, Value v) { vars_[std::string(name)] = std::move(v); }

 private:
  Env* parent_;
  std::map<std::string, Value, std::less<>> vars_;
};

// true/false/none (and their capitalised forms), namespace, range, raise_exception, strftime_now.
void InstallGlobals(Env& env);

// The builtin attribute `name` of `object` (a string's methods and .length, a list's .length,
// a dict's get/items/keys/values/dictsort), or undefined.
Value BuiltinAttribute(const Value& object, std::string_view name);

// Applies filter `name`. `called` says whether it was written with parentheses (HF treats
// "|join" and "|join()" apart); `args` are the positional arguments and `kwargs` the keyword
// ones. An unknown filter, or one that does not apply to the operand's type, is an error
// naming both.
[[nodiscard]] absl::StatusOr<Value> ApplyFilter(const Value& operand, std::string_view name,
                                                bool called, const std::vector<Value>& args,
                                                const Object& kwargs, Env& env);

// Runs test `name` ("defined", "string", "equalto" with `arg`, ...). NotFound-free: an unknown
// test is InvalidArgument "unsupported test 'x'".
[[nodiscard]] absl::StatusOr<bool> RunTest(std::string_view name, const Value& operand,
                                           const Value* arg = nullptr);

}  // namespace accel::text::jinja
