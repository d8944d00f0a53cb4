#include "engine/optim/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"

namespace accel::optim {

absl::StatusOr<ScheduleKind> ParseScheduleKind(std::string_view name) {
  if (name == "constant") return ScheduleKind::kConstant;
  if (name == "linear") return ScheduleKind::kLinear;
  if (name == "cosine") return ScheduleKind::kCosine;
  return absl::InvalidArgumentError(absl::StrCat("unknown LR schedule '", std::string(name),
                                                 "' (expected constant, linear or cosine)"));
}

std::string_view ScheduleKindName(ScheduleKind kind) {
  switch (kind) {
    case ScheduleKind::kConstant: return "constant";
    case ScheduleKind::kLinear: return "linear";
    case ScheduleKind::kCosine: return "cosine";
  }
  return "unknown";
}

float LrSchedule::LrAt(int64_t step) const {
  if (step < warmup_steps) {
    return base_lr * static_cast<float>(step + 1) / static_cast<float>(warmup_steps);
  }
  if (kind == ScheduleKind::kConstant) return base_lr;
  const int64_t span = std::max<int64_t>(total_steps - warmup_steps, 1);
  const double progress =
      std::clamp(static_cast<double>(step - warmup_steps) / static_cast<double>(span), 0.0, 1.0);
  double factor = kind == ScheduleKind::kLinear ? 1.0 - progress
                                                : 0.5 * (1.0 + std::cos(M_PI * progress));
  return static_cast<float>(min_lr + (base_lr - min_lr) * factor);
}

}  // namespace accel::optim
