// The number of threads the fast kernels use (OpenMP, the same libgomp pool oneDNN runs on).
// Set it once, before the first matmul: oneDNN sets primitives up for the thread count in force
// when they are created. Not thread-safe against concurrent kernels.
#pragma once

namespace accel::kernels {
void SetNumThreads(int threads);
int NumThreads();
}  // namespace accel::kernels
