// Memory-bound kernels of accel_bench_kernels against a measured bandwidth bound: GPT-2's GELU
// and LayerNorm forward and backward (B·T = 1024 rows, C = 768, the MLP's 4C = 3072), the
// fused softmax cross-entropy over the vocabulary (N = 256 rows, V = 50257; the backward in
// place, as the lm_head runs it), the causal softmax inside attention (B = 4, 12 heads, T = 256,
// each head a call as attention makes it) and AdamW over 1M and 10M parameters; each at 1 and 2
// threads. Every one reports GB/s of the bytes it must read and write, "bound_GB", a triad over
// the same footprint measured in this run (stream_bound.h), and "x_bound", its time over the
// bound's (the goal is <= 1.5). RMSNorm (kernels_bench_blocks.cc) and AdamW over all 124M
// parameters (kernels_bench.cc) report the same counters.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "bench/kernels_bench_util.h"
#include "engine/kernels/cross_entropy.h"
#include "engine/kernels/elementwise.h"
#include "engine/kernels/layernorm.h"
#include "engine/kernels/softmax.h"
#include "engine/kernels/threading.h"

namespace accel::bench {
namespace {

constexpr int64_t kRows = 1024;      // B * T
constexpr int64_t kChannels = 768;   // C
constexpr int64_t kHidden = 3072;    // 4C, the GELU's width
constexpr int64_t kCeRows = 256;     // the lm_head's rows per step (B = 4, T = 64)
constexpr int64_t kVocab = 50257;    // V

int Threads(const benchmark::State& state) { return static_cast<int>(state.range(0)); }

// Args: threads. out = gelu(inp) over (N, 4C): 8 bytes per element.
void BM_GeluForward(benchmark::State& state) {
  kernels::SetNumThreads(Threads(state));
  const int64_t n = kRows * kHidden;
  float* out = Buffer(60, n);
  const float* inp = Buffer(61, n);
  for (auto _ : state) {
    kernels::GeluForward(out, inp, n);
    benchmark::ClobberMemory();
  }
  SetBoundRate(state, 8.0 * n, 8.0 * n, Threads(state));
}

// Args: threads. dinp += gelu'(inp) dout: reads inp, dout, dinp and writes dinp.
void BM_GeluBackward(benchmark::State& state) {
  kernels::SetNumThreads(Threads(state));
  const int64_t n = kRows * kHidden;
  float* dinp = Buffer(62, n);
  const float* inp = Buffer(61, n);
  const float* dout = Buffer(63, n);
  for (auto _ : state) {
    kernels::GeluBackward(dinp, inp, dout, n);
    benchmark::ClobberMemory();
  }
  SetBoundRate(state, 16.0 * n, 12.0 * n, Threads(state));
}

// Args: threads. LayerNorm (N, C) forward: reads inp, writes out (the (C) and (N) operands are
// noise).
void BM_LayerNormForward(benchmark::State& state) {
  kernels::SetNumThreads(Threads(state));
  const int64_t N = kRows, C = kChannels;
  float* out = Buffer(64, N * C);
  float* mean = Buffer(65, N);
  float* rstd = Buffer(66, N);
  const float* inp = Buffer(67, N * C);
  const float* w = Buffer(68, C);
  const float* b = Buffer(69, C);
  for (auto _ : state) {
    kernels::LayerNormForward(out, mean, rstd, inp, w, b, N, C);
    benchmark::ClobberMemory();
  }
  SetBoundRate(state, 8.0 * N * C, 8.0 * N * C, Threads(state));
}

// Args: threads. LayerNorm backward: reads dout, inp and dinp, writes dinp.
void BM_LayerNormBackward(benchmark::State& state) {
  kernels::SetNumThreads(Threads(state));
  const int64_t N = kRows, C = kChannels;
  float* dinp = Buffer(70, N * C);
  float* dw = Buffer(71, C);
  float* db = Buffer(72, C);
  const float* dout = Buffer(73, N * C);
  const float* inp = Buffer(67, N * C);
  const float* w = Buffer(68, C);
  float* mean = Buffer(65, N);
  float* rstd = Buffer(66, N);
  kernels::LayerNormForward(Buffer(64, N * C), mean, rstd, inp, w, Buffer(69, C), N, C);
  for (auto _ : state) {
    kernels::LayerNormBackward(dinp, dw, db, dout, inp, w, mean, rstd, N, C);
    benchmark::ClobberMemory();
  }
  SetBoundRate(state, 16.0 * N * C, 12.0 * N * C, Threads(state));
}

std::vector<int32_t> Targets(int64_t n) {
  std::vector<int32_t> t(n);
  for (int64_t i = 0; i < n; ++i) t[i] = static_cast<int32_t>((i * 7919) % kVocab);
  return t;
}

// Args: threads. Losses of (N, V) logits: reads them once from memory (a 200 KB row stays in L2
// for its passes).
void BM_CrossEntropyForward(benchmark::State& state) {
  kernels::SetNumThreads(Threads(state));
  const int64_t N = kCeRows, V = kVocab;
  float* losses = Buffer(74, N);
  const float* logits = Buffer(75, N * V);
  const std::vector<int32_t> targets = Targets(N);
  for (auto _ : state) {
    kernels::SoftmaxCrossEntropyForward(losses, logits, targets.data(), N, V);
    benchmark::ClobberMemory();
  }
  SetBoundRate(state, 4.0 * N * V, 4.0 * N * V, Threads(state));
}

// Args: threads. Losses and dlogits written over the logits (in place, as lm_head.cc calls it):
// reads and writes (N, V) once.
void BM_CrossEntropyBackward(benchmark::State& state) {
  kernels::SetNumThreads(Threads(state));
  const int64_t N = kCeRows, V = kVocab;
  float* losses = Buffer(74, N);
  float* logits = Buffer(76, N * V);
  const std::vector<int32_t> targets = Targets(N);
  for (auto _ : state) {
    // From the second iteration on the rows are probabilities: as good logits as any.
    kernels::SoftmaxCrossEntropyBackward(logits, losses, logits, targets.data(), N, V,
                                         1.0f / static_cast<float>(N));
    benchmark::ClobberMemory();
  }
  SetBoundRate(state, 8.0 * N * V, 4.0 * N * V, Threads(state));
}

constexpr int64_t kHeads = 4 * 12;  // B * NH
constexpr int64_t kSeq = 256;       // T

// Bytes of one head's causal softmax forward: reads the causal half, writes the whole (T, T).
double SoftmaxForwardBytes() { return 4.0 * (kSeq * (kSeq + 1) / 2 + kSeq * kSeq); }

// Args: threads. Causal softmax of (T, T) scores, in place, one call per head, heads spread over
// the threads as attention.cc spreads them.
void BM_CausalSoftmaxForward(benchmark::State& state) {
  kernels::SetNumThreads(Threads(state));
  float* att = Buffer(77, kHeads * kSeq * kSeq);
  for (auto _ : state) {
#pragma omp parallel for schedule(static)
    for (int64_t h = 0; h < kHeads; ++h) {
      kernels::CausalSoftmaxForward(att + h * kSeq * kSeq, kSeq, 0, kSeq, 0);
    }
    benchmark::ClobberMemory();
  }
  SetBoundRate(state, kHeads * SoftmaxForwardBytes(), 4.0 * kHeads * kSeq * kSeq,
               Threads(state));
}

// Args: threads. Causal softmax backward: reads att and datt over the causal half, writes ds
// (T, T). ds is restored from datt outside the timing: applied to its own output the backward
// shrinks it by ~1/T a pass, into denormals within a few passes.
void BM_CausalSoftmaxBackward(benchmark::State& state) {
  kernels::SetNumThreads(Threads(state));
  const int64_t n = kHeads * kSeq * kSeq;
  float* att = Buffer(78, n);
  const float* datt = Buffer(79, n);
  float* ds = Buffer(80, n);
  for (int64_t h = 0; h < kHeads; ++h) {
    kernels::CausalSoftmaxForward(att + h * kSeq * kSeq, kSeq, 0, kSeq, 0);
  }
  for (auto _ : state) {
    state.PauseTiming();
    std::memcpy(ds, datt, n * sizeof(float));
    state.ResumeTiming();
#pragma omp parallel for schedule(static)
    for (int64_t h = 0; h < kHeads; ++h) {
      kernels::CausalSoftmaxBackward(ds + h * kSeq * kSeq, att + h * kSeq * kSeq, kSeq, 0, kSeq,
                                     0.125f);
    }
    benchmark::ClobberMemory();
  }
  const double bytes = 4.0 * (2 * kSeq * (kSeq + 1) / 2 + kSeq * kSeq);
  SetBoundRate(state, kHeads * bytes, 8.0 * n, Threads(state));
}

// Args: n, threads. One optimizer step (reads p, m, v, g; writes p, m, v: 28 bytes a parameter).
void BM_AdamWRange(benchmark::State& state) {
  RunAdamWSteps(state, state.range(0), static_cast<int>(state.range(1)), /*slot=*/81);
}

BENCHMARK(BM_GeluForward)->Apply(ThreadArgs);
BENCHMARK(BM_GeluBackward)->Apply(ThreadArgs);
BENCHMARK(BM_LayerNormForward)->Apply(ThreadArgs);
BENCHMARK(BM_LayerNormBackward)->Apply(ThreadArgs);
BENCHMARK(BM_CrossEntropyForward)->Apply(ThreadArgs);
BENCHMARK(BM_CrossEntropyBackward)->Apply(ThreadArgs);
BENCHMARK(BM_CausalSoftmaxForward)->Apply(ThreadArgs);
BENCHMARK(BM_CausalSoftmaxBackward)->Apply(ThreadArgs);
BENCHMARK(BM_AdamWRange)
    ->ArgNames({"n", "threads"})
    ->ArgsProduct({{int64_t{1} << 20, 10 * (int64_t{1} << 20)}, {1, 2}})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace accel::bench
