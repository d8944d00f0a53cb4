#include "engine/optim/clip.h"

namespace accel::optim {

float ClipScale(double grad_norm, float max_norm) {
  if (max_norm <= 0.0f) return 1.0f;
  // torch computes clip_coef in the gradients' dtype (float32) and clamps it at 1.
  float coef = max_norm / (static_cast<float>(grad_norm) + 1e-6f);
  return coef < 1.0f ? coef : 1.0f;
}

}  // namespace accel::optim
