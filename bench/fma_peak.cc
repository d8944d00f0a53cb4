#include "bench/fma_peak.h"

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

namespace accel::bench {
namespace {

using Clock = std::chrono::steady_clock;

// a * x + b with a just under 1 converges to b / (1 - a), so values stay normal and finite for
// any run length (no denormal slow path).
#if defined(__AVX512F__)
using Vec = __m512;
constexpr int kLanes = 16;
constexpr const char* kIsa = "avx512f";
inline Vec Set1(float x) { return _mm512_set1_ps(x); }
inline Vec Fma(Vec a, Vec x, Vec b) { return _mm512_fmadd_ps(a, x, b); }
inline float Sum(Vec x) {  // (GCC 12's _mm512_reduce_add_ps warns about its own internals)
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, x);
  float s = 0;
  for (float f : lanes) s += f;
  return s;
}
#elif defined(__AVX2__) && defined(__FMA__)
using Vec = __m256;
constexpr int kLanes = 8;
constexpr const char* kIsa = "avx2+fma";
inline Vec Set1(float x) { return _mm256_set1_ps(x); }
inline Vec Fma(Vec a, Vec x, Vec b) { return _mm256_fmadd_ps(a, x, b); }
inline float Sum(Vec x) {
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, x);
  float s = 0;
  for (float f : lanes) s += f;
  return s;
}
#else
using Vec = float;  // no vector FMA: measures scalar multiply-add, a floor rather than a peak
constexpr int kLanes = 1;
constexpr const char* kIsa = "scalar";
inline Vec Set1(float x) { return x; }
inline Vec Fma(Vec a, Vec x, Vec b) { return a * x + b; }
inline float Sum(Vec x) { return x; }
#endif

// 12 chains: FMA latency is 4-5 cycles on Zen 2-5 and Intel cores since Skylake, with two FMA
// ports, so 8-10 FMAs must be in flight; 12 leaves margin and, with a and b, fits the 16 ymm
// registers of AVX2 without spills.
constexpr int kChains = 12;
constexpr int64_t kInnerIters = 1024;  // rounds of kChains FMAs per block

// Runs `blocks` × kInnerIters × kChains FMAs and returns their sum so the work stays live.
// Twelve named accumulators, not an array: GCC kept an array on the stack (a store and a load
// around every FMA, which is then bound by store forwarding, not by the FMA ports). The empty
// asm after each round makes every accumulator opaque and register-resident, so the compiler
// cannot fold, hoist or shorten a chain (the disassembly is described in docs/performance.md,
// "FMA peak").
__attribute__((noinline)) float RunChains(int64_t blocks, float seed) {
  static_assert(kChains == 12, "RunChains names its 12 accumulators");
  const Vec a = Set1(0.9999999f), b = Set1(1e-7f);
  Vec c0 = Set1(seed), c1 = Set1(seed + 0.01f), c2 = Set1(seed + 0.02f), c3 = Set1(seed + 0.03f);
  Vec c4 = Set1(seed + 0.04f), c5 = Set1(seed + 0.05f), c6 = Set1(seed + 0.06f);
  Vec c7 = Set1(seed + 0.07f), c8 = Set1(seed + 0.08f), c9 = Set1(seed + 0.09f);
  Vec c10 = Set1(seed + 0.10f), c11 = Set1(seed + 0.11f);
  for (int64_t i = 0; i < blocks * kInnerIters; ++i) {
    c0 = Fma(a, c0, b);
    c1 = Fma(a, c1, b);
    c2 = Fma(a, c2, b);
    c3 = Fma(a, c3, b);
    c4 = Fma(a, c4, b);
    c5 = Fma(a, c5, b);
    c6 = Fma(a, c6, b);
    c7 = Fma(a, c7, b);
    c8 = Fma(a, c8, b);
    c9 = Fma(a, c9, b);
    c10 = Fma(a, c10, b);
    c11 = Fma(a, c11, b);
    asm volatile("" : "+x"(c0), "+x"(c1), "+x"(c2), "+x"(c3), "+x"(c4), "+x"(c5), "+x"(c6),
                 "+x"(c7), "+x"(c8), "+x"(c9), "+x"(c10), "+x"(c11));
  }
  return Sum(c0) + Sum(c1) + Sum(c2) + Sum(c3) + Sum(c4) + Sum(c5) + Sum(c6) + Sum(c7) +
         Sum(c8) + Sum(c9) + Sum(c10) + Sum(c11);
}

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// Blocks one thread needs for about `seconds`.
int64_t CalibrateBlocks(double seconds) {
  int64_t blocks = 16;
  for (;;) {
    const auto t0 = Clock::now();
    volatile float sink = RunChains(blocks, 0.5f);
    (void)sink;
    const double took = Seconds(t0, Clock::now());
    if (took >= 0.02 || blocks > (int64_t{1} << 40)) {
      return std::max<int64_t>(1, static_cast<int64_t>(blocks * seconds / took));
    }
    blocks *= 4;
  }
}

// One try: `threads` threads released together, each running `blocks`; GFLOP/s over the span
// from the earliest start to the latest end.
double TryConcurrent(int threads, int64_t blocks) {
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<Clock::time_point> start(threads), end(threads);
  std::vector<float> sums(threads);
  std::vector<std::thread> pool;
  pool.reserve(threads);
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      start[t] = Clock::now();
      sums[t] = RunChains(blocks, 0.5f + t);
      end[t] = Clock::now();
    });
  }
  while (ready.load() < threads) std::this_thread::yield();
  go.store(true, std::memory_order_release);
  for (auto& th : pool) th.join();
  volatile float sink = 0;
  for (float s : sums) sink = sink + s;
  const double span = Seconds(*std::min_element(start.begin(), start.end()),
                              *std::max_element(end.begin(), end.end()));
  const double flops = 2.0 * kLanes * kChains * kInnerIters * static_cast<double>(blocks) * threads;
  return flops / span / 1e9;
}

}  // namespace

FmaPeak MeasureFmaPeak(int threads, double seconds_per_try, int tries) {
  FmaPeak p;
  p.threads = std::max(threads, 1);
  p.tries = std::max(tries, 1);
  p.chains = kChains;
  p.vector_bits = 32 * kLanes;
  p.isa = kIsa;
  const int64_t blocks = CalibrateBlocks(seconds_per_try);
  for (int i = 0; i < p.tries; ++i) {
    p.per_core_gflops = std::max(p.per_core_gflops, TryConcurrent(1, blocks));
    if (p.threads > 1) {
      p.all_core_gflops = std::max(p.all_core_gflops, TryConcurrent(p.threads, blocks));
    }
  }
  if (p.threads == 1) p.all_core_gflops = p.per_core_gflops;
  return p;
}

}  // namespace accel::bench
