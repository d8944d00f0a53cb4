// acceld's command line: every flag with its default and help, and the ranges their values must
// be in, checked before anything starts. A value out of range is refused with one line naming
// the flag and its range, exit 2 (as a malformed flag is): a negative slot count, a heartbeat
// deadline of nan or inf (absl::Seconds turns either into a deadline that never comes), an
// address file in a folder that does not exist (found only once acceld serves, and then
// silently). What only the running daemon can judge — zero CPU slots with neither GPUs nor a
// cluster launcher, a missing Slurm config — Acceld::Start refuses (also exit 2).
//
// Like RunAccelctl, the whole command line is a function of its inputs, so tests run it
// without a process.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "server/acceld.h"

namespace accel::server {

// The ranges (docs/reliability.md "acceld's flags, launchers and the terminal").
inline constexpr int kMaxCpuSlots = 65536;  // slots are a vector<bool>; more is a typo
inline constexpr int kMaxGpus = 1024;
inline constexpr double kMaxHeartbeatTimeoutS = 7 * 24 * 3600;  // a week; min: job/job_file.h
inline constexpr double kMaxStopGraceS = 3600;

// ParseAcceldFlags's answer when acceld should go on and start.
inline constexpr int kStartAcceld = -1;

// Parses `args` (without the program name) into *options, sets the log level, and checks every
// value. Returns kStartAcceld, or the exit code to leave with: 0 after --help (printed on `out`),
// 2 for a malformed or out-of-range flag (one line on `err`).
int ParseAcceldFlags(const std::vector<std::string>& args, AcceldOptions* options,
                     std::ostream& out, std::ostream& err);

}  // namespace accel::server
