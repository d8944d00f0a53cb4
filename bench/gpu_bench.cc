// GPU microbenchmarks of the CUDA kernels (engine/kernels/cuda/kernels.h) at GPT-2 124M shapes
// with B = 16, T = 1024 (N = 16384 tokens), then the GPT-2 124M bf16 training step
// (gpu_gpt2_step.cc) unless --micro-only. Prints one line per kernel: mean ms over the timed
// calls, and TFLOP/s (matmuls, attention) or GB/s of compulsory traffic (the rest).
//   accel_gpu_bench [--micro-only] [--iters N] [--steps N]
// Exits 0 with a note when there is no device; 1 when a kernel fails.
#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "bench/gpu_bench_util.h"
#include "bench/gpu_gpt2_step.h"
#include "engine/base/status_macros.h"
#include "engine/tensor/cuda/caching_allocator.h"
#include "engine/tensor/cuda/device.h"
#include "engine/kernels/cuda/kernels.h"
#include "engine/tensor/cuda/stream.h"

namespace accel::bench {
namespace {

namespace kc = ::accel::kernels::cuda;
using ::accel::cuda::GemmTypes;
using ::accel::kernels::AdamWHyper;

constexpr int64_t kB = 16, kT = 1024, kC = 768, kNH = 12, kV = 50257, kVPad = 50304;
constexpr int64_t kN = kB * kT;
constexpr int64_t kParams = 124439808;

struct Runner {
  cudaStream_t stream;
  int iters;
  bool failed = false;

  // work: FLOPs (when flops) or bytes moved.
  void Run(const std::string& name, double work, bool flops,
           const std::function<absl::Status()>& fn) {
    absl::StatusOr<double> ms = TimeMs(stream, 2, iters, fn);
    if (!ms.ok()) {
      std::printf("%-44s FAILED: %s\n", name.c_str(), std::string(ms.status().message()).c_str());
      failed = true;
      return;
    }
    const double rate = work / (*ms * 1e-3);
    std::printf("%-44s %9.3f ms  %8.1f %s\n", name.c_str(), *ms,
                flops ? rate / 1e12 : rate / 1e9, flops ? "TFLOP/s" : "GB/s");
    std::fflush(stdout);
  }
};

absl::Status Micro(cudaStream_t stream, int iters, bool* failed) {
  GpuArena arena(stream);
  ACCEL_ASSIGN_OR_RETURN(std::unique_ptr<kc::Blas> blas, kc::Blas::Create());
  Runner r{stream, iters};
  const GemmTypes bf16_f32{DType::kBF16, DType::kF32};
  const GemmTypes bf16_bf16{DType::kBF16, DType::kBF16};

  // ---- matmuls (bf16 inputs, fp32 accumulation) ------------------------------------------------
  struct Linear {
    const char* name;
    int64_t ic, oc;
  };
  for (const Linear& l : {Linear{"qkv 768x2304", kC, 3 * kC}, Linear{"fc 768x3072", kC, 4 * kC},
                          Linear{"fcproj 3072x768", 4 * kC, kC}}) {
    ACCEL_ASSIGN_OR_RETURN(void* inp, arena.Random(kN * l.ic, DType::kBF16));
    ACCEL_ASSIGN_OR_RETURN(void* w, arena.Random(l.ic * l.oc, DType::kBF16));
    ACCEL_ASSIGN_OR_RETURN(void* bias_f, arena.Random(l.oc, DType::kF32));
    ACCEL_ASSIGN_OR_RETURN(void* bias_b, arena.Random(l.oc, DType::kBF16));
    ACCEL_ASSIGN_OR_RETURN(void* out_f, arena.Zeros(kN * l.oc, DType::kF32));
    ACCEL_ASSIGN_OR_RETURN(void* out_b, arena.Zeros(kN * l.oc, DType::kBF16));
    ACCEL_ASSIGN_OR_RETURN(void* dout, arena.Random(kN * l.oc, DType::kBF16));
    ACCEL_ASSIGN_OR_RETURN(void* dinp, arena.Zeros(kN * l.ic, DType::kF32));
    ACCEL_ASSIGN_OR_RETURN(void* dw, arena.Zeros(l.ic * l.oc, DType::kF32));
    ACCEL_ASSIGN_OR_RETURN(void* db, arena.Zeros(l.oc, DType::kF32));
    const double f = 2.0 * kN * l.ic * l.oc;
    const std::string n = l.name;
    r.Run("matmul fwd bf16->f32 " + n, f, true, [&] {
      return kc::MatmulForward(*blas, out_f, inp, w, bias_f, kN, l.ic, l.oc, bf16_f32, stream);
    });
    r.Run("matmul fwd bf16->bf16 " + n, f, true, [&] {
      return kc::MatmulForward(*blas, out_b, inp, w, bias_b, kN, l.ic, l.oc, bf16_bf16, stream);
    });
    r.Run("matmul bwd bf16->f32 " + n, 2 * f, true, [&] {
      return kc::MatmulBackward(*blas, dinp, dw, db, dout, inp, w, kN, l.ic, l.oc, bf16_f32,
                                stream);
    });
  }
  {
    ACCEL_ASSIGN_OR_RETURN(void* inp, arena.Random(kN * kC, DType::kF32));
    ACCEL_ASSIGN_OR_RETURN(void* w, arena.Random(kC * 4 * kC, DType::kF32));
    ACCEL_ASSIGN_OR_RETURN(void* out, arena.Zeros(kN * 4 * kC, DType::kF32));
    const double f = 2.0 * kN * kC * 4 * kC;
    r.Run("matmul fwd f32 fc 768x3072", f, true, [&] {
      return kc::MatmulForward(*blas, out, inp, w, nullptr, kN, kC, 4 * kC, GemmTypes{}, stream);
    });
    blas->set_allow_tf32(true);
    r.Run("matmul fwd f32 (tf32) fc 768x3072", f, true, [&] {
      return kc::MatmulForward(*blas, out, inp, w, nullptr, kN, kC, 4 * kC, GemmTypes{}, stream);
    });
    blas->set_allow_tf32(false);
  }
  {
    // The tied lm_head: logits (N, Vpad) = x (N, C) · wteᵀ, wte stored (Vpad, C).
    ACCEL_ASSIGN_OR_RETURN(void* x, arena.Random(kN * kC, DType::kBF16));
    ACCEL_ASSIGN_OR_RETURN(void* wte, arena.Random(kVPad * kC, DType::kBF16));
    ACCEL_ASSIGN_OR_RETURN(void* logits, arena.Zeros(kN * kVPad, DType::kF32));
    r.Run("lm_head fwd bf16->f32 768x50304", 2.0 * kN * kC * kVPad, true, [&] {
      return blas->Gemm(false, true, kN, kVPad, kC, 1.0f, x, kC, wte, kC, 0.0f, logits, kVPad,
                        nullptr, bf16_f32, stream);
    });
  }
  arena.Clear();

  // ---- attention (fp32, cuBLAS batched + softmax kernels) ----------------------------------------
  {
    ACCEL_ASSIGN_OR_RETURN(void* qkv, arena.Random(kN * 3 * kC, DType::kF32));
    ACCEL_ASSIGN_OR_RETURN(void* out, arena.Zeros(kN * kC, DType::kF32));
    ACCEL_ASSIGN_OR_RETURN(void* att, arena.Zeros(kB * kNH * kT * kT, DType::kF32));
    ACCEL_ASSIGN_OR_RETURN(void* dqkv, arena.Zeros(kN * 3 * kC, DType::kF32));
    ACCEL_ASSIGN_OR_RETURN(void* scratch, arena.Zeros(kNH * kT * kT, DType::kF32));
    ACCEL_ASSIGN_OR_RETURN(void* dout, arena.Random(kN * kC, DType::kF32));
    // Work the GEMMs do (full T×T, causality not exploited): 2 products forward, 4 backward.
    const double f = 2.0 * 2 * kB * kT * kT * kC;
    for (bool tf32 : {false, true}) {
      blas->set_allow_tf32(tf32);
      const std::string tag = tf32 ? " (tf32)" : "";
      r.Run("attention fwd f32" + tag, f, true, [&] {
        return kc::AttentionForward(*blas, static_cast<float*>(out), static_cast<float*>(att),
                                    static_cast<const float*>(qkv), kB, kT, kC, kNH, stream);
      });
      r.Run("attention bwd f32" + tag, 2 * f, true, [&] {
        return kc::AttentionBackward(*blas, static_cast<float*>(dqkv),
                                     static_cast<float*>(scratch), static_cast<const float*>(dout),
                                     static_cast<const float*>(qkv),
                                     static_cast<const float*>(att), kB, kT, kC, kNH, stream);
      });
    }
    blas->set_allow_tf32(false);
  }
  arena.Clear();

  // ---- memory-bound kernels (GB/s of compulsory reads + writes) ---------------------------------
  {
    auto F = [](void* p) { return static_cast<float*>(p); };
    ACCEL_ASSIGN_OR_RETURN(void* x, arena.Random(kN * kC, DType::kF32));
    ACCEL_ASSIGN_OR_RETURN(void* y, arena.Zeros(kN * kC, DType::kF32));
    ACCEL_ASSIGN_OR_RETURN(void* w, arena.Random(kC, DType::kF32));
    ACCEL_ASSIGN_OR_RETURN(void* b, arena.Random(kC, DType::kF32));
    ACCEL_ASSIGN_OR_RETURN(void* mean, arena.Zeros(kN, DType::kF32));
    ACCEL_ASSIGN_OR_RETURN(void* rstd, arena.Zeros(kN, DType::kF32));
    ACCEL_ASSIGN_OR_RETURN(void* dx, arena.Zeros(kN * kC, DType::kF32));
    ACCEL_ASSIGN_OR_RETURN(void* dw, arena.Zeros(kC, DType::kF32));
    ACCEL_ASSIGN_OR_RETURN(void* db, arena.Zeros(kC, DType::kF32));
    const double act = 4.0 * kN * kC;
    r.Run("layernorm fwd", 2 * act, false, [&] {
      return kc::LayerNormForward(F(y), F(mean), F(rstd), F(x), F(w), F(b), kN, kC, stream);
    });
    r.Run("layernorm bwd", 4 * act, false, [&] {
      return kc::LayerNormBackward(F(dx), F(dw), F(db), F(y), F(x), F(w), F(mean), F(rstd), kN,
                                   kC, stream);
    });
    r.Run("residual fwd", 3 * act, false,
          [&] { return kc::ResidualForward(F(y), F(x), F(dx), kN * kC, stream); });
    ACCEL_ASSIGN_OR_RETURN(void* h, arena.Random(kN * 4 * kC, DType::kF32));
    ACCEL_ASSIGN_OR_RETURN(void* g, arena.Zeros(kN * 4 * kC, DType::kF32));
    ACCEL_ASSIGN_OR_RETURN(void* dg, arena.Zeros(kN * 4 * kC, DType::kF32));
    r.Run("gelu fwd", 2 * 4 * act, false,
          [&] { return kc::GeluForward(F(g), F(h), kN * 4 * kC, stream); });
    r.Run("gelu bwd", 4 * 4 * act, false,
          [&] { return kc::GeluBackward(F(dg), F(h), F(g), kN * 4 * kC, stream); });
    ACCEL_ASSIGN_OR_RETURN(int32_t* tokens, arena.Tokens(kN, static_cast<int32_t>(kV)));
    ACCEL_ASSIGN_OR_RETURN(void* wte, arena.Random(kV * kC, DType::kF32));
    ACCEL_ASSIGN_OR_RETURN(void* wpe, arena.Random(kT * kC, DType::kF32));
    ACCEL_ASSIGN_OR_RETURN(void* dwte, arena.Zeros(kV * kC, DType::kF32));
    ACCEL_ASSIGN_OR_RETURN(void* dwpe, arena.Zeros(kT * kC, DType::kF32));
    r.Run("embedding fwd", 2 * act, false, [&] {
      return kc::EmbeddingForward(F(y), tokens, F(wte), F(wpe), kB, kT, kC, stream);
    });
    r.Run("embedding bwd", 3 * act, false, [&] {
      return kc::EmbeddingBackward(F(dwte), F(dwpe), F(x), tokens, kB, kT, kC, stream);
    });
  }
  arena.Clear();
  {
    ACCEL_ASSIGN_OR_RETURN(void* logits, arena.Random(kN * kV, DType::kF32));
    ACCEL_ASSIGN_OR_RETURN(void* losses, arena.Zeros(kN, DType::kF32));
    ACCEL_ASSIGN_OR_RETURN(int32_t* targets, arena.Tokens(kN, static_cast<int32_t>(kV)));
    const double bytes = 4.0 * kN * kV;
    auto* l = static_cast<float*>(logits);
    r.Run("softmax+CE fwd V=50257", bytes, false, [&] {
      return kc::SoftmaxCrossEntropyForward(static_cast<float*>(losses), l, targets, kN, kV,
                                            stream);
    });
    // In place, as the training step uses it (the values drift, which does not matter here).
    r.Run("softmax+CE fwd+bwd in place V=50257", 2 * bytes, false, [&] {
      return kc::SoftmaxCrossEntropyBackward(l, static_cast<float*>(losses), l, targets, kN, kV,
                                             1.0f / kN, stream);
    });
  }
  arena.Clear();
  {
    ACCEL_ASSIGN_OR_RETURN(void* p, arena.Random(kParams, DType::kF32));
    ACCEL_ASSIGN_OR_RETURN(void* m, arena.Zeros(kParams, DType::kF32));
    ACCEL_ASSIGN_OR_RETURN(void* v, arena.Zeros(kParams, DType::kF32));
    ACCEL_ASSIGN_OR_RETURN(void* g, arena.Random(kParams, DType::kF32));
    ACCEL_ASSIGN_OR_RETURN(void* pb, arena.Zeros(kParams, DType::kBF16));
    ACCEL_ASSIGN_OR_RETURN(void* norm8, arena.Zeros(2, DType::kF32));  // one double
    AdamWHyper h;
    h.weight_decay = 0.1f;
    auto* pf = static_cast<float*>(p);
    r.Run("adamw 124M (+bf16 copy)", kParams * (16.0 + 14.0), false, [&] {
      return kc::AdamWUpdate(pf, static_cast<float*>(m), static_cast<float*>(v), g, DType::kF32,
                             kParams, h, pb, DType::kBF16, stream);
    });
    r.Run("cast f32->bf16 124M", kParams * 6.0, false, [&] {
      return kc::ConvertDType(p, DType::kF32, pb, DType::kBF16, kParams, stream);
    });
    r.Run("cast bf16->f32 124M", kParams * 6.0, false, [&] {
      return kc::ConvertDType(pb, DType::kBF16, g, DType::kF32, kParams, stream);
    });
    r.Run("squared L2 norm 124M f32", kParams * 4.0, false, [&] {
      return kc::SquaredL2Norm(static_cast<double*>(norm8), g, DType::kF32, kParams, false,
                               stream);
    });
    // The sharding engine's elementwise updates and FSDP low precision's optimizer.
    ACCEL_ASSIGN_OR_RETURN(void* mb, arena.Zeros(kParams, DType::kBF16));
    ACCEL_ASSIGN_OR_RETURN(void* vb, arena.Zeros(kParams, DType::kBF16));
    ACCEL_ASSIGN_OR_RETURN(void* gb, arena.Random(kParams, DType::kBF16));
    h.step = 1;
    r.Run("adamw low precision (bf16 p/m/v) 124M", kParams * 16.0, false, [&] {
      return kc::AdamWUpdateBf16(static_cast<uint16_t*>(pb), static_cast<uint16_t*>(mb),
                                 static_cast<uint16_t*>(vb), static_cast<const float*>(g),
                                 kParams, h, stream);
    });
    r.Run("accumulate bf16 124M", kParams * 6.0, false, [&] {
      return kc::AccumulateInDType(mb, gb, kParams, DType::kBF16, stream);
    });
    r.Run("scale f32 124M", kParams * 8.0, false, [&] {
      return kc::Scale(static_cast<float*>(g), kParams, 1.0f, stream);
    });
  }
  arena.Clear();

  // ---- the caching allocator (host cost per allocate + free of a cached block) -----------------
  {
    cuda::CachingAllocator& alloc = arena.allocator();
    const int kOps = 100000;
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kOps; ++i) {
      absl::StatusOr<void*> q = alloc.Allocate(int64_t{1} << (10 + i % 12), MemoryCategory::kOther,
                                               stream);
      if (!q.ok()) return q.status();
      ACCEL_RETURN_IF_ERROR(alloc.Free(*q));
    }
    const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() -
                                                                 t0)
                          .count();
    std::printf("%-44s %9.3f us per allocate+free (%lld raw mallocs)\n",
                "caching allocator, 12 size classes", us / kOps,
                static_cast<long long>(alloc.stats().raw_mallocs));
    alloc.EmptyCache();
  }
  *failed = r.failed;
  return absl::OkStatus();
}

}  // namespace
}  // namespace accel::bench

int main(int argc, char** argv) {
  bool micro_only = false;
  int iters = 20, steps = 10;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--micro-only") == 0) {
      micro_only = true;
    } else if (std::strcmp(argv[i], "--iters") == 0 && i + 1 < argc) {
      iters = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--steps") == 0 && i + 1 < argc) {
      steps = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: %s [--micro-only] [--iters N] [--steps N]\n", argv[0]);
      return 2;
    }
  }
  const auto devices = accel::cuda::ListDevices();
  if (devices.empty()) {
    std::printf("accel_gpu_bench: no CUDA device; nothing to measure\n");
    return 0;
  }
  const auto& d = devices[0];
  std::printf("device 0: %s, sm_%d%d, %d SMs, %.1f GiB\n", d.name.c_str(),
              d.compute_capability_major, d.compute_capability_minor, d.multiprocessors,
              d.total_memory_bytes / 1073741824.0);
  (void)cudaSetDevice(0);
  absl::StatusOr<accel::cuda::Stream> stream = accel::cuda::Stream::Create();
  if (!stream.ok()) {
    std::fprintf(stderr, "%s\n", stream.status().ToString().c_str());
    return 1;
  }
  std::printf("\n== kernels at GPT-2 124M shapes, B=16 T=1024 (mean of %d calls) ==\n", iters);
  bool failed = false;
  absl::Status s = accel::bench::Micro(stream->get(), iters, &failed);
  if (!s.ok()) {
    std::fprintf(stderr, "microbenchmarks: %s\n", s.ToString().c_str());
    return 1;
  }
  if (!micro_only) {
    std::printf("\n== GPT-2 124M training step, bf16 matmuls, B=16 T=1024 ==\n");
    s = accel::bench::RunGpt2Step(stream->get(), steps);
    if (!s.ok()) {
      std::fprintf(stderr, "gpt2 step: %s\n", s.ToString().c_str());
      return 1;
    }
  }
  return failed ? 1 : 0;
}
