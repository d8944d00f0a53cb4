// The `accel-worker --standalone` flags that are job keys, generated from the settings table
// (job/settings.h): every row with a `flag` becomes a CLI11 option of the row's type, showing
// the row's default, that writes the key into a JobSpec and, for a row with an `apply`, the
// engine's option it maps to. Flags that are not job keys (--deepspeed-config, --offload-dir,
// ...) stay hand-written in worker/standalone.cc.
//
// The generated flags check the type (CLI11: "--batch: Value x not in range / could not be
// converted"), not the table's range: the standalone has its own rules (--log-every 0 prints
// every step), and the job's ranges are checked at submit.
#pragma once

#include "CLI/CLI.hpp"
#include "accel/v1/job.pb.h"
#include "engine/config/train_options.h"

namespace accel::job {

// Adds the flags to `app`. Each given flag sets its key in *spec and applies the row to
// *options as it is parsed; both must outlive the parse.
void AddSettingFlags(CLI::App& app, accel::v1::JobSpec* spec, config::TrainOptions* options);

}  // namespace accel::job
