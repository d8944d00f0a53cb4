// Fast-path CPU kernel throughput, accel_bench_kernels: the linear layers forward and backward
// (GFLOP/s) in fp32 and in bf16 (matmul_bf16.h, the bf16 mixed-precision path, next to fp32 in
// the same run) at GPT-2 124M shapes with N = 256 tokens (Conv1D orientation) and at
// SmolLM-135M-like shapes with N = 1024 (nn.Linear orientation: C = 576, I = 1536, 9 query heads,
// 3 key/value heads, head size 64), the tied lm_head GEMMs, and AdamW over all 124M parameters
// (params/s), each at 1 and 2 threads; kernels_bench_blocks.cc adds the norms, RoPE, SwiGLU and
// attention, kernels_bench_elementwise.cc GELU, LayerNorm, the softmaxes and AdamW against a
// bandwidth bound. The CPU's model and key ISA flags, the measured FMA peak (1 core, and 2 threads
// at once) and the DRAM triad bandwidth are printed first (and stored in the JSON context) as the
// yardsticks.
//   accel_bench_kernels [--benchmark_filter=Lm] [--benchmark_min_time=0.1]
#include <benchmark/benchmark.h>
#include <oneapi/dnnl/dnnl.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>

#include "bench/kernels_bench_util.h"
#include "bench/machine.h"
#include "bench/stream_bound.h"
#include "engine/kernels/adamw.h"  // SquaredL2Norm
#include "engine/kernels/matmul.h"
#include "engine/kernels/matmul_bf16.h"
#include "engine/kernels/threading.h"

namespace accel::bench {
namespace {

constexpr int64_t kTokens = 256;          // N = B * T per step
constexpr int64_t kChannels = 768;        // C
constexpr int64_t kVocab = 50257;         // V
constexpr int64_t kGpt2Params = 124439808;  // GPT-2 124M with the tied wte

using ForwardFn = void (*)(float*, const float*, const float*, const float*, int64_t, int64_t,
                           int64_t);
using BackwardFn = void (*)(float*, float*, float*, const float*, const float*, const float*,
                            int64_t, int64_t, int64_t);
using ForwardBf16Fn = void (*)(float*, const uint16_t*, const uint16_t*, const float*, int64_t,
                               int64_t, int64_t);
using BackwardBf16Fn = void (*)(float*, float*, float*, const float*, const uint16_t*,
                                const uint16_t*, const uint16_t*, int64_t, int64_t, int64_t);

// Args: IC, OC, threads. A linear layer's forward over N tokens (either weight orientation: the
// weight buffer holds IC * OC values).
void RunLinearForward(benchmark::State& state, ForwardFn forward, int64_t N) {
  const int64_t IC = state.range(0), OC = state.range(1);
  kernels::SetNumThreads(static_cast<int>(state.range(2)));
  float* out = Buffer(0, N * OC);
  const float* inp = Buffer(1, N * IC);
  const float* w = Buffer(2, IC * OC);
  const float* bias = Buffer(3, OC);
  forward(out, inp, w, bias, N, IC, OC);  // warm-up
  for (auto _ : state) {
    forward(out, inp, w, bias, N, IC, OC);
    benchmark::ClobberMemory();
  }
  SetFlopRate(state, 2.0 * N * IC * OC);
}

// Args: IC, OC, threads. dinp, dweight and dbias together (two GEMMs of the forward's size).
void RunLinearBackward(benchmark::State& state, BackwardFn backward, int64_t N) {
  const int64_t IC = state.range(0), OC = state.range(1);
  kernels::SetNumThreads(static_cast<int>(state.range(2)));
  float* dinp = Buffer(4, N * IC);
  float* dw = Buffer(5, IC * OC);
  float* db = Buffer(6, OC);
  const float* dout = Buffer(7, N * OC);
  const float* inp = Buffer(1, N * IC);
  const float* w = Buffer(2, IC * OC);
  backward(dinp, dw, db, dout, inp, w, N, IC, OC);
  for (auto _ : state) {
    backward(dinp, dw, db, dout, inp, w, N, IC, OC);
    benchmark::ClobberMemory();
  }
  SetFlopRate(state, 4.0 * N * IC * OC);
}

// Args: IC, OC, threads. RunLinearForward with bf16 input and weight (fp32 accumulation).
void RunLinearForwardBf16(benchmark::State& state, ForwardBf16Fn forward, int64_t N) {
  const int64_t IC = state.range(0), OC = state.range(1);
  kernels::SetNumThreads(static_cast<int>(state.range(2)));
  float* out = Buffer(0, N * OC);
  const uint16_t* inp = Bf16Buffer(1, N * IC);
  const uint16_t* w = Bf16Buffer(2, IC * OC);
  const float* bias = Buffer(3, OC);
  forward(out, inp, w, bias, N, IC, OC);  // warm-up (primitive)
  for (auto _ : state) {
    forward(out, inp, w, bias, N, IC, OC);
    benchmark::ClobberMemory();
  }
  SetFlopRate(state, 2.0 * N * IC * OC);
}

// Args: IC, OC, threads. RunLinearBackward with bf16 dout, input and weight.
void RunLinearBackwardBf16(benchmark::State& state, BackwardBf16Fn backward, int64_t N) {
  const int64_t IC = state.range(0), OC = state.range(1);
  kernels::SetNumThreads(static_cast<int>(state.range(2)));
  float* dinp = Buffer(4, N * IC);
  float* dw = Buffer(5, IC * OC);
  float* db = Buffer(6, OC);
  const float* dout = Buffer(7, N * OC);
  const uint16_t* dout16 = Bf16Buffer(7, N * OC);
  const uint16_t* inp = Bf16Buffer(1, N * IC);
  const uint16_t* w = Bf16Buffer(2, IC * OC);
  backward(dinp, dw, db, dout, dout16, inp, w, N, IC, OC);
  for (auto _ : state) {
    backward(dinp, dw, db, dout, dout16, inp, w, N, IC, OC);
    benchmark::ClobberMemory();
  }
  SetFlopRate(state, 4.0 * N * IC * OC);
}

// GPT-2 (Conv1D orientation, weight (IC, OC)) at kTokens.
void BM_MatmulForward(benchmark::State& state) {
  RunLinearForward(state, kernels::MatmulForward, kTokens);
}
void BM_MatmulBackward(benchmark::State& state) {
  RunLinearBackward(state, kernels::MatmulBackward, kTokens);
}
void BM_MatmulForwardBf16(benchmark::State& state) {
  RunLinearForwardBf16(state, kernels::MatmulForwardBf16, kTokens);
}
void BM_MatmulBackwardBf16(benchmark::State& state) {
  RunLinearBackwardBf16(state, kernels::MatmulBackwardBf16, kTokens);
}

// Llama (nn.Linear orientation, weight (OC, IC)) at kLlamaTokens.
void BM_LinearForward(benchmark::State& state) {
  RunLinearForward(state, kernels::LinearForward, kLlamaTokens);
}
void BM_LinearBackward(benchmark::State& state) {
  RunLinearBackward(state, kernels::LinearBackward, kLlamaTokens);
}
void BM_LinearForwardBf16(benchmark::State& state) {
  RunLinearForwardBf16(state, kernels::LinearForwardBf16, kLlamaTokens);
}
void BM_LinearBackwardBf16(benchmark::State& state) {
  RunLinearBackwardBf16(state, kernels::LinearBackwardBf16, kLlamaTokens);
}

// Args: threads. logits (N, V) = x (N, C) · wteᵀ, wte (V, C).
void BM_LmHeadForward(benchmark::State& state) {
  kernels::SetNumThreads(static_cast<int>(state.range(0)));
  float* logits = Buffer(8, kTokens * kVocab);
  const float* x = Buffer(1, kTokens * kChannels);
  const float* wte = Buffer(9, kVocab * kChannels);
  for (auto _ : state) {
    kernels::Gemm(false, true, kTokens, kVocab, kChannels, 1.0f, x, kChannels, wte, kChannels,
                  0.0f, logits, kVocab);
    benchmark::ClobberMemory();
  }
  SetFlopRate(state, 2.0 * kTokens * kVocab * kChannels);
}

// Args: threads. dx (N, C) += dlogits · wte; dwte (V, C) += dlogitsᵀ · x.
void BM_LmHeadBackward(benchmark::State& state) {
  kernels::SetNumThreads(static_cast<int>(state.range(0)));
  const float* dlogits = Buffer(10, kTokens * kVocab);
  const float* x = Buffer(1, kTokens * kChannels);
  const float* wte = Buffer(9, kVocab * kChannels);
  float* dx = Buffer(11, kTokens * kChannels);
  float* dwte = Buffer(12, kVocab * kChannels);
  for (auto _ : state) {
    kernels::Gemm(false, false, kTokens, kChannels, kVocab, 1.0f, dlogits, kVocab, wte,
                  kChannels, 1.0f, dx, kChannels);
    kernels::Gemm(true, false, kVocab, kChannels, kTokens, 1.0f, dlogits, kVocab, x, kChannels,
                  1.0f, dwte, kChannels);
    benchmark::ClobberMemory();
  }
  SetFlopRate(state, 4.0 * kTokens * kVocab * kChannels);
}

// Args: threads. One optimizer step over all GPT-2 124M parameters (reads p, m, v, g; writes
// p, m, v: 28 bytes per parameter).
void BM_AdamW(benchmark::State& state) {
  const int64_t n = kGpt2Params;
  RunAdamWSteps(state, n, static_cast<int>(state.range(0)), /*slot=*/20);
  const double iters = static_cast<double>(state.iterations());
  state.counters["params"] = benchmark::Counter(n * iters, benchmark::Counter::kIsRate);
}

// Args: threads. The global-norm pass over all gradients.
void BM_SquaredL2Norm(benchmark::State& state) {
  kernels::SetNumThreads(static_cast<int>(state.range(0)));
  const float* g = Buffer(23, kGpt2Params);
  for (auto _ : state) benchmark::DoNotOptimize(kernels::SquaredL2Norm(g, kGpt2Params));
  state.counters["params"] = benchmark::Counter(
      static_cast<double>(kGpt2Params) * state.iterations(), benchmark::Counter::kIsRate);
}

// The GPT-2 block's four linear layers: qkv, attention proj, fc, fc proj.
void LinearArgs(benchmark::internal::Benchmark* b) {
  b->ArgNames({"IC", "OC", "threads"});
  for (int threads : {1, 2}) {
    for (auto [ic, oc] : {std::pair<int64_t, int64_t>{768, 2304}, {768, 768}, {768, 3072},
                          {3072, 768}}) {
      b->Args({ic, oc, threads});
    }
  }
  b->UseRealTime()->Unit(benchmark::kMillisecond);
}

// The Llama block's linear layers at SmolLM-135M shapes: fused qkv (C -> (H + 2 KV) D),
// o_proj, fused gate_up (C -> 2I), down_proj.
void LlamaLinearArgs(benchmark::internal::Benchmark* b) {
  b->ArgNames({"IC", "OC", "threads"});
  const int64_t qkv = (kLlamaHeads + 2 * kLlamaKvHeads) * kLlamaHeadDim;
  for (int threads : {1, 2}) {
    for (auto [ic, oc] : {std::pair<int64_t, int64_t>{kLlamaChannels, qkv},
                          {kLlamaChannels, kLlamaChannels},
                          {kLlamaChannels, 2 * kLlamaInter},
                          {kLlamaInter, kLlamaChannels}}) {
      b->Args({ic, oc, threads});
    }
  }
  b->UseRealTime()->Unit(benchmark::kMillisecond);
}

void BigArgs(benchmark::internal::Benchmark* b) {
  b->ArgName("threads")->Arg(1)->Arg(2)->Iterations(3)->UseRealTime()->Unit(
      benchmark::kMillisecond);
}

BENCHMARK(BM_MatmulForward)->Apply(LinearArgs);
BENCHMARK(BM_MatmulBackward)->Apply(LinearArgs);
BENCHMARK(BM_MatmulForwardBf16)->Apply(LinearArgs);
BENCHMARK(BM_MatmulBackwardBf16)->Apply(LinearArgs);
BENCHMARK(BM_LinearForward)->Apply(LlamaLinearArgs);
BENCHMARK(BM_LinearBackward)->Apply(LlamaLinearArgs);
BENCHMARK(BM_LinearForwardBf16)->Apply(LlamaLinearArgs);
BENCHMARK(BM_LinearBackwardBf16)->Apply(LlamaLinearArgs);
BENCHMARK(BM_LmHeadForward)->Apply(BigArgs);
BENCHMARK(BM_LmHeadBackward)->Apply(BigArgs);
BENCHMARK(BM_AdamW)->Apply(BigArgs);
BENCHMARK(BM_SquaredL2Norm)->Apply(BigArgs);

}  // namespace
}  // namespace accel::bench

int main(int argc, char** argv) {
  // The machine's lines go to stderr when stdout carries Google Benchmark's JSON.
  bool json = false;
  for (int i = 1; i < argc; ++i) json |= std::string(argv[i]) == "--benchmark_format=json";
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  const dnnl_version_t* ver = dnnl_version();
  std::string onednn = std::to_string(ver->major) + "." + std::to_string(ver->minor) + "." +
                       std::to_string(ver->patch);
  benchmark::AddCustomContext("onednn", onednn);
  // The benchmarks run at 1 and 2 threads: the peak on one core and on two threads at once.
  const accel::bench::Machine machine = accel::bench::MeasureMachine(2);
  std::FILE* text = json ? stderr : stdout;
  std::fprintf(text, "%s", accel::bench::MachineText(machine).c_str());
  benchmark::AddCustomContext("cpu_model_name", machine.cpu.model_name);
  benchmark::AddCustomContext("cpu_flags", accel::bench::KeyFlagsLine(machine.cpu));
  benchmark::AddCustomContext("fma_peak_isa", machine.peak.isa);
  benchmark::AddCustomContext("fma_peak_gflops_1t", std::to_string(machine.peak.per_core_gflops));
  benchmark::AddCustomContext("fma_peak_gflops_2t", std::to_string(machine.peak.all_core_gflops));
  // The DRAM bandwidth (a triad over 3 x 128 MiB); the memory-bound kernels also compare with a
  // triad over their own footprint, which may be cache resident (SetBoundRate).
  for (int threads : {1, 2}) {
    const double dram = accel::bench::MeasureTriadGBps(int64_t{384} << 20, threads, 0.5);
    std::fprintf(text, "DRAM triad, %d thread(s): %.1f GB/s\n", threads, dram);
    benchmark::AddCustomContext("dram_triad_gbps_" + std::to_string(threads) + "t",
                                std::to_string(dram));
  }
  std::fflush(stdout);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
