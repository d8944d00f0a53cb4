// Slurm's compressed lists, as srun puts them in a task's environment (expanded here rather
// than by `scontrol show hostnames`, so a task needs no Slurm client or controller to find its
// peers).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace accel::worker {

// A host list: "n[1-2,5]" -> n1 n2 n5, "a1,b[01-03]" -> a1 b01 b02 b03 (zero padding follows
// the range's first bound), "r[1-2]n[1-2]" -> r1n1 r1n2 r2n1 r2n2, in Slurm's order.
// InvalidArgument "NAME=VALUE ..." on an unbalanced bracket, an empty name, a bad range or more
// than 100000 hosts.
[[nodiscard]] absl::StatusOr<std::vector<std::string>> ExpandHostList(std::string_view list,
                                                                      std::string_view name);

// Tasks per node: "2(x3),1" -> 2 2 2 1. InvalidArgument "NAME=VALUE ..." on anything else.
[[nodiscard]] absl::StatusOr<std::vector<int>> ExpandTasksPerNode(std::string_view list,
                                                                  std::string_view name);

}  // namespace accel::worker
