// The settings table's reflection (a row's JobSpec field), its defaults and its checks. The rows
// are settings_table.cc and settings_table_run.cc.
#include "job/settings.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "engine/base/status_macros.h"

namespace accel::job {
namespace {

using accel::v1::JobSpec;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;

std::vector<std::string> FieldPath(const Setting& s) {
  return absl::StrSplit(s.field.empty() ? s.key : s.field, '.');
}

absl::Status Invalid(absl::string_view key, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(key, ": ", what));
}

// "a, b or c"
std::string JoinOr(const std::vector<absl::string_view>& names) {
  if (names.size() < 2) return absl::StrJoin(names, "");
  return absl::StrCat(absl::StrJoin(names.begin(), names.end() - 1, ", "), " or ", names.back());
}

// Set: an optional field (proto3 `optional`) only when given; every other field always is.
bool IsSet(const Setting& s, const JobSpec& spec) {
  const FieldDescriptor* f = SettingField(s);
  return !f->has_presence() || SettingParent(s, spec).GetReflection()->HasField(
                                   SettingParent(s, spec), f);
}

int64_t GetInt(const Setting& s, const JobSpec& spec) {
  const Message& m = SettingParent(s, spec);
  const FieldDescriptor* f = SettingField(s);
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32: return m.GetReflection()->GetInt32(m, f);
    case FieldDescriptor::CPPTYPE_UINT64:
      return static_cast<int64_t>(m.GetReflection()->GetUInt64(m, f));
    default: return m.GetReflection()->GetInt64(m, f);
  }
}

double GetReal(const Setting& s, const JobSpec& spec) {
  const Message& m = SettingParent(s, spec);
  return m.GetReflection()->GetDouble(m, SettingField(s));
}

bool IntRangeOk(const Setting& s, int64_t v, std::string* error) {
  if (static_cast<double>(v) < s.min) {
    *error = absl::StrCat("must be an integer >= ", static_cast<int64_t>(s.min), ", got ", v);
    return false;
  }
  if (static_cast<double>(v) > s.max) {
    *error = absl::StrCat("must be at most ", static_cast<int64_t>(s.max), s.max_note, ", got ", v);
    return false;
  }
  return true;
}

bool RealRangeOk(const Setting& s, double v) {
  const bool above = s.min_exclusive ? v > s.min : v >= s.min;
  const bool below = s.max_exclusive ? v < s.max : v <= s.max;
  return above && below;
}

}  // namespace

const FieldDescriptor* SettingField(const Setting& s) {
  const google::protobuf::Descriptor* d = JobSpec::descriptor();
  const FieldDescriptor* f = nullptr;
  for (const std::string& part : FieldPath(s)) {
    if (f != nullptr) d = f->message_type();
    if (d == nullptr) return nullptr;
    f = d->FindFieldByName(part);
    if (f == nullptr) return nullptr;
  }
  return f;
}

Message* MutableSettingParent(const Setting& s, JobSpec& spec) {
  const std::vector<std::string> parts = FieldPath(s);
  Message* m = &spec;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    m = m->GetReflection()->MutableMessage(m, m->GetDescriptor()->FindFieldByName(parts[i]));
  }
  return m;
}

const Message& SettingParent(const Setting& s, const JobSpec& spec) {
  const std::vector<std::string> parts = FieldPath(s);
  const Message* m = &spec;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    m = &m->GetReflection()->GetMessage(*m, m->GetDescriptor()->FindFieldByName(parts[i]));
  }
  return *m;
}

std::pair<int64_t, int64_t> SettingIntBounds(const Setting& s) {
  if (SettingField(s)->cpp_type() == FieldDescriptor::CPPTYPE_INT32) return {INT32_MIN, INT32_MAX};
  return {INT64_MIN, INT64_MAX};
}

void SetSettingInt(const Setting& s, int64_t v, JobSpec& spec) {
  Message* m = MutableSettingParent(s, spec);
  const FieldDescriptor* f = SettingField(s);
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      m->GetReflection()->SetInt32(m, f, static_cast<int32_t>(v));
      break;
    case FieldDescriptor::CPPTYPE_UINT64:  // a seed: as the job file's int64, bit for bit
      m->GetReflection()->SetUInt64(m, f, static_cast<uint64_t>(v));
      break;
    default: m->GetReflection()->SetInt64(m, f, v);
  }
}

void SetSettingReal(const Setting& s, double v, JobSpec& spec) {
  Message* m = MutableSettingParent(s, spec);
  m->GetReflection()->SetDouble(m, SettingField(s), v);
}

void SetSettingBool(const Setting& s, bool v, JobSpec& spec) {
  Message* m = MutableSettingParent(s, spec);
  m->GetReflection()->SetBool(m, SettingField(s), v);
}

void SetSettingText(const Setting& s, const std::string& v, JobSpec& spec) {
  Message* m = MutableSettingParent(s, spec);
  m->GetReflection()->SetString(m, SettingField(s), v);
}

void AddSettingEntry(const Setting& s, const std::string& key, const std::string& value,
                     JobSpec& spec) {
  Message* m = MutableSettingParent(s, spec);
  const FieldDescriptor* f = SettingField(s);
  Message* entry = m->GetReflection()->AddMessage(m, f);
  entry->GetReflection()->SetString(entry, f->message_type()->map_key(), key);
  entry->GetReflection()->SetString(entry, f->message_type()->map_value(), value);
}

void AddSettingWeightedPath(const Setting& s, const std::string& path, double weight,
                            JobSpec& spec) {
  Message* m = MutableSettingParent(s, spec);
  Message* entry = m->GetReflection()->AddMessage(m, SettingField(s));
  const google::protobuf::Descriptor* d = entry->GetDescriptor();
  entry->GetReflection()->SetString(entry, d->FindFieldByName("path"), path);
  entry->GetReflection()->SetDouble(entry, d->FindFieldByName("weight"), weight);
}

absl::Status SetSettingFromText(const Setting& s, absl::string_view text, JobSpec& spec) {
  switch (s.type) {
    case SettingType::kInt: {
      int64_t v;
      const auto [lo, hi] = SettingIntBounds(s);
      if (!absl::SimpleAtoi(text, &v) || v < lo || v > hi) {
        return Invalid(s.key, absl::StrCat("must be an integer, got '", text, "'"));
      }
      SetSettingInt(s, v, spec);
      return absl::OkStatus();
    }
    case SettingType::kReal: {
      double v;
      if (!absl::SimpleAtod(text, &v) || !std::isfinite(v)) {
        return Invalid(s.key, absl::StrCat("must be a finite number, got '", text, "'"));
      }
      SetSettingReal(s, v, spec);
      return absl::OkStatus();
    }
    case SettingType::kBool:
      if (text != "true" && text != "false") {
        return Invalid(s.key, absl::StrCat("must be true or false, got '", text, "'"));
      }
      SetSettingBool(s, text == "true", spec);
      return absl::OkStatus();
    case SettingType::kText:
    case SettingType::kPath:
    case SettingType::kEnum:
      SetSettingText(s, std::string(text), spec);
      return absl::OkStatus();
    case SettingType::kSettings:
    case SettingType::kWeightedPaths:
    case SettingType::kSection: break;
  }
  return Invalid(s.key, "has no scalar value");
}

JobSpec DefaultJobSpec() {
  JobSpec spec;
  for (const Setting& s : JobSettings()) {
    if (s.default_value.empty()) continue;
    // The table's defaults are checked by settings_test.cc; a bad one cannot pass it.
    JobSpec one;
    (void)SetSettingFromText(s, s.default_value, one);
    // A default that is the proto's own zero sets nothing, so a section with only such
    // defaults (checkpoint) stays absent, as it always was.
    const Message& parent = SettingParent(s, one);
    if (!parent.GetReflection()->HasField(parent, SettingField(s))) continue;
    spec.MergeFrom(one);
  }
  return spec;
}

void AddSettingSections(JobSpec& spec) {
  for (const Setting& s : JobSettings()) (void)MutableSettingParent(s, spec);
}

absl::Status CheckSettings(const JobSpec& spec, Echo echo) {
  const std::span<const Setting> rows = JobSettings();
  for (const Setting& s : rows) {
    if (s.type != SettingType::kInt || !IsSet(s, spec)) continue;
    if (std::string error; !IntRangeOk(s, GetInt(s, spec), &error)) return Invalid(s.key, error);
  }
  // A spec from any client: every real is finite (an infinite lr or timeout trains nothing or
  // waits forever), then within its range.
  for (const Setting& s : rows) {
    if (s.type != SettingType::kReal) continue;
    if (const double v = GetReal(s, spec); !std::isfinite(v)) {
      return Invalid(s.key, absl::StrCat("must be a finite number, got ", v));
    }
  }
  for (const Setting& s : rows) {
    if (s.type != SettingType::kReal || s.range_error.empty()) continue;
    if (const double v = GetReal(s, spec); !RealRangeOk(s, v)) {
      return Invalid(s.key, absl::StrReplaceAll(s.range_error, {{"{got}", absl::StrCat(v)}}));
    }
  }
  // A spec from any client: every weighted path names a file and weighs more than nothing.
  for (const Setting& s : rows) {
    if (s.type != SettingType::kWeightedPaths) continue;
    const Message& m = SettingParent(s, spec);
    const FieldDescriptor* f = SettingField(s);
    for (int i = 0; i < m.GetReflection()->FieldSize(m, f); ++i) {
      const Message& e = m.GetReflection()->GetRepeatedMessage(m, f, i);
      const std::string path =
          e.GetReflection()->GetString(e, e.GetDescriptor()->FindFieldByName("path"));
      const double weight =
          e.GetReflection()->GetDouble(e, e.GetDescriptor()->FindFieldByName("weight"));
      const std::string name = echo == Echo::kContent ? path : absl::StrCat("entry ", i + 1);
      if (path.empty()) return Invalid(s.key, absl::StrCat("entry ", i + 1, " has no path"));
      if (!std::isfinite(weight) || weight <= 0) {
        return Invalid(s.key, absl::StrCat(name, ": the weight must be a positive number, got ",
                                           weight));
      }
    }
  }
  for (const Setting& s : rows) {
    if (s.type != SettingType::kEnum) continue;
    const Message& m = SettingParent(s, spec);
    const std::string text = m.GetReflection()->GetString(m, SettingField(s));
    if (text.empty() && s.default_value.empty()) continue;  // an optional enum left out
    if (std::find(s.names.begin(), s.names.end(), text) == s.names.end()) {
      return Invalid(s.key, absl::StrCat("must be ", JoinOr(s.names),
                                         echo == Echo::kContent
                                             ? absl::StrCat(", got '", text, "'")
                                             : ""));
    }
  }
  return absl::OkStatus();
}

}  // namespace accel::job
