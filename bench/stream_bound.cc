#include "bench/stream_bound.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <memory>
#include <utility>

namespace accel::bench {
namespace {

struct FreeDeleter {
  void operator()(float* p) const { std::free(p); }
};

void Triad(float* a, const float* b, const float* c, int64_t n, float s, int threads) {
  // Static schedule, as the kernels use: each thread touches the same pages every pass (first
  // touch below places them), so the triad measures what a kernel over these arrays could reach.
#pragma omp parallel for simd schedule(static) num_threads(threads)
  for (int64_t i = 0; i < n; ++i) a[i] = b[i] + s * c[i];
}

void InPlaceTriad(float* a, const float* b, int64_t n, float s, int threads) {
#pragma omp parallel for simd schedule(static) num_threads(threads)
  for (int64_t i = 0; i < n; ++i) a[i] += s * b[i];
}

// Best GB/s of `pass` (12 bytes an element of n) over about `seconds`.
template <typename Pass>
double BestGBps(int64_t n, double seconds, const Pass& pass) {
  using Clock = std::chrono::steady_clock;
  pass();  // warm-up: page faults, caches
  double best = 0.0;
  const auto end = Clock::now() + std::chrono::duration<double>(seconds);
  do {
    // Enough passes that one timing is at least ~1 ms (small footprints run in microseconds).
    const int64_t passes = std::max<int64_t>(1, (int64_t{1} << 22) / n);
    const auto t0 = Clock::now();
    for (int64_t p = 0; p < passes; ++p) pass();
    const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
    best = std::max(best, 12.0 * static_cast<double>(n) * passes / dt / 1e9);
  } while (Clock::now() < end);
  return best;
}

}  // namespace

double MeasureTriadGBps(int64_t footprint_bytes, int threads, double seconds) {
  // The triad's three arrays of n, or the in-place form's two of n2 = 1.5 n: the same footprint.
  const int64_t n = std::max<int64_t>(footprint_bytes / 3 / 4 / 16 * 16, 16);
  const int64_t n2 = n / 2 * 3;
  auto alloc = [](int64_t count) {
    return std::unique_ptr<float, FreeDeleter>(
        static_cast<float*>(std::aligned_alloc(64, static_cast<size_t>(count) * sizeof(float))));
  };
  std::unique_ptr<float, FreeDeleter> a = alloc(n2), b = alloc(n2), c = alloc(n);
#pragma omp parallel for schedule(static) num_threads(threads)
  for (int64_t i = 0; i < n2; ++i) {
    a.get()[i] = 0.0f;
    b.get()[i] = 1.0f;
    if (i < n) c.get()[i] = 2.0f;
  }
  const double triad =
      BestGBps(n, seconds, [&] { Triad(a.get(), b.get(), c.get(), n, 0.5f, threads); });
  const double in_place =
      BestGBps(n2, seconds, [&] { InPlaceTriad(a.get(), b.get(), n2, 1e-3f, threads); });
  return std::max(triad, in_place);
}

double TriadBoundGBps(int64_t footprint_bytes, int threads) {
  static auto* cache = new std::map<std::pair<int64_t, int>, double>;
  auto [it, inserted] = cache->try_emplace({footprint_bytes, threads}, 0.0);
  if (inserted) it->second = MeasureTriadGBps(footprint_bytes, threads, 0.2);
  return it->second;
}

}  // namespace accel::bench
