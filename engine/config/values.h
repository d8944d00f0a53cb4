// Reader: typed values out of a Document (YAML, JSON or the environment), with every problem
// reported to Diagnostics under the key's path. Also the Accelerate vocabularies (strategy names
// and integer codes, state-dict types, ...) shared by the YAML, JSON and environment readers.
//
// Value rules follow Accelerate, a little more forgiving where Accelerate would crash later:
//   bool    true/false, or a string str_to_bool accepts (y yes t true on 1 / n no f false off 0,
//           any case), or the integers 0/1
//   integer an integer, an integral float (1e8 in JSON), or a string holding either
//   number  a number or a numeric string
//   enum    a name, case-insensitive, or an integer code where Accelerate has one
// The string "auto" where no source can fill it is an error that says so.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/config/did_you_mean.h"
#include "engine/config/diagnostics.h"
#include "engine/config/train_plan.h"

namespace accel::config {

template <typename E>
struct EnumName {
  std::string_view name;
  E value;
  bool listed = true;  // false for aliases (integer codes, legacy spellings) left out of messages
};

class Reader {
 public:
  Reader(const Document& doc, Diagnostics* diag) : doc_(doc), diag_(diag) {}

  const Document& doc() const { return doc_; }
  // The value at path; nullptr when a key on the way is absent or the value is null.
  const nlohmann::json* Find(const KeyPath& path) const;
  bool Has(const KeyPath& path) const { return Find(path) != nullptr; }
  bool IsAuto(const KeyPath& path) const;

  // Each returns nullopt when the key is absent/null, or after reporting a bad value.
  std::optional<bool> Bool(const KeyPath& path);
  std::optional<int64_t> Int(const KeyPath& path, int64_t min = INT64_MIN,
                             int64_t max = INT64_MAX);
  std::optional<double> Number(const KeyPath& path, double min = -1e308, double max = 1e308);
  std::optional<std::string> String(const KeyPath& path);
  template <typename E>
  std::optional<E> Enum(const KeyPath& path, const std::vector<EnumName<E>>& names);

  // The object at path: nullptr (with an error) when it is present but not a mapping.
  const nlohmann::json* Object(const KeyPath& path);
  // Reports each key of the object at `path` missing from `known`, with "did you mean".
  void CheckKeys(const KeyPath& path, const std::vector<std::string_view>& known);
  // The same for a section DeepSpeed reads leniently (it never looks at keys it does not know):
  // a near-miss of a known key (ClosestName) stays an error with "did you mean", since the
  // setting meant is then silently not applied; any other key is a warning naming it,
  // "unknown key; ignored (<why>)".
  void CheckKeysLenient(const KeyPath& path, const std::vector<std::string_view>& known,
                        std::string_view why);

  // `v` as a message shows it: Quote(v), or only its kind ("a string") when the document is a
  // file acceld read for a client (Document::echo; engine/base/echo.h).
  std::string Show(const nlohmann::json& v) const;
  // DidYouMean(name, known) for a name taken from the document; "" when it may not be quoted
  // (the hint would tell how close the hidden name is to one of ours).
  std::string Hint(std::string_view name, const std::vector<std::string_view>& known) const;
  // An unknown key: "PATH.KEY: unknown key<hint>", or, when the document may not be quoted,
  // "PATH: unknown key" at the key's own line and column.
  void UnknownKey(const KeyPath& key_path, const std::string& hint);

  void Error(const KeyPath& path, std::string_view message) { diag_->Error(doc_, path, message); }
  void Warn(const KeyPath& path, std::string_view message) { diag_->Warn(doc_, path, message); }
  Diagnostics* diagnostics() const { return diag_; }

 private:
  // `error` from a Parse*Value on v (which starts with Quote(v)) with v shown as Show(v).
  std::string Restated(const nlohmann::json& v, const std::string& error) const;
  // Reports `"auto"` in a place nothing fills; true when it did.
  bool RejectAuto(const KeyPath& path, const nlohmann::json& v);

  const Document& doc_;
  Diagnostics* diag_;
};

// std::string_view helpers (this Abseil's absl::string_view is a distinct type).
bool EqualsIgnoreCase(std::string_view a, std::string_view b);
std::string JoinNames(const std::vector<std::string_view>& names, std::string_view sep = ", ");

// Parsers on a bare value; the message (without path) on failure.
std::optional<bool> StrToBool(std::string_view s);
bool ParseBoolValue(const nlohmann::json& v, bool* out, std::string* error);
bool ParseIntValue(const nlohmann::json& v, int64_t* out, std::string* error);
bool ParseNumberValue(const nlohmann::json& v, double* out, std::string* error);

template <typename E>
std::optional<E> Reader::Enum(const KeyPath& path, const std::vector<EnumName<E>>& names) {
  const nlohmann::json* v = Find(path);
  if (v == nullptr || RejectAuto(path, *v)) return std::nullopt;
  std::string text;
  if (v->is_string()) {
    text = v->get<std::string>();
  } else if (v->is_number_integer()) {
    text = std::to_string(v->get<int64_t>());
  } else {
    text = Quote(*v);  // arrays and objects: never matches a name
  }
  std::vector<std::string_view> listed;
  for (const EnumName<E>& n : names) {
    if (EqualsIgnoreCase(n.name, text)) return n.value;
    if (n.listed) listed.push_back(n.name);
  }
  Error(path, absl::StrCat(Show(*v), " is not one of ", JoinNames(listed), Hint(text, listed)));
  return std::nullopt;
}

// Accelerate's vocabularies.
const std::vector<EnumName<Strategy>>& FsdpStrategyNames();  // FULL_SHARD=1 ... HYBRID_SHARD_ZERO2=5
const std::vector<EnumName<WrapPolicy>>& WrapPolicyNames();
const std::vector<EnumName<BackwardPrefetch>>& BackwardPrefetchNames();  // NO_PREFETCH = none
const std::vector<EnumName<StateDictType>>& StateDictTypeNames();  // FULL=1 LOCAL=2 SHARDED=3
const std::vector<EnumName<OffloadDevice>>& OffloadDeviceNames();  // none, cpu, nvme
const std::vector<EnumName<FloatType>>& FloatTypeNames();  // fp32, fp16, bf16 (+ DeepSpeed aliases)

}  // namespace accel::config
