#include "bench/kernels_bench_util.h"

#include <cstdlib>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "bench/stream_bound.h"
#include "engine/kernels/adamw.h"
#include "engine/kernels/threading.h"
#include "engine/tensor/dtype.h"

namespace accel::bench {
namespace {

struct FreeDeleter {
  void operator()(float* p) const { std::free(p); }
};

}  // namespace

float* Buffer(int slot, int64_t n) {
  static auto* buffers = new std::map<std::pair<int, int64_t>, std::unique_ptr<float, FreeDeleter>>;
  auto& b = (*buffers)[{slot, n}];
  if (b == nullptr) {
    const size_t bytes = (static_cast<size_t>(n) * sizeof(float) + 63) / 64 * 64;
    b.reset(static_cast<float*>(std::aligned_alloc(64, bytes > 0 ? bytes : 64)));
    uint32_t x = 0x9E3779B9u * (slot + 1);
    for (int64_t i = 0; i < n; ++i) {
      x = x * 1664525u + 1013904223u;
      b.get()[i] = (static_cast<float>(x >> 8) * 0x1.0p-24f - 0.5f) * 0.02f;
    }
  }
  return b.get();
}

const uint16_t* Bf16Buffer(int slot, int64_t n) {
  static auto* buffers = new std::map<std::pair<int, int64_t>, std::vector<uint16_t>>;
  std::vector<uint16_t>& b = (*buffers)[{slot, n}];
  if (b.empty() && n > 0) {
    b.resize(n);
    FloatToBf16(Buffer(slot, n), b.data(), n);
  }
  return b.data();
}

void SetFlopRate(benchmark::State& state, double flops_per_iter) {
  state.counters["GFLOP"] = benchmark::Counter(
      flops_per_iter * static_cast<double>(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
}

void SetByteRate(benchmark::State& state, double bytes_per_iter) {
  state.counters["GB"] = benchmark::Counter(
      bytes_per_iter * static_cast<double>(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
}

void SetBoundRate(benchmark::State& state, double bytes_per_iter, double footprint_bytes,
                  int threads) {
  SetByteRate(state, bytes_per_iter);
  const double bound = TriadBoundGBps(static_cast<int64_t>(footprint_bytes), threads);
  state.counters["bound_GB"] = bound;
  // Rate-inverted: Google Benchmark shows seconds / value, i.e. the time of one iteration over
  // the time its bytes take at the bound.
  state.counters["x_bound"] = benchmark::Counter(
      bytes_per_iter * static_cast<double>(state.iterations()) / (bound * 1e9),
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void ThreadArgs(benchmark::internal::Benchmark* b) {
  b->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMicrosecond);
}

void RunAdamWSteps(benchmark::State& state, int64_t n, int threads, int slot) {
  kernels::SetNumThreads(threads);
  float* p = Buffer(slot, n);
  float* m = Buffer(slot + 1, n);
  float* v = Buffer(slot + 2, n);
  const float* g = Buffer(slot + 3, n);
  kernels::AdamWHyper h;
  h.lr = 6e-4f;
  h.weight_decay = 0.1f;
  for (auto _ : state) {
    kernels::AdamWUpdate(p, m, v, g, n, h);
    ++h.step;
    benchmark::ClobberMemory();
  }
  SetBoundRate(state, 28.0 * n, 16.0 * n, threads);
}

}  // namespace accel::bench
