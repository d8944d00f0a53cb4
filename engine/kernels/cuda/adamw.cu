// AdamW and the squared L2 norm on the device (kernels.h). The per-element arithmetic follows
// cpu/adamw_ref.cc in the same order; the bias corrections are computed once on the host in
// double exactly as there. nvcc may contract a*b+c into FMAs, so results agree with the CPU to
// rounding, not bit for bit.
#include <cuda_runtime.h>

#include <cmath>

#include "engine/kernels/cuda/common.cuh"
#include "engine/kernels/cuda/kernels.h"

namespace accel::kernels::cuda {
namespace {

struct AdamWConsts {
  float lr_decay;  // 1 - lr * weight_decay
  bool decay;
  float beta1, beta2, one_minus_beta1, one_minus_beta2;
  float step_size, bc2_sqrt, eps, grad_scale;
};

template <typename G, typename Out>
__global__ void AdamWKernel(float* params, float* m, float* v, const G* grads, Out* params_out,
                            int64_t n, AdamWConsts k) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float g = ToFloat(grads[i]) * k.grad_scale;
    float p = params[i];
    if (k.decay) p *= k.lr_decay;
    const float mi = k.beta1 * m[i] + k.one_minus_beta1 * g;
    const float vi = k.beta2 * v[i] + k.one_minus_beta2 * (g * g);
    const float denom = sqrtf(vi) / k.bc2_sqrt + k.eps;
    p -= k.step_size * (mi / denom);
    params[i] = p;
    m[i] = mi;
    v[i] = vi;
    if (params_out != nullptr) params_out[i] = FromFloat<Out>(p);
  }
}

// Low precision: bf16 parameters and moments, widened, updated with AdamWKernel's arithmetic,
// each rounded back to bf16 (kernels::AdamWUpdateBf16).
__global__ void AdamWBf16Kernel(Bf16* params, Bf16* m, Bf16* v, const float* grads, int64_t n,
                                AdamWConsts k) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float g = grads[i] * k.grad_scale;
    float p = ToFloat(params[i]);
    if (k.decay) p *= k.lr_decay;
    const float mi = k.beta1 * ToFloat(m[i]) + k.one_minus_beta1 * g;
    const float vi = k.beta2 * ToFloat(v[i]) + k.one_minus_beta2 * (g * g);
    const float denom = sqrtf(vi) / k.bc2_sqrt + k.eps;
    p -= k.step_size * (mi / denom);
    params[i] = FromFloat<Bf16>(p);
    m[i] = FromFloat<Bf16>(mi);
    v[i] = FromFloat<Bf16>(vi);
  }
}

template <typename T>
__global__ void SquaredNormKernel(double* out, const T* x, int64_t n) {
  double sum = 0;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float f = ToFloat(x[i]);
    sum += static_cast<double>(f) * f;
  }
  sum = BlockReduce<double, false>(sum);
  if (threadIdx.x == 0) atomicAdd(out, sum);
}

// The per-call constants, the bias corrections in double as cpu/adamw_ref.cc has them.
AdamWConsts MakeConsts(const AdamWHyper& h) {
  const double step = static_cast<double>(h.step);
  AdamWConsts k;
  k.lr_decay = 1.0f - h.lr * h.weight_decay;
  k.decay = h.weight_decay != 0.0f;
  k.beta1 = h.beta1;
  k.beta2 = h.beta2;
  k.one_minus_beta1 = 1.0f - h.beta1;
  k.one_minus_beta2 = 1.0f - h.beta2;
  const double bc1 = h.bias_correction ? 1.0 - std::pow(static_cast<double>(h.beta1), step) : 1.0;
  const double bc2 = h.bias_correction ? 1.0 - std::pow(static_cast<double>(h.beta2), step) : 1.0;
  k.step_size = static_cast<float>(h.lr / bc1);
  k.bc2_sqrt = static_cast<float>(std::sqrt(bc2));
  k.eps = h.eps;
  k.grad_scale = h.grad_scale;
  return k;
}

}  // namespace

absl::Status AdamWUpdate(float* params, float* m, float* v, const void* grads, DType grad_dtype,
                         int64_t n, const AdamWHyper& h, void* params_out, DType out_dtype,
                         cudaStream_t stream) {
  if (absl::Status s = CheckSizes("AdamWUpdate", {n}); !s.ok()) return s;
  if (h.step < 1) {
    return absl::InvalidArgumentError(absl::StrCat("AdamWUpdate: step ", h.step, " < 1"));
  }
  if (params_out != nullptr && out_dtype == DType::kF32) {
    return absl::InvalidArgumentError(
        "AdamWUpdate: the parameter copy must be bf16 or f16 (the master params are f32)");
  }
  if (n == 0) return absl::OkStatus();
  const AdamWConsts k = MakeConsts(h);
  return DispatchDType(grad_dtype, [&](auto grad_tag) {
    using G = decltype(grad_tag);
    const G* g = static_cast<const G*>(grads);
    if (params_out == nullptr || out_dtype == DType::kBF16) {
      AdamWKernel<G, Bf16><<<GridFor(n), kThreads, 0, stream>>>(
          params, m, v, g, static_cast<Bf16*>(params_out), n, k);
    } else {
      AdamWKernel<G, F16><<<GridFor(n), kThreads, 0, stream>>>(
          params, m, v, g, static_cast<F16*>(params_out), n, k);
    }
    return ACCEL_CUDA_LAUNCH_STATUS("AdamWKernel");
  });
}

absl::Status AdamWUpdateBf16(uint16_t* params, uint16_t* m, uint16_t* v, const float* grads,
                             int64_t n, const AdamWHyper& h, cudaStream_t stream) {
  if (absl::Status s = CheckSizes("AdamWUpdateBf16", {n}); !s.ok()) return s;
  if (h.step < 1) {
    return absl::InvalidArgumentError(absl::StrCat("AdamWUpdateBf16: step ", h.step, " < 1"));
  }
  if (n == 0) return absl::OkStatus();
  AdamWBf16Kernel<<<GridFor(n), kThreads, 0, stream>>>(
      reinterpret_cast<Bf16*>(params), reinterpret_cast<Bf16*>(m), reinterpret_cast<Bf16*>(v),
      grads, n, MakeConsts(h));
  return ACCEL_CUDA_LAUNCH_STATUS("AdamWBf16Kernel");
}

absl::Status SquaredL2Norm(double* out, const void* x, DType dtype, int64_t n, bool accumulate,
                           cudaStream_t stream) {
  if (absl::Status s = CheckSizes("SquaredL2Norm", {n}); !s.ok()) return s;
  if (!accumulate) ACCEL_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(out, 0, sizeof(double), stream));
  if (n == 0) return absl::OkStatus();
  return DispatchDType(dtype, [&](auto tag) {
    using T = decltype(tag);
    // Fewer blocks than elementwise kernels: each block ends in one fp64 atomic.
    const unsigned blocks = std::min<unsigned>(GridFor(n), 1024);
    SquaredNormKernel<T><<<blocks, kThreads, 0, stream>>>(out, static_cast<const T*>(x), n);
    return ACCEL_CUDA_LAUNCH_STATUS("SquaredNormKernel");
  });
}

}  // namespace accel::kernels::cuda
