// Fast-path CPU throughput of the per-block kernels besides the GEMMs, in accel_bench_kernels
// (main and the linear layers in kernels_bench.cc): RMSNorm, RoPE and SwiGLU at SmolLM-135M-like
// shapes (N = 1024 tokens, C = 576, I = 1536, 9 query heads over 3 key/value heads of 64), in
// GB/s (RMSNorm also against the triad bound, kernels_bench_elementwise.cc); causal attention forward and backward (GPT-2's attention.h at its 12 heads of 64,
// grouped-query gqa_attention.h at H = 9, KV = 3 and at H = KV = 12, all at B = 4, T = 256), in
// GFLOP/s of the causal half; each at 1 and 2 threads.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "bench/kernels_bench_util.h"
#include "engine/kernels/attention.h"
#include "engine/kernels/gqa_attention.h"
#include "engine/kernels/rmsnorm.h"
#include "engine/kernels/rope.h"
#include "engine/kernels/swiglu.h"
#include "engine/kernels/threading.h"

namespace accel::bench {
namespace {

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
  SetBoundRate(state, 8.0 * N * C, 8.0 * N * C, static_cast<int>(state.range(0)));
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
  SetBoundRate(state, 16.0 * N * C, 12.0 * N * C, static_cast<int>(state.range(0)));
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

BENCHMARK(BM_RmsNormForward)->Apply(ThreadArgs);
BENCHMARK(BM_RmsNormBackward)->Apply(ThreadArgs);
BENCHMARK(BM_Rope)
    ->ArgNames({"threads", "inverse"})
    ->ArgsProduct({{1, 2}, {0, 1}})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SwiGluForward)->Apply(ThreadArgs);
BENCHMARK(BM_SwiGluBackward)->Apply(ThreadArgs);
BENCHMARK(BM_AttentionForward)->Apply(AttentionThreadArgs);
BENCHMARK(BM_AttentionBackward)->Apply(AttentionThreadArgs);
BENCHMARK(BM_GqaAttentionForward)->Apply(GqaArgs);
BENCHMARK(BM_GqaAttentionBackward)->Apply(GqaArgs);

}  // namespace
}  // namespace accel::bench
