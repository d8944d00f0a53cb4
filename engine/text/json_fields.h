// Typed reads of tokenizer.json / tokenizer_config.json fields that never throw: each failure is
// InvalidArgument naming the file and the key path ("tokenizer.json: model.vocab must be an
// object"). Every reader of those files goes through these, so nlohmann's exceptions stay out
// of the tokenizer's code paths.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace accel::text {

using Json = nlohmann::json;

// Where a value sits: the file and the key path, used in every message.
struct JsonPath {
  std::string file;  // "tokenizer.json"
  std::string path;  // "pre_tokenizer.pretokenizers[1]"
  JsonPath Key(std::string_view key) const;
  JsonPath Index(size_t i) const;
  std::string Name() const;  // "tokenizer.json: pre_tokenizer.pretokenizers[1]"
};

absl::Status JsonError(const JsonPath& at, std::string_view what);
// The one-line refusal of a component or option this tokenizer does not implement:
// Unsupported({"tokenizer.json", "pre_tokenizer"}, "type \"Whitespace\"") reads
// `tokenizer.json: pre_tokenizer type "Whitespace" is not supported`.
absl::Status Unsupported(const JsonPath& at, std::string_view what);

// Required fields.
[[nodiscard]] absl::StatusOr<std::string> GetString(const Json& obj, const JsonPath& at,
                                                    std::string_view key);
[[nodiscard]] absl::StatusOr<const Json*> GetObject(const Json& obj, const JsonPath& at,
                                                    std::string_view key);
[[nodiscard]] absl::StatusOr<const Json*> GetArray(const Json& obj, const JsonPath& at,
                                                   std::string_view key);
[[nodiscard]] absl::StatusOr<int64_t> GetInt(const Json& obj, const JsonPath& at,
                                             std::string_view key);
// Optional fields: absent or null gives the default.
[[nodiscard]] absl::StatusOr<bool> GetBool(const Json& obj, const JsonPath& at,
                                           std::string_view key, bool fallback);
[[nodiscard]] absl::StatusOr<std::optional<std::string>> GetOptionalString(const Json& obj,
                                                                           const JsonPath& at,
                                                                           std::string_view key);
// True when the key is absent or null.
bool IsNullOrAbsent(const Json& obj, std::string_view key);

// The parts of a Sequence component (its "normalizers", "pretokenizers", "decoders" or
// "processors"): each item read by `parse(item, path)` into a std::unique_ptr<T>, none null.
template <typename T, typename Parse>
[[nodiscard]] absl::StatusOr<std::vector<std::unique_ptr<T>>> GetParts(const Json& obj,
                                                                       const JsonPath& at,
                                                                       std::string_view key,
                                                                       Parse parse) {
  absl::StatusOr<const Json*> list = GetArray(obj, at, key);
  if (!list.ok()) return list.status();
  std::vector<std::unique_ptr<T>> parts;
  for (size_t i = 0; i < (*list)->size(); ++i) {
    const JsonPath item = at.Key(key).Index(i);
    absl::StatusOr<std::unique_ptr<T>> part = parse((**list)[i], item);
    if (!part.ok()) return part.status();
    if (*part == nullptr) return JsonError(item, "must not be null");
    parts.push_back(std::move(*part));
  }
  return parts;
}

// A {"String": "..."} or {"Regex": "..."} pattern (Replace, Split) as a regex pattern.
[[nodiscard]] absl::StatusOr<std::string> GetPattern(const Json& obj, const JsonPath& at);

}  // namespace accel::text
