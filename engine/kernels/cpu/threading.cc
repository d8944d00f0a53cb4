#include "engine/kernels/threading.h"

#include <omp.h>

namespace accel::kernels {

void SetNumThreads(int threads) { omp_set_num_threads(threads < 1 ? 1 : threads); }

int NumThreads() { return omp_get_max_threads(); }

}  // namespace accel::kernels
