// Learning-rate schedules: constant, linear and cosine, each with linear warmup.
//   warmup:   lr(s) = base · (s + 1) / warmup_steps            for s < warmup_steps
//   constant: base
//   linear:   base → min_lr linearly over [warmup_steps, total_steps)
//   cosine:   min_lr + (base − min_lr) · ½(1 + cos(π · progress))
// progress = (s − warmup) / (total − warmup), clamped to [0, 1]. Steps are 0-based. Pure
// functions; thread-safe.
#pragma once

#include <cstdint>
#include <string_view>

#include "absl/status/statusor.h"

namespace accel::optim {

enum class ScheduleKind { kConstant, kLinear, kCosine };

// "constant", "linear", "cosine"; InvalidArgument naming the value otherwise.
[[nodiscard]] absl::StatusOr<ScheduleKind> ParseScheduleKind(std::string_view name);
std::string_view ScheduleKindName(ScheduleKind kind);

struct LrSchedule {
  ScheduleKind kind = ScheduleKind::kConstant;
  float base_lr = 3e-4f;
  float min_lr = 0.0f;
  int64_t warmup_steps = 0;
  int64_t total_steps = 1;

  float LrAt(int64_t step) const;
};

}  // namespace accel::optim
