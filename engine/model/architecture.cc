#include "engine/model/architecture.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/model/registry.h"

namespace accel::model {

namespace {

absl::StatusOr<int64_t> PlannedBytesOf(const ModelConfig& config, int64_t B, int64_t T,
                                       ActivationOptions options) {
  return config.architecture().activation_bytes(config, B, T, options);
}

// Activations grow (at most) linearly in B, so B sequences need at most B times one sequence's
// bytes plus alignment; more than 2^62 of them cannot be counted in int64 (nor held by anything).
constexpr double kMaxActivationBytes = 0x1p62;

}  // namespace

absl::StatusOr<int64_t> PlannedActivationBytes(const ModelConfig& config, int64_t B, int64_t T,
                                               ActivationOptions options) {
  if (B > 1) {
    ACCEL_ASSIGN_OR_RETURN(const int64_t one, PlannedBytesOf(config, 1, T, options));
    if (static_cast<double>(one) * static_cast<double>(B) * 2 > kMaxActivationBytes) {
      return absl::InvalidArgumentError(absl::StrCat(
          "micro-batch ", B, " x sequence ", T, ": activations of ", config.name(), " need ",
          one, " bytes per sequence, more than 2^62 bytes in all; use a smaller micro_batch"));
    }
  }
  return PlannedBytesOf(config, B, T, options);
}

std::vector<std::vector<std::pair<int64_t, int64_t>>> Bf16OnlyWeightRanges(
    const ModelLayout& layout) {
  std::vector<std::vector<std::pair<int64_t, int64_t>>> ranges(layout.num_units());
  const Architecture& family = layout.config().architecture();
  for (int u = 0; u < layout.num_units(); ++u) ranges[u] = family.bf16_only_ranges(layout, u);
  return ranges;
}

}  // namespace accel::model
