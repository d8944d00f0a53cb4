// The one reduction the collectives need: an elementwise sum of two arrays of a wire dtype.
// bf16 and f16 are widened to f32, added once in f32, and rounded once back (round to nearest
// even): the "f32 accumulation per hop" of communicator.h. `out` may alias `a` or `b` exactly
// (same pointer), not partially.
#pragma once

#include <cstddef>

#include "engine/tensor/dtype.h"

namespace accel::comm {

// out[i] = a[i] + b[i] for i < n, in `dtype`.
void SumInto(DType dtype, const void* a, const void* b, void* out, size_t n);

}  // namespace accel::comm
