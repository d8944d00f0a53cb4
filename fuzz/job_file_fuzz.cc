// Fuzz target: the YAML job file (job/job_file.h ParseJobYaml) and the validation acceld applies
// to the spec it becomes (ValidateJobSpec).
// Properties: an error is InvalidArgument (nothing thrown by yaml-cpp escapes); a parsed spec
// has data.path; a spec that validates survives the wire and acceld's JSON store unchanged and
// lowers to a Status (job_spec_checks.h). Relative paths resolve under a folder that does not
// exist, so the files a job names are missing unless given as absolute paths.
#include <string>

#include "fuzz/fuzz_check.h"
#include "fuzz/job_spec_checks.h"
#include "job/job_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace accel::fuzz;
  const std::string text(AsText(data, size));
  auto spec = accel::job::ParseJobYaml(text, "job.yaml", "/nonexistent-fuzz-dir");
  if (!spec.ok()) {
    CheckError(spec.status(), {absl::StatusCode::kInvalidArgument}, "");
    return 0;
  }
  FUZZ_CHECK(!spec->data().path().empty(), "a parsed spec without data.path");
  absl::Status valid = accel::job::ValidateJobSpec(*spec, /*check_files=*/false);
  if (!valid.ok()) {
    CheckError(valid, {absl::StatusCode::kInvalidArgument}, "");
    return 0;
  }
  CheckAcceptedSpec(*spec);
  return 0;
}
