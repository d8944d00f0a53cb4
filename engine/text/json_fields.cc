#include "engine/text/json_fields.h"

#include "absl/strings/str_cat.h"
#include "engine/text/regex.h"

namespace accel::text {

JsonPath JsonPath::Key(std::string_view key) const {
  return {file, path.empty() ? std::string(key) : absl::StrCat(path, ".", std::string(key))};
}

JsonPath JsonPath::Index(size_t i) const { return {file, absl::StrCat(path, "[", i, "]")}; }

std::string JsonPath::Name() const { return path.empty() ? file : absl::StrCat(file, ": ", path); }

absl::Status JsonError(const JsonPath& at, std::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(at.Name(), " ", std::string(what)));
}

absl::Status Unsupported(const JsonPath& at, std::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat(at.Name(), " ", std::string(what), " is not supported"));
}

namespace {

absl::StatusOr<const Json*> Field(const Json& obj, const JsonPath& at, std::string_view key) {
  if (!obj.is_object()) return JsonError(at, "must be an object");
  const auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return JsonError(at.Key(key), "is missing");
  return &*it;
}

}  // namespace

bool IsNullOrAbsent(const Json& obj, std::string_view key) {
  if (!obj.is_object()) return true;
  const auto it = obj.find(key);
  return it == obj.end() || it->is_null();
}

absl::StatusOr<std::string> GetString(const Json& obj, const JsonPath& at, std::string_view key) {
  auto field = Field(obj, at, key);
  if (!field.ok()) return field.status();
  if (!(*field)->is_string()) return JsonError(at.Key(key), "must be a string");
  return (*field)->get_ref<const std::string&>();
}

absl::StatusOr<const Json*> GetObject(const Json& obj, const JsonPath& at, std::string_view key) {
  auto field = Field(obj, at, key);
  if (!field.ok()) return field.status();
  if (!(*field)->is_object()) return JsonError(at.Key(key), "must be an object");
  return *field;
}

absl::StatusOr<const Json*> GetArray(const Json& obj, const JsonPath& at, std::string_view key) {
  auto field = Field(obj, at, key);
  if (!field.ok()) return field.status();
  if (!(*field)->is_array()) return JsonError(at.Key(key), "must be an array");
  return *field;
}

absl::StatusOr<int64_t> GetInt(const Json& obj, const JsonPath& at, std::string_view key) {
  auto field = Field(obj, at, key);
  if (!field.ok()) return field.status();
  if (!(*field)->is_number_integer()) return JsonError(at.Key(key), "must be an integer");
  return (*field)->get<int64_t>();
}

absl::StatusOr<bool> GetBool(const Json& obj, const JsonPath& at, std::string_view key,
                             bool fallback) {
  if (IsNullOrAbsent(obj, key)) return fallback;
  const Json& v = obj.find(key).value();
  if (!v.is_boolean()) return JsonError(at.Key(key), "must be true or false");
  return v.get<bool>();
}

absl::StatusOr<std::optional<std::string>> GetOptionalString(const Json& obj, const JsonPath& at,
                                                             std::string_view key) {
  if (IsNullOrAbsent(obj, key)) return std::optional<std::string>();
  const Json& v = obj.find(key).value();
  if (!v.is_string()) return JsonError(at.Key(key), "must be a string");
  return std::optional<std::string>(v.get<std::string>());
}

absl::StatusOr<std::string> GetPattern(const Json& obj, const JsonPath& at) {
  auto pattern = GetObject(obj, at, "pattern");
  if (!pattern.ok()) return pattern.status();
  const JsonPath p = at.Key("pattern");
  if ((*pattern)->contains("String")) {
    auto s = GetString(**pattern, p, "String");
    if (!s.ok()) return s.status();
    if (s->empty()) return JsonError(p.Key("String"), "must not be empty");
    return Regex::Escape(*s);
  }
  if ((*pattern)->contains("Regex")) return GetString(**pattern, p, "Regex");
  return JsonError(p, "must be {\"String\": ...} or {\"Regex\": ...}");
}

}  // namespace accel::text
