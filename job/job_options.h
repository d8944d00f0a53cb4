// A JobSpec's own settings as the engine's options, before any config: each row of the settings
// table (job/settings.h) that has an `apply` maps its key onto config::TrainOptions.
#pragma once

#include "absl/status/statusor.h"
#include "accel/v1/job.pb.h"
#include "engine/config/train_options.h"

namespace accel::job {

// The job's own settings (the `sharding` section included). InvalidArgument naming the spec key
// when a value does not map ("sharding.strategy: ...").
[[nodiscard]] absl::StatusOr<config::TrainOptions> JobOptionsFromSpec(
    const accel::v1::JobSpec& spec);

}  // namespace accel::job
