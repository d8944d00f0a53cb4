// LossScaler: fp16 dynamic loss scaling as DeepSpeed and torch.cuda.amp.GradScaler do it. The
// backward runs with dloss multiplied by scale(); the optimizer sees gradients multiplied by
// 1/scale(). A step whose gradients overflowed (a non-finite global norm, agreed on every rank)
// is skipped; `hysteresis` consecutive overflows halve the scale (never below min_scale), and
// `window` clean steps in a row double it.
// Not thread-safe; its state is part of a checkpoint (ToJson / FromJson).
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "engine/optim/loss_scaling_options.h"

namespace accel::train {

using LossScalingOptions = optim::LossScalingOptions;

class LossScaler {
 public:
  LossScaler() = default;  // disabled: scale 1, never skips for overflow
  explicit LossScaler(const LossScalingOptions& options);

  bool enabled() const { return enabled_; }
  double scale() const { return scale_; }
  // After the step's gradient norm is known (finite = no overflow). Returns whether the
  // optimizer step must be skipped.
  bool Update(bool finite);
  int64_t overflows() const { return overflows_; }

  // {"scale":..,"good_steps":..,"hysteresis_left":..,"overflows":..}
  std::string ToJson() const;
  [[nodiscard]] absl::Status FromJson(const std::string& json);

 private:
  LossScalingOptions options_;
  bool enabled_ = false;
  double scale_ = 1;
  int64_t good_steps_ = 0;
  int hysteresis_left_ = 0;
  int64_t overflows_ = 0;
};

}  // namespace accel::train
