#include "engine/model/architecture.h"

#include "absl/status/status.h"
#include "engine/model/gpt2.h"
#include "engine/model/llama.h"

namespace accel::model {

absl::StatusOr<int64_t> PlannedActivationBytes(const ModelConfig& config, int64_t B, int64_t T,
                                               ActivationOptions options) {
  if (config.gpt2() != nullptr) {
    return Gpt2Activations::PlannedBytes(*config.gpt2(), B, T, options);
  }
  return LlamaActivations::PlannedBytes(*config.llama(), B, T, options);
}

std::vector<std::vector<std::pair<int64_t, int64_t>>> Bf16OnlyWeightRanges(
    const ModelLayout& layout) {
  std::vector<std::vector<std::pair<int64_t, int64_t>>> ranges(layout.num_units());
  if (layout.config().gpt2() != nullptr) {
    const Gpt2 gpt2(&layout);
    for (int u = 0; u < layout.num_units(); ++u) ranges[u] = gpt2.MatmulWeightRanges(u);
  } else {
    const Llama llama(&layout);
    for (int u = 0; u < layout.num_units(); ++u) ranges[u] = llama.MatmulWeightRanges(u);
  }
  return ranges;
}

}  // namespace accel::model
