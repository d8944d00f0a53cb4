// The job file (YAML; docs/job.md lists every key) -> accel.v1.JobSpec, and the checks acceld
// repeats at submit. The keys, their types, defaults and ranges are the settings table's
// (job/settings.h); defaults are filled in here, so a JobSpec that reaches acceld is complete.
//
// Errors are InvalidArgument and name the file, line:column and key path
// ("job.yaml:4:10: train.steps: must be an integer >= 1, got 0"); an unknown key suggests the
// closest known one. A missing file is NotFound. Relative paths resolve against the job file's
// folder and are stored absolute.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "accel/v1/job.pb.h"
#include "engine/base/echo.h"
#include "job/settings.h"  // DefaultJobSpec
#include "rpc/file_access.h"

namespace accel::job {

using rpc::FileAccess;  // rpc/file_access.h: what acceld may open for a client

// Reads and parses `path`; `accelerate_config` (accelctl submit --config) and
// `deepspeed_config` (--deepspeed-config) override the job file's keys of those names. The
// configs' texts travel inside the spec; a DeepSpeed JSON that only the Accelerate config names
// (deepspeed_config.deepspeed_config_file) is read too, beside the YAML first.
// `access` (file_access.h): acceld passes its --data-root roots, checked before each file is
// opened, and Echo::kPositionsOnly, under which no error quotes a file's content: a value, an
// unknown key's name or a YAML parser's excerpt (positions and our words only).
[[nodiscard]] absl::StatusOr<accel::v1::JobSpec> ParseJobFile(
    const std::string& path, const std::string& accelerate_config = "",
    const std::string& deepspeed_config = "", const FileAccess& access = {});
// `text` as the job file named `source`, whose relative paths resolve against `base_dir`.
[[nodiscard]] absl::StatusOr<accel::v1::JobSpec> ParseJobYaml(const std::string& text,
                                                              const std::string& source,
                                                              const std::string& base_dir,
                                                              const FileAccess& access = {});

// Range and enum checks of a complete spec (what acceld runs at submit, so a spec sent by any
// client is held to the job file's rules). InvalidArgument naming the key path. With
// check_files, the files named by the spec must exist (NotFound is reported as
// InvalidArgument naming the key).
// Also: the spec at most 1 MiB serialized, `name` at most 256 bytes of UTF-8 without control
// characters.
// init_weights may be a safetensors file, an index, or a directory holding
// model.safetensors.index.json or model.safetensors (as the loader reads it); every file the
// loader would open (each shard an index names) must be a readable regular file. Under
// Echo::kPositionsOnly (a spec acceld read from a job file) no text value of the spec is quoted.
[[nodiscard]] absl::Status ValidateJobSpec(const accel::v1::JobSpec& spec, bool check_files,
                                           Echo echo = Echo::kContent);

// The shortest heartbeat deadline a job (heartbeat_timeout_s, 0 = acceld's) or acceld
// (--heartbeat-timeout) may set: ranks report every 2 s (acceld's heartbeat interval), so a
// deadline under two intervals fails healthy ranks on one late report.
inline constexpr double kMinHeartbeatTimeoutS = 4;

// A job id a client names (GetJob, CancelJob, WatchJob, ...): non-empty, at most
// kMaxJobIdBytes. InvalidArgument naming job_id.
inline constexpr size_t kMaxJobIdBytes = 128;
[[nodiscard]] absl::Status ValidateJobId(const std::string& id);

// proto3 JSON of a spec with the field names of the job file (snake_case), and back.
std::string JobSpecToJson(const accel::v1::JobSpec& spec);
[[nodiscard]] absl::StatusOr<accel::v1::JobSpec> JobSpecFromJson(const std::string& json);

}  // namespace accel::job
