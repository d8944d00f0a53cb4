// Measured peak fp32 FMA throughput of this machine, the yardstick of the benchmarks' "of peak"
// columns. Each thread runs a register-only loop of kChains independent vector fused
// multiply-add chains (AVX-512 when compiled for it, else AVX2+FMA, else scalar), enough chains
// that FMA latency × FMA ports is covered on current x86 cores, so the loop is throughput-bound.
//
// All-core: `threads` std::threads are created first, wait at a start line, and are released
// together; each does the same fixed amount of work, and the rate is all their FMAs over the
// time from the first one's start to the last one's end. Per-core: the same with one thread.
// Each figure is the best of `tries` tries: on a shared VM a try can only lose time to other
// load, never gain it, so the maximum is the estimate of what the hardware allows.
// (The earlier version ran one timed OpenMP region whose elapsed time included creating the
// thread pool and the threads' staggered starts: 169-308 GFLOP/s on one machine.)
#pragma once

namespace accel::bench {

struct FmaPeak {
  double per_core_gflops = 0;  // one thread alone
  double all_core_gflops = 0;  // `threads` threads at once (equals per_core_gflops at 1)
  int threads = 0;
  int tries = 0;
  int chains = 0;       // independent FMA chains per thread
  int vector_bits = 0;  // 512, 256, or 32 (scalar fallback)
  const char* isa = "";  // "avx512f", "avx2+fma" or "scalar" (what this binary was compiled for)
};

// GFLOP/s count 2 flops per lane per FMA. `seconds_per_try` is how long each try's threads run
// (calibrated once on one thread); the whole call takes about 2 × tries × seconds_per_try.
FmaPeak MeasureFmaPeak(int threads, double seconds_per_try = 0.1, int tries = 5);

}  // namespace accel::bench
