#include "client/explain_memory.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/config/planned_run.h"

namespace accel::client {

absl::StatusOr<plan::MemoryPlan> ExplainMemory(const MemoryExplainArgs& args,
                                               const config::LoweredJob& lowered, Env* fs) {
  config::TrainOptions options = lowered.options;
  options.model = args.model.empty() ? options.model : args.model;
  options.model_config = args.model_config;
  if (args.seq.has_value()) options.seq = *args.seq;
  absl::StatusOr<model::ModelConfig> config = config::ModelConfigOf(fs, options);
  if (!config.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        args.model_config.empty() ? "--model: " : "--model-config: ", config.status().message()));
  }
  if (options.seq > config->max_positions()) {
    return absl::InvalidArgumentError(absl::StrCat("--seq ", options.seq, " exceeds the model's ",
                                                   config->max_positions(), " positions"));
  }
  const int world = std::max(1, lowered.world_size);
  plan::MemoryPlanOptions po;
  po.world = world;
  po.ranks_on_machine = std::clamp(args.ranks_per_machine.value_or(world), 1, world);
  return plan::PlanMemory(*config, config::PlannedRunOf(options), po);
}

}  // namespace accel::client
