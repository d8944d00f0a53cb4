// What the engine asks of a model without knowing its architecture, answered by the config's
// registry entry (registry.h): the activation memory a (B, T) needs, and which weights the model
// reads only in bf16. The forward and backward themselves are behind ModelRunner.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/model/activation_options.h"
#include "engine/model/model_config.h"
#include "engine/model/param_specs.h"

namespace accel::model {

// The bytes the CPU model's activations for (B, T) take (its Activations::bytes()), without
// allocating. InvalidArgument for a bad B or T (T above the model's positions included).
[[nodiscard]] absl::StatusOr<int64_t> PlannedActivationBytes(const ModelConfig& config, int64_t B,
                                                             int64_t T, ActivationOptions options);

// Per unit, the ranges (relative to the unit, sorted) the model reads only through
// ParamAccess::ParamsBf16 when it multiplies in bf16: the blocks' matmul weights.
std::vector<std::vector<std::pair<int64_t, int64_t>>> Bf16OnlyWeightRanges(
    const ModelLayout& layout);

}  // namespace accel::model
