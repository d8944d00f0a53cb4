#include "bench/fma_peak.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cstdint>

namespace accel::bench {
namespace {

// FMAs per accumulator between clock reads: long enough that omp_get_wtime is noise.
constexpr int64_t kInnerIters = 1 << 14;

// Twelve independent accumulators cover an FMA latency of 4-6 cycles on two FMA pipes
// (AVX-512 on Zen 4/5 and Intel server cores). a * x + b with a just under 1 converges to
// b / (1 - a), so values stay normal and finite for any run length.
#if defined(__AVX512F__)
using Vec = __m512;
constexpr int kLanes = 16;
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
inline Vec Set1(float x) { return x; }
inline Vec Fma(Vec a, Vec x, Vec b) { return a * x + b; }
inline float Sum(Vec x) { return x; }
#endif

constexpr int kAccumulators = 12;

// Runs until `seconds` have passed; returns the number of FMA instructions issued.
int64_t FmaLoop(double seconds, float seed, float* sink) {
  const Vec a = Set1(0.9999999f), b = Set1(1e-7f);
  Vec acc[kAccumulators];
  for (int j = 0; j < kAccumulators; ++j) acc[j] = Set1(seed + 0.01f * j);
  int64_t fmas = 0;
  const double start = omp_get_wtime();
  do {
    for (int64_t i = 0; i < kInnerIters; ++i) {
#pragma GCC unroll 12
      for (int j = 0; j < kAccumulators; ++j) acc[j] = Fma(a, acc[j], b);
    }
    fmas += kInnerIters * kAccumulators;
  } while (omp_get_wtime() - start < seconds);
  float s = 0;
  for (int j = 0; j < kAccumulators; ++j) s += Sum(acc[j]);
  *sink = s;  // keeps the loop's results live
  return fmas;
}

}  // namespace

double MeasureFmaPeakGflops(int threads, double seconds) {
  threads = std::max(threads, 1);
  int64_t total_fmas = 0;
  float sink = 0;
  const double start = omp_get_wtime();
#pragma omp parallel num_threads(threads) reduction(+ : total_fmas, sink)
  {
    float s = 0;
    total_fmas += FmaLoop(seconds, 0.5f + omp_get_thread_num(), &s);
    sink += s;
  }
  const double elapsed = omp_get_wtime() - start;
  volatile float keep = sink;
  (void)keep;
  return static_cast<double>(total_fmas) * kLanes * 2.0 / elapsed / 1e9;
}

}  // namespace accel::bench
