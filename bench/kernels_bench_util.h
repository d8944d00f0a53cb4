// Shared by the kernel benchmarks of accel_bench_kernels (kernels_bench.cc: the linear layers,
// the lm_head and AdamW; kernels_bench_blocks.cc: norms, RoPE, SwiGLU and attention): operand
// buffers kept for the whole run, the rate counters, one AdamW step (for the 124M and the 1M-10M
// benchmarks alike) and the SmolLM-135M-like Llama shapes.
#pragma once

#include <benchmark/benchmark.h>

#include <cstdint>

namespace accel::bench {

// SmolLM-135M-like Llama shapes.
inline constexpr int64_t kLlamaTokens = 1024;   // N = B * T
inline constexpr int64_t kLlamaChannels = 576;  // C (hidden size)
inline constexpr int64_t kLlamaInter = 1536;    // I (MLP intermediate size)
inline constexpr int64_t kLlamaHeads = 9;       // H
inline constexpr int64_t kLlamaKvHeads = 3;     // KV
inline constexpr int64_t kLlamaHeadDim = 64;    // D

// A 64-byte-aligned array of n floats, filled once with small deterministic values and kept
// for the whole run (lm_head and AdamW buffers are hundreds of MB; refilling them per
// benchmark invocation would dominate the run time). `slot` distinguishes operands.
float* Buffer(int slot, int64_t n);
// The same operand as Buffer(slot, n), rounded to bf16 once.
const uint16_t* Bf16Buffer(int slot, int64_t n);

// GFLOP/s and GB/s counters from the work of one iteration.
void SetFlopRate(benchmark::State& state, double flops_per_iter);
void SetByteRate(benchmark::State& state, double bytes_per_iter);
// For a memory-bound kernel: SetByteRate, plus "bound_GB", the triad bandwidth on `threads`
// threads over the same `footprint_bytes` of distinct memory (stream_bound.h, measured once in
// this run), and "x_bound", the kernel's time as a multiple of moving its bytes at that rate
// (1.0 is the bound; the goal is at most 1.5).
void SetBoundRate(benchmark::State& state, double bytes_per_iter, double footprint_bytes,
                  int threads);

// One AdamW step over n parameters per iteration, on buffers slot..slot+3 (p, m, v, g), with the
// bound counters of its 28 bytes read and written per parameter (16 bytes of footprint).
void RunAdamWSteps(benchmark::State& state, int64_t n, int threads, int slot);

// Args: threads 1 and 2, real time in microseconds.
void ThreadArgs(benchmark::internal::Benchmark* b);

}  // namespace accel::bench
