#include "job/job_options.h"

#include "engine/base/status_macros.h"
#include "job/settings.h"

namespace accel::job {

absl::StatusOr<config::TrainOptions> JobOptionsFromSpec(const accel::v1::JobSpec& spec) {
  config::TrainOptions o;
  for (const Setting& s : JobSettings()) {
    if (s.apply != nullptr) s.apply(spec, o);
    if (s.apply_checked != nullptr) ACCEL_RETURN_IF_ERROR(s.apply_checked(spec, o));
  }
  return o;
}

}  // namespace accel::job
