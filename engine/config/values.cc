#include "engine/config/values.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "absl/strings/match.h"

namespace accel::config {
namespace {

using nlohmann::json;

char Lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

bool IsAutoValue(const json& v) { return v.is_string() && v.get_ref<const std::string&>() == "auto"; }

// Parses the whole of s as a number (strtod syntax, no trailing text).
bool ParseDouble(const std::string& s, double* out) {
  if (s.empty() || s.size() > 64) return false;
  const char* begin = s.c_str();
  char* end = nullptr;
  const double d = std::strtod(begin, &end);
  if (end == begin || *end != '\0') return false;
  *out = d;
  return true;
}

}  // namespace

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (Lower(a[i]) != Lower(b[i])) return false;
  }
  return true;
}

std::string JoinNames(const std::vector<std::string_view>& names, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out.append(sep);
    out.append(names[i]);
  }
  return out;
}

std::optional<bool> StrToBool(std::string_view s) {
  for (std::string_view t : {"y", "yes", "t", "true", "on", "1"}) {
    if (EqualsIgnoreCase(s, t)) return true;
  }
  for (std::string_view f : {"n", "no", "f", "false", "off", "0"}) {
    if (EqualsIgnoreCase(s, f)) return false;
  }
  return std::nullopt;
}

bool ParseBoolValue(const json& v, bool* out, std::string* error) {
  if (v.is_boolean()) {
    *out = v.get<bool>();
    return true;
  }
  if (v.is_number_integer() && (v.get<int64_t>() == 0 || v.get<int64_t>() == 1)) {
    *out = v.get<int64_t>() == 1;
    return true;
  }
  if (v.is_string()) {
    if (auto b = StrToBool(v.get_ref<const std::string&>())) {
      *out = *b;
      return true;
    }
  }
  *error = absl::StrCat(Quote(v), " is not a boolean (invalid truth value; use true or false)");
  return false;
}

bool ParseNumberValue(const json& v, double* out, std::string* error) {
  if (v.is_number()) {
    *out = v.get<double>();
    return true;
  }
  if (v.is_string() && ParseDouble(v.get_ref<const std::string&>(), out) && std::isfinite(*out)) {
    return true;
  }
  *error = absl::StrCat(Quote(v), " is not a number");
  return false;
}

bool ParseIntValue(const json& v, int64_t* out, std::string* error) {
  if (v.is_number_integer()) {
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
      *error = absl::StrCat(Quote(v), " is too large");
      return false;
    }
    *out = v.get<int64_t>();
    return true;
  }
  double d = 0;
  std::string ignored;
  if ((v.is_number_float() || v.is_string()) && ParseNumberValue(v, &d, &ignored)) {
    // 1e9 in JSON is a float; DeepSpeed accepts it where it wants an integer.
    if (std::floor(d) == d && std::fabs(d) < 9.0e18) {
      *out = static_cast<int64_t>(d);
      return true;
    }
  }
  *error = absl::StrCat(Quote(v), " is not an integer");
  return false;
}

std::string Reader::Show(const json& v) const {
  if (doc_.echo == Echo::kContent) return Quote(v);
  if (v.is_string()) return "a string";
  if (v.is_boolean()) return "a boolean";
  if (v.is_number()) return "a number";
  if (v.is_array()) return "a list";
  if (v.is_object()) return "a mapping";
  return "null";
}

std::string Reader::Hint(std::string_view name, const std::vector<std::string_view>& known) const {
  return doc_.echo == Echo::kContent ? DidYouMean(name, known) : "";
}

void Reader::UnknownKey(const KeyPath& key_path, const std::string& hint) {
  if (doc_.echo == Echo::kContent) {
    Error(key_path, absl::StrCat("unknown key", hint));
    return;
  }
  const KeyPath parent(key_path.begin(), key_path.end() - 1);
  diag_->Error(doc_, doc_.MarkOf(key_path), parent, "unknown key");
}

std::string Reader::Restated(const json& v, const std::string& error) const {
  if (doc_.echo == Echo::kContent) return error;
  const std::string quoted = Quote(v);
  return absl::StartsWith(error, quoted) ? Show(v) + error.substr(quoted.size()) : "bad value";
}

const json* Reader::Find(const KeyPath& path) const {
  const json* node = &doc_.root;
  for (const std::string& key : path) {
    if (!node->is_object()) return nullptr;
    auto it = node->find(key);
    if (it == node->end()) return nullptr;
    node = &*it;
  }
  return node->is_null() ? nullptr : node;
}

bool Reader::IsAuto(const KeyPath& path) const {
  const json* v = Find(path);
  return v != nullptr && IsAutoValue(*v);
}

bool Reader::RejectAuto(const KeyPath& path, const json& v) {
  if (!IsAutoValue(v)) return false;
  Error(path, "\"auto\" cannot be filled here: no setting of Accelerate, the environment or the "
              "job provides this key; give a value");
  return true;
}

std::optional<bool> Reader::Bool(const KeyPath& path) {
  const json* v = Find(path);
  if (v == nullptr || RejectAuto(path, *v)) return std::nullopt;
  bool out = false;
  std::string error;
  if (!ParseBoolValue(*v, &out, &error)) {
    Error(path, Restated(*v, error));
    return std::nullopt;
  }
  return out;
}

std::optional<int64_t> Reader::Int(const KeyPath& path, int64_t min, int64_t max) {
  const json* v = Find(path);
  if (v == nullptr || RejectAuto(path, *v)) return std::nullopt;
  int64_t out = 0;
  std::string error;
  if (!ParseIntValue(*v, &out, &error)) {
    Error(path, Restated(*v, error));
    return std::nullopt;
  }
  if (out < min || out > max) {
    Error(path, absl::StrCat(doc_.echo == Echo::kContent ? absl::StrCat(out) : "a number",
                             " is out of range [", min, ", ", max, "]"));
    return std::nullopt;
  }
  return out;
}

std::optional<double> Reader::Number(const KeyPath& path, double min, double max) {
  const json* v = Find(path);
  if (v == nullptr || RejectAuto(path, *v)) return std::nullopt;
  double out = 0;
  std::string error;
  if (!ParseNumberValue(*v, &out, &error)) {
    Error(path, Restated(*v, error));
    return std::nullopt;
  }
  if (!(out >= min && out <= max)) {
    Error(path, absl::StrCat(doc_.echo == Echo::kContent ? absl::StrCat(out) : "a number",
                             " is out of range [", min, ", ", max, "]"));
    return std::nullopt;
  }
  return out;
}

std::optional<std::string> Reader::String(const KeyPath& path) {
  const json* v = Find(path);
  if (v == nullptr || RejectAuto(path, *v)) return std::nullopt;
  if (v->is_string()) return v->get<std::string>();
  if (v->is_number() || v->is_boolean()) return v->dump();  // main_process_ip: 1234
  Error(path, absl::StrCat(Show(*v), " is not a string"));
  return std::nullopt;
}

const json* Reader::Object(const KeyPath& path) {
  const json* v = Find(path);
  if (v == nullptr) return nullptr;
  if (!v->is_object()) {
    Error(path, absl::StrCat("expected a mapping of keys, got ", Show(*v)));
    return nullptr;
  }
  return v;
}

void Reader::CheckKeys(const KeyPath& path, const std::vector<std::string_view>& known) {
  const json* obj = path.empty() ? &doc_.root : Find(path);
  if (obj == nullptr || !obj->is_object()) return;
  for (const auto& [key, value] : obj->items()) {
    bool found = false;
    for (std::string_view k : known) found = found || k == key;
    if (found) continue;
    KeyPath key_path = path;
    key_path.push_back(key);
    UnknownKey(key_path, Hint(key, known));
  }
}

void Reader::CheckKeysLenient(const KeyPath& path, const std::vector<std::string_view>& known,
                              std::string_view why) {
  const json* obj = path.empty() ? &doc_.root : Find(path);
  if (obj == nullptr || !obj->is_object()) return;
  for (const auto& [key, value] : obj->items()) {
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    KeyPath key_path = path;
    key_path.push_back(key);
    if (!ClosestName(key, known).empty()) {
      UnknownKey(key_path, Hint(key, known));
      continue;
    }
    const std::string message = absl::StrCat("unknown key; ignored (", std::string(why), ")");
    if (doc_.echo == Echo::kContent) {
      Warn(key_path, message);
    } else {  // the key's name is the document's: its position only
      diag_->Warn(doc_, doc_.MarkOf(key_path), path, message);
    }
  }
}

const std::vector<EnumName<Strategy>>& FsdpStrategyNames() {
  static const auto* names = new std::vector<EnumName<Strategy>>{
      {"FULL_SHARD", Strategy::kFullShard},
      {"SHARD_GRAD_OP", Strategy::kShardGradOp},
      {"NO_SHARD", Strategy::kNoShard},
      {"HYBRID_SHARD", Strategy::kHybridShard},
      {"HYBRID_SHARD_ZERO2", Strategy::kHybridShardZero2},
      {"_HYBRID_SHARD_ZERO2", Strategy::kHybridShardZero2, false},
      {"1", Strategy::kFullShard, false},
      {"2", Strategy::kShardGradOp, false},
      {"3", Strategy::kNoShard, false},
      {"4", Strategy::kHybridShard, false},
      {"5", Strategy::kHybridShardZero2, false},
  };
  return *names;
}

const std::vector<EnumName<WrapPolicy>>& WrapPolicyNames() {
  static const auto* names = new std::vector<EnumName<WrapPolicy>>{
      {"TRANSFORMER_BASED_WRAP", WrapPolicy::kTransformerBased},
      {"SIZE_BASED_WRAP", WrapPolicy::kSizeBased},
      {"NO_WRAP", WrapPolicy::kNoWrap},
  };
  return *names;
}

const std::vector<EnumName<BackwardPrefetch>>& BackwardPrefetchNames() {
  static const auto* names = new std::vector<EnumName<BackwardPrefetch>>{
      {"BACKWARD_PRE", BackwardPrefetch::kBackwardPre},
      {"BACKWARD_POST", BackwardPrefetch::kBackwardPost},
      {"NO_PREFETCH", BackwardPrefetch::kNone},
      {"1", BackwardPrefetch::kBackwardPre, false},
      {"2", BackwardPrefetch::kBackwardPost, false},
  };
  return *names;
}

const std::vector<EnumName<StateDictType>>& StateDictTypeNames() {
  static const auto* names = new std::vector<EnumName<StateDictType>>{
      {"FULL_STATE_DICT", StateDictType::kFull},
      {"LOCAL_STATE_DICT", StateDictType::kLocal},
      {"SHARDED_STATE_DICT", StateDictType::kSharded},
      {"1", StateDictType::kFull, false},
      {"2", StateDictType::kLocal, false},
      {"3", StateDictType::kSharded, false},
  };
  return *names;
}

const std::vector<EnumName<OffloadDevice>>& OffloadDeviceNames() {
  static const auto* names = new std::vector<EnumName<OffloadDevice>>{
      {"none", OffloadDevice::kNone},
      {"cpu", OffloadDevice::kCpu},
      {"nvme", OffloadDevice::kNvme},
  };
  return *names;
}

const std::vector<EnumName<FloatType>>& FloatTypeNames() {
  static const auto* names = new std::vector<EnumName<FloatType>>{
      {"fp32", FloatType::kFp32},
      {"fp16", FloatType::kFp16},
      {"bf16", FloatType::kBf16},
      {"float32", FloatType::kFp32, false},
      {"float16", FloatType::kFp16, false},
      {"bfloat16", FloatType::kBf16, false},
  };
  return *names;
}

}  // namespace accel::config
