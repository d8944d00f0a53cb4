// The job file's one YAML walker, driven by the settings table (settings.h): every mapping is
// walked against the table's keys under its path, every scalar read as its row's type, and an
// unknown key gets one did-you-mean (engine/config/did_you_mean.h) wherever it is.
//
// Errors are InvalidArgument "SOURCE:LINE:COLUMN: KEY: what" ("job.yaml:3:10: train.steps: must
// be an integer, got 'many'"). Under Echo::kPositionsOnly (access.echo) no value or unknown
// key's name of the file is quoted.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

#include "absl/status/status.h"
#include "accel/v1/job.pb.h"
#include "rpc/file_access.h"

namespace accel::job {

struct YamlSource {
  std::string source;    // the file's name in messages
  std::string base_dir;  // relative paths (kPath rows) resolve against it
  rpc::FileAccess access;
  bool quote() const { return access.echo == Echo::kContent; }
};

// Reads `root` (the whole job file) into `spec`, over the values it holds (the defaults).
// yaml-cpp may throw YAML::Exception on a malformed node; the caller catches it.
[[nodiscard]] absl::Status ReadJobSettings(const YamlSource& c, const YAML::Node& root,
                                           accel::v1::JobSpec& spec);

}  // namespace accel::job
