// Global-norm gradient clipping (torch.nn.utils.clip_grad_norm_ semantics).
//   scale = min(1, max_norm / (norm + 1e-6)); max_norm <= 0 turns clipping off (scale 1).
// The scale is applied inside the optimizer step (AdamWHyper::grad_scale), so gradients are never
// rewritten. The norm itself is a sum of squares over every element counted once; a sharded
// engine sums its shards' partial sums across ranks before taking the square root.
#pragma once

#include <cstdint>

namespace accel::optim {

float ClipScale(double grad_norm, float max_norm);

}  // namespace accel::optim
