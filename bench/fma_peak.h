// Measured peak fp32 FMA throughput of this machine: a register-only loop of independent
// vector fused multiply-adds (AVX-512 when compiled for it, else AVX2+FMA), run on `threads`
// OpenMP threads for about `seconds`. Benchmarks print it beside their GFLOP/s so a reader can
// judge a kernel against what the cores can do now (on a shared VM that drifts between runs).
#pragma once

namespace accel::bench {

// Returns GFLOP/s summed over threads, counting 2 flops per lane per FMA.
double MeasureFmaPeakGflops(int threads, double seconds);

}  // namespace accel::bench
