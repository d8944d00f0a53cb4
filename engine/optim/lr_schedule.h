// Learning-rate schedules: constant, linear and cosine, each with linear warmup.
//   warmup:   lr(s) = base · (s + 1) / warmup_steps            for s < warmup_steps
//   constant: base
//   linear:   base → min_lr linearly over [warmup_steps, total_steps)
//   cosine:   min_lr + (base − min_lr) · ½(1 + cos(π · progress))
// progress = (s − warmup) / (total − warmup), clamped to [0, 1]. Steps are 0-based. Pure
// functions; thread-safe.
//
// A DeepSpeed "scheduler" section runs DeepSpeed's own formulas instead (LrSchedule::deepspeed,
// from deepspeed/runtime/lr_schedules.py), as its engine steps them: the scheduler advances after
// each applied optimizer step, so optimizer step s uses iteration i = s − 1, and i = −1 gives
// the start value (warmup_min_lr; 0 for WarmupCosineLR). With W = max(2, warmup_num_steps) and
// g(i) = ln(i + 1) / ln(W) (warmup_type log, the default) or i / W (linear), for i < W:
//   WarmupLR:       min + (max − min) · g(i), then max
//   WarmupDecayLR:  the same warmup, then min + (max − min) · max(0, (T − i) / max(1, T − W))
//   WarmupCosineLR: lr · (r0 + (1 − r0) · g(i)), then lr · max(0, c + (1 − c) · ½(1 +
//                   cos(π (i − W + 1) / (T − W)))), r0 = warmup_min_ratio, c = cos_min_ratio
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "absl/status/statusor.h"

namespace accel::optim {

enum class ScheduleKind { kConstant, kLinear, kCosine };

// "constant", "linear", "cosine"; InvalidArgument naming the value otherwise.
[[nodiscard]] absl::StatusOr<ScheduleKind> ParseScheduleKind(std::string_view name);
std::string_view ScheduleKindName(ScheduleKind kind);

struct DeepSpeedLr {
  enum class Type { kWarmupLR, kWarmupDecayLR, kWarmupCosineLR };
  Type type = Type::kWarmupLR;
  bool log_warmup = true;            // warmup_type log (DeepSpeed's default) or linear
  double min_lr = 0, max_lr = 1e-3;  // WarmupLR, WarmupDecayLR
  double warmup_min_ratio = 0, cos_min_ratio = 1e-4;  // WarmupCosineLR, of LrSchedule::base_lr
  int64_t warmup_steps = 1000;       // as configured; the formulas use max(2, this)
  int64_t total_steps = 1;           // WarmupDecayLR, WarmupCosineLR
};

struct LrSchedule {
  ScheduleKind kind = ScheduleKind::kConstant;
  float base_lr = 3e-4f;
  float min_lr = 0.0f;
  int64_t warmup_steps = 0;
  int64_t total_steps = 1;
  // Set by a DeepSpeed scheduler section: LrAt follows it and ignores the fields above except
  // base_lr (WarmupCosineLR's optimizer lr).
  std::optional<DeepSpeedLr> deepspeed;

  float LrAt(int64_t step) const;
};

}  // namespace accel::optim
