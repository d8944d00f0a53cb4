// fp16 dynamic loss scaling settings (DeepSpeed's fp16 section, torch's GradScaler): what
// train::LossScaler runs with. A plain struct here so the config lowering can fill it.
#pragma once

#include <cstdint>

namespace accel::optim {

struct LossScalingOptions {
  int initial_scale_power = 16;  // first scale = 2^power
  int64_t window = 1000;         // clean steps before the scale doubles
  int hysteresis = 2;            // overflows absorbed before the scale halves
  double min_scale = 1;          // floor (DeepSpeed's min_loss_scale)
};

}  // namespace accel::optim
