// Fast-path CPU kernel throughput at the GPT-2 124M shapes with N = 256 tokens per step:
// the linear layers forward and backward (GFLOP/s) in fp32 and in bf16 (matmul_bf16.h, the bf16
// mixed-precision path, next to fp32 in the same run), the tied lm_head GEMMs, and AdamW over
// all 124M parameters (params/s), and causal attention forward and backward (GPT-2's
// attention.h at its 12 heads of 64; grouped-query gqa_attention.h at H = 9, KV = 3 and at GPT-2's
// H = KV = 12, all at B = 4, T = 256, in GFLOP/s of the causal half), each at 1 and 2 threads.
// The measured FMA peak is printed first (and stored in the JSON context) as the yardstick. The
// Llama-family kernels (RMSNorm, RoPE, SwiGLU, the nn.Linear-oriented linear layers) run at
// SmolLM-135M-like shapes with N = 1024 tokens: C = 576, I = 1536, 9 query heads, 3 key/value
// heads, head size 64.
//   accel_bench_kernels [--benchmark_filter=Lm] [--benchmark_min_time=0.1]
#include <benchmark/benchmark.h>
#include <oneapi/dnnl/dnnl.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "bench/fma_peak.h"
#include "engine/kernels/adamw.h"
#include "engine/kernels/attention.h"
#include "engine/kernels/gqa_attention.h"
#include "engine/kernels/matmul.h"
#include "engine/kernels/matmul_bf16.h"
#include "engine/kernels/rmsnorm.h"
#include "engine/kernels/rope.h"
#include "engine/kernels/swiglu.h"
#include "engine/kernels/threading.h"
#include "engine/tensor/dtype.h"

namespace accel::bench {
namespace {

constexpr int64_t kTokens = 256;          // N = B * T per step
constexpr int64_t kChannels = 768;        // C
constexpr int64_t kVocab = 50257;         // V
constexpr int64_t kGpt2Params = 124439808;  // GPT-2 124M with the tied wte

// SmolLM-135M-like Llama shapes.
constexpr int64_t kLlamaTokens = 1024;   // N = B * T
constexpr int64_t kLlamaChannels = 576;  // C (hidden size)
constexpr int64_t kLlamaInter = 1536;    // I (MLP intermediate size)
constexpr int64_t kLlamaHeads = 9;       // H
constexpr int64_t kLlamaKvHeads = 3;     // KV
constexpr int64_t kLlamaHeadDim = 64;    // D

struct FreeDeleter {
  void operator()(float* p) const { std::free(p); }
};

// A 64-byte-aligned array of n floats, filled once with small deterministic values and kept
// for the whole run (lm_head and AdamW buffers are hundreds of MB; refilling them per
// benchmark invocation would dominate the run time). `slot` distinguishes operands.
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

// The same operand as Buffer(slot, n), rounded to bf16 once.
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

// Args: threads. RMSNorm (N, C) forward: reads inp, writes out (8 bytes per element).
void BM_RmsNormForward(benchmark::State& state) {
  kernels::SetNumThreads(static_cast<int>(state.range(0)));
  const int64_t N = kLlamaTokens, C = kLlamaChannels;
  float* out = Buffer(30, N * C);
  float* rstd = Buffer(31, N);
  const float* inp = Buffer(32, N * C);
  const float* w = Buffer(33, C);
  for (auto _ : state) {
    kernels::RmsNormForward(out, rstd, inp, w, N, C, 1e-5f);
    benchmark::ClobberMemory();
  }
  SetByteRate(state, 8.0 * N * C);
}

// Args: threads. RMSNorm backward: reads dout, inp and dinp, writes dinp (16 bytes per element).
void BM_RmsNormBackward(benchmark::State& state) {
  kernels::SetNumThreads(static_cast<int>(state.range(0)));
  const int64_t N = kLlamaTokens, C = kLlamaChannels;
  float* dinp = Buffer(34, N * C);
  float* dw = Buffer(35, C);
  const float* dout = Buffer(36, N * C);
  const float* inp = Buffer(32, N * C);
  const float* w = Buffer(33, C);
  float* rstd = Buffer(31, N);
  kernels::RmsNormForward(Buffer(30, N * C), rstd, inp, w, N, C, 1e-5f);
  for (auto _ : state) {
    kernels::RmsNormBackward(dinp, dw, dout, inp, w, rstd, N, C);
    benchmark::ClobberMemory();
  }
  SetByteRate(state, 16.0 * N * C);
}

// Args: threads, inverse (0 forward, 1 backward). RoPE in place on the q and k heads of a packed
// (1, N, (H + 2 KV) D) qkv: reads and writes them (8 bytes per rotated element).
void BM_Rope(benchmark::State& state) {
  kernels::SetNumThreads(static_cast<int>(state.range(0)));
  const int64_t T = kLlamaTokens, H = kLlamaHeads, KV = kLlamaKvHeads, D = kLlamaHeadDim;
  float* qkv = Buffer(40, T * (H + 2 * KV) * D);
  float* cos = Buffer(41, T * D / 2);
  float* sin = Buffer(42, T * D / 2);
  std::vector<float> inv_freq(D / 2);
  for (int64_t i = 0; i < D / 2; ++i) inv_freq[i] = std::pow(10000.0f, -2.0f * i / D);
  kernels::RopeTable(cos, sin, inv_freq.data(), T, D);
  const auto rope = state.range(1) != 0 ? kernels::RopeBackward : kernels::RopeForward;
  for (auto _ : state) {
    rope(qkv, cos, sin, 1, T, H, KV, D);
    benchmark::ClobberMemory();
  }
  SetByteRate(state, 8.0 * T * (H + KV) * D);
}

// Args: threads. SwiGLU forward: reads gate_up (N, 2I), writes out (N, I).
void BM_SwiGluForward(benchmark::State& state) {
  kernels::SetNumThreads(static_cast<int>(state.range(0)));
  const int64_t N = kLlamaTokens, I = kLlamaInter;
  float* out = Buffer(50, N * I);
  const float* gate_up = Buffer(51, N * 2 * I);
  for (auto _ : state) {
    kernels::SwiGluForward(out, gate_up, N, I);
    benchmark::ClobberMemory();
  }
  SetByteRate(state, 12.0 * N * I);
}

// Args: threads. SwiGLU backward: reads dout (N, I) and gate_up (N, 2I), writes dgate_up.
void BM_SwiGluBackward(benchmark::State& state) {
  kernels::SetNumThreads(static_cast<int>(state.range(0)));
  const int64_t N = kLlamaTokens, I = kLlamaInter;
  float* dgate_up = Buffer(52, N * 2 * I);
  const float* dout = Buffer(50, N * I);
  const float* gate_up = Buffer(51, N * 2 * I);
  for (auto _ : state) {
    kernels::SwiGluBackward(dgate_up, dout, gate_up, N, I);
    benchmark::ClobberMemory();
  }
  SetByteRate(state, 20.0 * N * I);
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
  kernels::SetNumThreads(static_cast<int>(state.range(0)));
  const int64_t n = kGpt2Params;
  float* p = Buffer(20, n);
  float* m = Buffer(21, n);
  float* v = Buffer(22, n);
  const float* g = Buffer(23, n);
  kernels::AdamWHyper h;
  h.lr = 6e-4f;
  h.weight_decay = 0.1f;
  for (auto _ : state) {
    kernels::AdamWUpdate(p, m, v, g, n, h);
    ++h.step;
    benchmark::ClobberMemory();
  }
  const double iters = static_cast<double>(state.iterations());
  state.counters["params"] = benchmark::Counter(n * iters, benchmark::Counter::kIsRate);
  state.counters["GB"] = benchmark::Counter(28.0 * n * iters / 1e9, benchmark::Counter::kIsRate);
}

// Args: threads. The global-norm pass over all gradients.
void BM_SquaredL2Norm(benchmark::State& state) {
  kernels::SetNumThreads(static_cast<int>(state.range(0)));
  const float* g = Buffer(23, kGpt2Params);
  for (auto _ : state) benchmark::DoNotOptimize(kernels::SquaredL2Norm(g, kGpt2Params));
  state.counters["params"] = benchmark::Counter(
      static_cast<double>(kGpt2Params) * state.iterations(), benchmark::Counter::kIsRate);
}

constexpr int64_t kAttnBatch = 4, kAttnSeq = 256, kHeadDim = 64;

// Multiply-adds of one head's causal products (q·kᵀ or att·v over the T(T+1)/2 visible pairs),
// times 2 for FLOPs, over the batch: the forward does two of these, the backward four.
double CausalHeadFlops(int64_t heads) {
  return 2.0 * kAttnBatch * heads * kHeadDim * kAttnSeq * (kAttnSeq + 1) / 2;
}

// Args: threads. GPT-2 attention, C = 768, NH = 12.
void BM_AttentionForward(benchmark::State& state) {
  kernels::SetNumThreads(static_cast<int>(state.range(0)));
  const int64_t NH = 12, C = NH * kHeadDim;
  float* out = Buffer(30, kAttnBatch * kAttnSeq * C);
  float* att = Buffer(31, kAttnBatch * NH * kAttnSeq * kAttnSeq);
  const float* qkv = Buffer(32, kAttnBatch * kAttnSeq * 3 * C);
  for (auto _ : state) {
    kernels::AttentionForward(out, att, qkv, kAttnBatch, kAttnSeq, C, NH);
    benchmark::ClobberMemory();
  }
  SetFlopRate(state, 2 * CausalHeadFlops(NH));
}

void BM_AttentionBackward(benchmark::State& state) {
  kernels::SetNumThreads(static_cast<int>(state.range(0)));
  const int64_t NH = 12, C = NH * kHeadDim;
  float* dqkv = Buffer(33, kAttnBatch * kAttnSeq * 3 * C);
  const float* dout = Buffer(34, kAttnBatch * kAttnSeq * C);
  const float* qkv = Buffer(32, kAttnBatch * kAttnSeq * 3 * C);
  float* att = Buffer(31, kAttnBatch * NH * kAttnSeq * kAttnSeq);
  kernels::AttentionForward(Buffer(30, kAttnBatch * kAttnSeq * C), att, qkv, kAttnBatch, kAttnSeq,
                            C, NH);  // a real softmax to differentiate
  for (auto _ : state) {
    kernels::AttentionBackward(dqkv, dout, qkv, att, kAttnBatch, kAttnSeq, C, NH);
    benchmark::ClobberMemory();
  }
  SetFlopRate(state, 4 * CausalHeadFlops(NH));
}

// Args: H, KV, threads. Grouped-query attention, D = 64.
void BM_GqaAttentionForward(benchmark::State& state) {
  const int64_t H = state.range(0), KV = state.range(1);
  kernels::SetNumThreads(static_cast<int>(state.range(2)));
  float* out = Buffer(40, kAttnBatch * kAttnSeq * H * kHeadDim);
  float* att = Buffer(41, kAttnBatch * H * kAttnSeq * kAttnSeq);
  const float* qkv = Buffer(42, kAttnBatch * kAttnSeq * (H + 2 * KV) * kHeadDim);
  for (auto _ : state) {
    kernels::GqaAttentionForward(out, att, qkv, kAttnBatch, kAttnSeq, H, KV, kHeadDim);
    benchmark::ClobberMemory();
  }
  SetFlopRate(state, 2 * CausalHeadFlops(H));
}

void BM_GqaAttentionBackward(benchmark::State& state) {
  const int64_t H = state.range(0), KV = state.range(1);
  kernels::SetNumThreads(static_cast<int>(state.range(2)));
  const int64_t width = (H + 2 * KV) * kHeadDim;
  float* dqkv = Buffer(43, kAttnBatch * kAttnSeq * width);
  const float* dout = Buffer(44, kAttnBatch * kAttnSeq * H * kHeadDim);
  const float* qkv = Buffer(42, kAttnBatch * kAttnSeq * width);
  float* att = Buffer(41, kAttnBatch * H * kAttnSeq * kAttnSeq);
  kernels::GqaAttentionForward(Buffer(40, kAttnBatch * kAttnSeq * H * kHeadDim), att, qkv,
                               kAttnBatch, kAttnSeq, H, KV, kHeadDim);
  for (auto _ : state) {
    kernels::GqaAttentionBackward(dqkv, dout, qkv, att, kAttnBatch, kAttnSeq, H, KV, kHeadDim);
    benchmark::ClobberMemory();
  }
  SetFlopRate(state, 4 * CausalHeadFlops(H));
}

void AttentionThreadArgs(benchmark::internal::Benchmark* b) {
  b->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);
}

// Llama-like 9 query heads over 3 kv heads, and GPT-2's 12 over 12 (next to BM_Attention*).
void GqaArgs(benchmark::internal::Benchmark* b) {
  b->ArgNames({"H", "KV", "threads"});
  for (int threads : {1, 2}) {
    b->Args({9, 3, threads});
    b->Args({12, 12, threads});
  }
  b->UseRealTime()->Unit(benchmark::kMillisecond);
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

void ThreadArgs(benchmark::internal::Benchmark* b) {
  b->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMicrosecond);
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
BENCHMARK(BM_RmsNormForward)->Apply(ThreadArgs);
BENCHMARK(BM_RmsNormBackward)->Apply(ThreadArgs);
BENCHMARK(BM_Rope)
    ->ArgNames({"threads", "inverse"})
    ->ArgsProduct({{1, 2}, {0, 1}})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SwiGluForward)->Apply(ThreadArgs);
BENCHMARK(BM_SwiGluBackward)->Apply(ThreadArgs);
BENCHMARK(BM_LmHeadForward)->Apply(BigArgs);
BENCHMARK(BM_LmHeadBackward)->Apply(BigArgs);
BENCHMARK(BM_AdamW)->Apply(BigArgs);
BENCHMARK(BM_SquaredL2Norm)->Apply(BigArgs);
BENCHMARK(BM_AttentionForward)->Apply(AttentionThreadArgs);
BENCHMARK(BM_AttentionBackward)->Apply(AttentionThreadArgs);
BENCHMARK(BM_GqaAttentionForward)->Apply(GqaArgs);
BENCHMARK(BM_GqaAttentionBackward)->Apply(GqaArgs);

}  // namespace
}  // namespace accel::bench

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  const dnnl_version_t* ver = dnnl_version();
  std::string onednn = std::to_string(ver->major) + "." + std::to_string(ver->minor) + "." +
                       std::to_string(ver->patch);
  benchmark::AddCustomContext("onednn", onednn);
  for (int threads : {1, 2}) {
    const double peak = accel::bench::MeasureFmaPeakGflops(threads, 0.25);
    std::printf("fp32 FMA peak, %d thread(s): %.1f GFLOP/s\n", threads, peak);
    benchmark::AddCustomContext("fma_peak_gflops_" + std::to_string(threads) + "t",
                                std::to_string(peak));
  }
  std::fflush(stdout);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
