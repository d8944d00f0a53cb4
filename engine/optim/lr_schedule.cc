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

namespace {

double DeepSpeedLrAt(const DeepSpeedLr& d, double base_lr, int64_t step) {
  using Type = DeepSpeedLr::Type;
  const int64_t i = step - 1;  // the scheduler's last_batch_iteration
  if (i < 0) return d.type == Type::kWarmupCosineLR ? 0.0 : d.min_lr;
  const int64_t W = std::max<int64_t>(2, d.warmup_steps);
  const int64_t T = d.total_steps;
  if (i < W) {
    const double g = d.log_warmup ? std::log(static_cast<double>(i + 1)) / std::log(double(W))
                                  : static_cast<double>(i) / static_cast<double>(W);
    if (d.type == Type::kWarmupCosineLR) {
      return base_lr * (d.warmup_min_ratio + (1.0 - d.warmup_min_ratio) * g);
    }
    return d.min_lr + (d.max_lr - d.min_lr) * g;
  }
  switch (d.type) {
    case Type::kWarmupLR:
      return d.max_lr;
    case Type::kWarmupDecayLR: {
      const double gamma = std::max(0.0, static_cast<double>(T - i) /
                                             std::max(1.0, static_cast<double>(T - W)));
      return d.min_lr + (d.max_lr - d.min_lr) * gamma;
    }
    case Type::kWarmupCosineLR: {
      const double progress =
          static_cast<double>(i - W + 1) / static_cast<double>(std::max<int64_t>(1, T - W));
      const double ratio = (1.0 + std::cos(M_PI * progress)) / 2.0;
      return base_lr * std::max(0.0, d.cos_min_ratio + (1.0 - d.cos_min_ratio) * ratio);
    }
  }
  return d.max_lr;
}

}  // namespace

float LrSchedule::LrAt(int64_t step) const {
  if (deepspeed) return static_cast<float>(DeepSpeedLrAt(*deepspeed, base_lr, step));
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
