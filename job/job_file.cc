#include "job/job_file.h"

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "job/settings_yaml.h"

namespace accel::job {
namespace {

namespace fs = std::filesystem;
using accel::v1::JobSpec;

// A job's files travel inside its spec, which acceld caps at 1 MiB.
constexpr uintmax_t kMaxJobFileBytes = 1 << 20;

// Only a regular file is read: a FIFO would block accelctl forever and /dev/zero would fill
// its memory (both were accepted as accelerate_config).
absl::StatusOr<std::string> ReadText(const std::string& path) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  if (!fs::is_regular_file(st)) {
    return absl::InvalidArgumentError(absl::StrCat("cannot read ", path, ": not a regular file"));
  }
  const uintmax_t size = fs::file_size(path, ec);
  if (!ec && size > kMaxJobFileBytes) {
    return absl::InvalidArgumentError(absl::StrCat("cannot read ", path, ": ", size,
                                                   " bytes; a job's files are at most ",
                                                   kMaxJobFileBytes));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

absl::Status Invalid(const std::string& path, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", what));
}

// An Accelerate config that names its DeepSpeed JSON (deepspeed_config.deepspeed_config_file)
// while the spec carries none: read it here, where the file is (beside the YAML first, then as
// given, as `accelerate launch` does), so acceld and the workers get its text. A YAML that does
// not parse is left to acceld's resolver, which names the problem.
absl::Status AttachNamedDeepSpeedJson(JobSpec& spec, const FileAccess& access) {
  if (!spec.deepspeed_config_text().empty() || spec.accelerate_config_text().empty()) {
    return absl::OkStatus();
  }
  std::string named;
  try {
    const YAML::Node root = YAML::Load(spec.accelerate_config_text());
    const YAML::Node ds = root.IsMap() ? root["deepspeed_config"] : YAML::Node();
    const YAML::Node file = ds.IsMap() ? ds["deepspeed_config_file"] : YAML::Node();
    if (file.IsScalar()) named = file.Scalar();
  } catch (const YAML::Exception&) {
    return absl::OkStatus();
  }
  if (named.empty() || named == "none") return absl::OkStatus();
  fs::path path(named);
  if (path.is_relative()) {
    const fs::path beside = fs::path(spec.accelerate_config_path()).parent_path() / path;
    path = fs::exists(beside) ? beside : fs::absolute(path);
  }
  ACCEL_RETURN_IF_ERROR(access.Check("accelerate_config: deepspeed_config.deepspeed_config_file",
                                     path.lexically_normal().string()));
  absl::StatusOr<std::string> text = ReadText(path.lexically_normal().string());
  if (!text.ok()) {
    return Invalid("accelerate_config", absl::StrCat("deepspeed_config.deepspeed_config_file: ",
                                                     text.status().message()));
  }
  spec.set_deepspeed_config_path(path.lexically_normal().string());
  spec.set_deepspeed_config_text(*text);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<JobSpec> ParseJobYaml(const std::string& text, const std::string& source,
                                     const std::string& base_dir, const FileAccess& access) {
  const YamlSource c{source, base_dir, access};
  JobSpec spec = DefaultJobSpec();
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    // yaml-cpp's message can carry a character of the text ("unknown escape character: x").
    return absl::InvalidArgumentError(absl::StrCat(source, ":", e.mark.line + 1, ":",
                                                   e.mark.column + 1, ": malformed YAML",
                                                   c.quote() ? absl::StrCat(": ", e.msg) : ""));
  }
  try {
    ACCEL_RETURN_IF_ERROR(ReadJobSettings(c, root, spec));
  } catch (const YAML::Exception& e) {
    if (!c.quote()) return absl::InvalidArgumentError(absl::StrCat(source, ": unreadable YAML"));
    return absl::InvalidArgumentError(absl::StrCat(source, ": ", e.what()));
  }
  if (!spec.accelerate_config_path().empty()) {
    ACCEL_RETURN_IF_ERROR(access.Check("accelerate_config", spec.accelerate_config_path()));
    absl::StatusOr<std::string> cfg = ReadText(spec.accelerate_config_path());
    if (!cfg.ok()) {
      return Invalid("accelerate_config", std::string(cfg.status().message()));
    }
    spec.set_accelerate_config_text(*cfg);
  }
  if (!spec.deepspeed_config_path().empty()) {
    ACCEL_RETURN_IF_ERROR(access.Check("deepspeed_config", spec.deepspeed_config_path()));
    absl::StatusOr<std::string> cfg = ReadText(spec.deepspeed_config_path());
    if (!cfg.ok()) {
      return Invalid("deepspeed_config", std::string(cfg.status().message()));
    }
    spec.set_deepspeed_config_text(*cfg);
  }
  if (spec.data().path().empty() && spec.data().mix().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": data.path: required (an llm.c "
                                                   "token shard or a text file)"));
  }
  return spec;
}

absl::StatusOr<JobSpec> ParseJobFile(const std::string& path, const std::string& accelerate_config,
                                     const std::string& deepspeed_config,
                                     const FileAccess& access) {
  ACCEL_RETURN_IF_ERROR(access.Check("job_file", path));
  ACCEL_ASSIGN_OR_RETURN(std::string text, ReadText(path));
  const std::string base = fs::absolute(fs::path(path)).parent_path().string();
  ACCEL_ASSIGN_OR_RETURN(JobSpec spec, ParseJobYaml(text, path, base, access));
  if (!accelerate_config.empty()) {
    const std::string abs = fs::absolute(fs::path(accelerate_config)).lexically_normal().string();
    ACCEL_RETURN_IF_ERROR(access.Check("accelerate_config", abs));
    absl::StatusOr<std::string> cfg = ReadText(abs);
    if (!cfg.ok()) return Invalid("--config", std::string(cfg.status().message()));
    spec.set_accelerate_config_path(abs);
    spec.set_accelerate_config_text(*cfg);
  }
  if (!deepspeed_config.empty()) {
    const std::string abs = fs::absolute(fs::path(deepspeed_config)).lexically_normal().string();
    ACCEL_RETURN_IF_ERROR(access.Check("deepspeed_config", abs));
    absl::StatusOr<std::string> cfg = ReadText(abs);
    if (!cfg.ok()) return Invalid("--deepspeed-config", std::string(cfg.status().message()));
    spec.set_deepspeed_config_path(abs);
    spec.set_deepspeed_config_text(*cfg);
  }
  ACCEL_RETURN_IF_ERROR(AttachNamedDeepSpeedJson(spec, access));
  return spec;
}

}  // namespace accel::job
