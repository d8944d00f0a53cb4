#include "worker/checkpoint_owner.h"

#include <cstdio>
#include <optional>
#include <random>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"

namespace accel::worker {

namespace {
constexpr char kStandalone[] = "standalone";
}  // namespace

checkpoint::CheckpointOwner DaemonCheckpointOwner(const std::string& job_id,
                                                  const std::string& state_id) {
  return {job_id, state_id.empty() ? "acceld" : absl::StrCat("acceld:", state_id)};
}

absl::StatusOr<checkpoint::CheckpointOwner> StandaloneCheckpointOwner(
    Env* env, const std::string& checkpoint_dir, const std::string& resume_dir,
    const std::string& run_id) {
  checkpoint::CheckpointOwner fresh{kStandalone, absl::StrCat(kStandalone, ":", run_id)};
  if (checkpoint_dir.empty() || resume_dir.empty() ||
      checkpoint::NormalDirName(checkpoint_dir) != checkpoint::NormalDirName(resume_dir)) {
    return fresh;
  }
  ACCEL_ASSIGN_OR_RETURN(std::optional<checkpoint::CheckpointOwner> have,
                         checkpoint::ReadOwner(env, checkpoint_dir));
  if (have.has_value() && have->job == kStandalone &&
      absl::StartsWith(have->daemon, absl::StrCat(kStandalone, ":"))) {
    return *have;
  }
  return fresh;
}

std::string RandomRunId() {
  std::random_device device;
  const uint64_t v = (static_cast<uint64_t>(device()) << 32) ^ device();
  char buf[24];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace accel::worker
