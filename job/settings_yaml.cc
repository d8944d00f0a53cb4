#include "job/settings_yaml.h"

#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "engine/base/status_macros.h"
#include "engine/config/did_you_mean.h"
#include "job/settings.h"

namespace accel::job {
namespace {

namespace fs = std::filesystem;
using accel::v1::JobSpec;

std::string Where(const YamlSource& c, const YAML::Node& n) {
  const YAML::Mark m = n.Mark();
  if (m.line < 0) return c.source;
  return absl::StrCat(c.source, ":", m.line + 1, ":", m.column + 1);
}

absl::Status Bad(const YamlSource& c, const YAML::Node& n, const std::string& path,
                 const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(Where(c, n), ": ", path, ": ", what));
}

// ", got <what n is>": the value itself only when the file's content may be quoted.
std::string Got(const YamlSource& c, const YAML::Node& n) {
  if (n.IsScalar()) return c.quote() ? absl::StrCat(", got '", n.Scalar(), "'") : "";
  if (n.IsMap()) return ", got a mapping";
  if (n.IsSequence()) return ", got a list";
  return ", got nothing";
}

std::string Join(const std::string& prefix, const std::string& key) {
  return prefix.empty() ? key : absl::StrCat(prefix, ".", key);
}

// The names a mapping at `prefix` may hold: the table's keys one level below it (a section is
// a name some key continues under), or a kSettings row's keys. Sorted, as "known keys" lists
// them.
std::vector<std::string> KnownKeys(const std::string& prefix, const Setting* settings_row) {
  std::set<std::string> names;
  if (settings_row != nullptr) {
    for (absl::string_view n : settings_row->names) names.emplace(std::string(n));
  } else {
    const std::string lead = prefix.empty() ? "" : absl::StrCat(prefix, ".");
    for (const Setting& s : JobSettings()) {
      if (!absl::StartsWith(s.key, lead)) continue;
      const absl::string_view rest = s.key.substr(lead.size());
      names.emplace(std::string(rest.substr(0, rest.find('.'))));
    }
  }
  return {names.begin(), names.end()};
}

absl::Status ReadValue(const YamlSource& c, const Setting& row, const YAML::Node& n,
                       const std::string& path, JobSpec& spec);

// A path as the job file gives it, made absolute against the file's folder.
std::string Resolved(const YamlSource& c, const std::string& path) {
  if (fs::path(path).is_absolute()) return path;
  return (fs::path(c.base_dir) / path).lexically_normal().string();
}

// `{a.jsonl: 3, "web/*.jsonl": 1}`: paths relative to the job file, each a positive weight, kept
// in the file's order (the mixture's draw depends on it).
absl::Status ReadWeightedPaths(const YamlSource& c, const Setting& row, const YAML::Node& n,
                               const std::string& path, JobSpec& spec) {
  if (!n.IsMap()) {
    return Bad(c, n, path, absl::StrCat("must be a mapping of paths to weights", Got(c, n)));
  }
  std::map<std::string, int> first_line;
  for (auto it = n.begin(); it != n.end(); ++it) {
    if (!it->first.IsScalar() || it->first.Scalar().empty()) {
      return Bad(c, it->first, path, "each key must be a path");
    }
    const std::string file = it->first.Scalar();
    const std::string where = c.quote() ? absl::StrCat(path, ".", file) : path;
    const auto [seen, inserted] = first_line.emplace(file, it->first.Mark().line + 1);
    if (!inserted) {
      return Bad(c, it->first, where,
                 absl::StrCat("duplicate path (first given on line ", seen->second, ")"));
    }
    double weight;
    if (!it->second.IsScalar() || !YAML::convert<double>::decode(it->second, weight) ||
        !std::isfinite(weight) || weight <= 0) {
      return Bad(c, it->second, where,
                 absl::StrCat("must be a positive weight", Got(c, it->second)));
    }
    AddSettingWeightedPath(row, Resolved(c, file), weight, spec);
  }
  return absl::OkStatus();
}

// Walks a mapping: every key must be a known one. `settings_row`: the mapping is that kSettings
// row's (a launcher's settings, each a text); else the table's section at `prefix`.
absl::Status Walk(const YamlSource& c, const YAML::Node& node, const std::string& prefix,
                  const Setting* settings_row, JobSpec& spec) {
  const std::string where = prefix.empty() ? "the job file" : prefix;
  if (node.IsNull()) return absl::OkStatus();
  if (!node.IsMap()) return Bad(c, node, where, absl::StrCat("must be a mapping", Got(c, node)));
  const std::vector<std::string> known = KnownKeys(prefix, settings_row);
  // yaml-cpp keeps every pair of a mapping that repeats a key, and node[key] would see only the
  // first: a second value must be an error, not silently ignored.
  std::map<std::string, int> first_line;
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string key = it->first.as<std::string>();
    const std::string path = Join(prefix, key);
    const auto [seen, inserted] = first_line.emplace(key, it->first.Mark().line + 1);
    if (!inserted) {
      return Bad(c, it->first, path,
                 absl::StrCat("duplicate key (first given on line ", seen->second, ")"));
    }
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      // The key is the file's, not ours: its position only (an unknown key ends the walk
      // before a repeat of it could be reported as a duplicate).
      if (!c.quote()) return Bad(c, it->first, where, "unknown key (docs/job.md lists the keys)");
      const std::string best =
          config::ClosestName(key, std::vector<std::string_view>(known.begin(), known.end()));
      return Bad(c, it->first, path,
                 best.empty() ? absl::StrCat("unknown key; known keys: ", absl::StrJoin(known, ", "))
                              : absl::StrCat("unknown key (did you mean ", Join(prefix, best), "?)"));
    }
    if (settings_row != nullptr) {
      if (!it->second.IsScalar()) {
        return Bad(c, it->second, path, absl::StrCat("must be text", Got(c, it->second)));
      }
      AddSettingEntry(*settings_row, key, it->second.Scalar(), spec);
      continue;
    }
    const Setting* row = FindSetting(path);
    if (row == nullptr || row->type == SettingType::kSection) {
      // `model: gpt2-mini` is short for `model: {preset: gpt2-mini}`.
      // Read as the short key's row reads it (a path row's relative path resolved).
      if (row != nullptr && it->second.IsScalar()) {
        const std::string short_path = Join(path, std::string(row->short_key));
        ACCEL_RETURN_IF_ERROR(ReadValue(c, *FindSetting(short_path), it->second, short_path, spec));
        continue;
      }
      ACCEL_RETURN_IF_ERROR(Walk(c, it->second, path, nullptr, spec));
      continue;
    }
    ACCEL_RETURN_IF_ERROR(ReadValue(c, *row, it->second, path, spec));
  }
  return absl::OkStatus();
}

absl::Status ReadValue(const YamlSource& c, const Setting& row, const YAML::Node& n,
                       const std::string& path, JobSpec& spec) {
  switch (row.type) {
    case SettingType::kInt: {
      int64_t v;
      if (!n.IsScalar() || !YAML::convert<int64_t>::decode(n, v)) {
        return Bad(c, n, path, absl::StrCat("must be an integer", Got(c, n)));
      }
      // An int32 field: a value outside int32 is an error, never truncated.
      const auto [min, max] = SettingIntBounds(row);
      if (v < min || v > max) {
        return Bad(c, n, path,
                   absl::StrCat("must be an integer from ", min, " to ", max, Got(c, n)));
      }
      SetSettingInt(row, v, spec);
      return absl::OkStatus();
    }
    case SettingType::kReal: {
      double v;
      if (!n.IsScalar() || !YAML::convert<double>::decode(n, v)) {
        return Bad(c, n, path, absl::StrCat("must be a number", Got(c, n)));
      }
      if (!std::isfinite(v)) {
        return Bad(c, n, path, absl::StrCat("must be a finite number", Got(c, n)));
      }
      SetSettingReal(row, v, spec);
      return absl::OkStatus();
    }
    case SettingType::kBool: {
      bool v;
      if (!n.IsScalar() || !YAML::convert<bool>::decode(n, v)) {
        return Bad(c, n, path, absl::StrCat("must be true or false", Got(c, n)));
      }
      SetSettingBool(row, v, spec);
      return absl::OkStatus();
    }
    case SettingType::kText:
    case SettingType::kEnum:
    case SettingType::kPath: {
      if (!n.IsScalar()) return Bad(c, n, path, absl::StrCat("must be text", Got(c, n)));
      std::string v = n.Scalar();
      if (row.type == SettingType::kPath && !v.empty()) v = Resolved(c, v);
      SetSettingText(row, v, spec);
      return absl::OkStatus();
    }
    case SettingType::kSettings: return Walk(c, n, path, &row, spec);
    case SettingType::kWeightedPaths: return ReadWeightedPaths(c, row, n, path, spec);
    case SettingType::kSection: break;  // Walk handles sections
  }
  return Walk(c, n, path, nullptr, spec);
}

}  // namespace

absl::Status ReadJobSettings(const YamlSource& c, const YAML::Node& root, JobSpec& spec) {
  AddSettingSections(spec);
  return Walk(c, root, "", nullptr, spec);
}

}  // namespace accel::job
