// Inspecting a checkpoint directory (`accelctl ckpt inspect`): which steps it holds, whether each
// is complete, its world size, strategy and size on disk, which one `latest` names, and — when
// asked — whether every checksum of every file verifies (metadata, headers, block tables and
// every data block: the whole checkpoint is read).
//
// `dir` may be a checkpoint directory (holding step_<N>/ and `latest`) or one step directory.
// Problems found in a step are reported in its StepReport, not returned: the call fails only
// when `dir` itself cannot be listed (NotFound / InvalidArgument).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/base/env.h"

namespace accel::checkpoint {

struct StepReport {
  std::string name;  // "step_10", or "step_10.tmp" for a save that never committed
  std::string path;
  int64_t step = -1;
  bool complete = false;  // committed: not a .tmp directory, metadata.json readable
  bool latest = false;
  int world_size = 0;
  std::string strategy;
  int64_t num_params = 0;
  int64_t data_position = 0;
  uint64_t bytes = 0;                                   // every file in the directory
  std::vector<std::pair<std::string, uint64_t>> files;  // name, size
  bool verified = false;                                // every checksum checked and good
  absl::Status status;                                  // the first problem found (OK if none)
};

struct InspectReport {
  std::string dir;
  std::string latest;  // what `latest` names ("" if none); latest_status says if it is broken
  absl::Status latest_status;
  std::vector<StepReport> steps;  // ordered by step, then name

  // No step has a problem and `latest` (if present) names a complete step.
  bool ok() const;
};

[[nodiscard]] absl::StatusOr<InspectReport> InspectCheckpoints(Env* env, const std::string& dir,
                                                               bool verify);

// A table for people and a JSON document for tools.
std::string InspectReportToText(const InspectReport& report);
std::string InspectReportToJson(const InspectReport& report);

}  // namespace accel::checkpoint
