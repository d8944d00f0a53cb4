// Fast AdamW: the reference's per-element float arithmetic in the same order, spread over
// OpenMP threads in contiguous blocks. The update is memory bound (4 streams in, 3 out).
//
// With AVX-512, and with AVX2 + FMA, the loop is written with intrinsics: GCC will not vectorise
// std::sqrt unless -fno-math-errno (the plain loop alone was 12x from the bandwidth bound on AVX2),
// and under that flag it contracts the vector loop's expressions into other fused multiply-adds
// than the reference's scalar ones (2 ulps apart after three steps). The order of fused
// multiply-adds below is the one GCC forms when it contracts the reference's expressions, so the
// paths agree to the last bit or within an ulp; the AVX2 loop leaves its < 8 tail to the plain one. vsqrtps and vdivps are correctly rounded like their scalar forms. (The zero-masked
// sqrt is not a tail trick: GCC 12 warns about _mm512_sqrt_ps's undefined pass-through operand.)
#include <algorithm>
#include <cmath>
#include <cstdint>

#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
#include <immintrin.h>
#endif

#include "engine/kernels/adamw.h"
#include "engine/tensor/dtype.h"

namespace accel::kernels {
namespace {

// Below this the update stays on one thread: a parallel region costs more than it saves.
constexpr int64_t kParallelMin = int64_t{1} << 15;
// Elements per OpenMP task; a multiple of 16 so only the last block has a vector tail.
constexpr int64_t kBlock = int64_t{1} << 14;

struct Consts {
  float beta1, beta2, one_minus_beta1, one_minus_beta2, eps, grad_scale, decay, step_size,
      bc2_sqrt;
};

void UpdateRange(float* params, float* m, float* v, const float* grads, int64_t n,
                 const Consts& c) {
  int64_t i = 0;
#if defined(__AVX512F__)
  const __m512 beta1 = _mm512_set1_ps(c.beta1), beta2 = _mm512_set1_ps(c.beta2);
  const __m512 omb1 = _mm512_set1_ps(c.one_minus_beta1), omb2 = _mm512_set1_ps(c.one_minus_beta2);
  const __m512 eps = _mm512_set1_ps(c.eps), grad_scale = _mm512_set1_ps(c.grad_scale);
  const __m512 decay = _mm512_set1_ps(c.decay), step_size = _mm512_set1_ps(c.step_size);
  const __m512 bc2_sqrt = _mm512_set1_ps(c.bc2_sqrt);
  for (; i < n; i += 16) {
    const __mmask16 k = n - i >= 16 ? __mmask16{0xFFFF}
                                    : static_cast<__mmask16>((1u << (n - i)) - 1u);
    const __m512 g = _mm512_mul_ps(_mm512_maskz_loadu_ps(k, grads + i), grad_scale);
    __m512 p = _mm512_mul_ps(_mm512_maskz_loadu_ps(k, params + i), decay);
    const __m512 mi =
        _mm512_fmadd_ps(beta1, _mm512_maskz_loadu_ps(k, m + i), _mm512_mul_ps(omb1, g));
    const __m512 vi = _mm512_fmadd_ps(beta2, _mm512_maskz_loadu_ps(k, v + i),
                                      _mm512_mul_ps(omb2, _mm512_mul_ps(g, g)));
    const __m512 denom = _mm512_add_ps(_mm512_div_ps(_mm512_maskz_sqrt_ps(k, vi), bc2_sqrt), eps);
    p = _mm512_fnmadd_ps(step_size, _mm512_div_ps(mi, denom), p);
    _mm512_mask_storeu_ps(params + i, k, p);
    _mm512_mask_storeu_ps(m + i, k, mi);
    _mm512_mask_storeu_ps(v + i, k, vi);
  }
#elif defined(__AVX2__) && defined(__FMA__)
  const __m256 beta1 = _mm256_set1_ps(c.beta1), beta2 = _mm256_set1_ps(c.beta2);
  const __m256 omb1 = _mm256_set1_ps(c.one_minus_beta1), omb2 = _mm256_set1_ps(c.one_minus_beta2);
  const __m256 eps = _mm256_set1_ps(c.eps), grad_scale = _mm256_set1_ps(c.grad_scale);
  const __m256 decay = _mm256_set1_ps(c.decay), step_size = _mm256_set1_ps(c.step_size);
  const __m256 bc2_sqrt = _mm256_set1_ps(c.bc2_sqrt);
  for (; i + 8 <= n; i += 8) {
    const __m256 g = _mm256_mul_ps(_mm256_loadu_ps(grads + i), grad_scale);
    __m256 p = _mm256_mul_ps(_mm256_loadu_ps(params + i), decay);
    const __m256 mi = _mm256_fmadd_ps(beta1, _mm256_loadu_ps(m + i), _mm256_mul_ps(omb1, g));
    const __m256 vi = _mm256_fmadd_ps(beta2, _mm256_loadu_ps(v + i),
                                      _mm256_mul_ps(omb2, _mm256_mul_ps(g, g)));
    const __m256 denom = _mm256_add_ps(_mm256_div_ps(_mm256_sqrt_ps(vi), bc2_sqrt), eps);
    p = _mm256_fnmadd_ps(step_size, _mm256_div_ps(mi, denom), p);
    _mm256_storeu_ps(params + i, p);
    _mm256_storeu_ps(m + i, mi);
    _mm256_storeu_ps(v + i, vi);
  }
#endif
  for (; i < n; ++i) {
    const float g = grads[i] * c.grad_scale;
    float p = params[i] * c.decay;
    const float mi = c.beta1 * m[i] + c.one_minus_beta1 * g;
    const float vi = c.beta2 * v[i] + c.one_minus_beta2 * (g * g);
    const float denom = std::sqrt(vi) / c.bc2_sqrt + c.eps;
    p -= c.step_size * (mi / denom);
    params[i] = p;
    m[i] = mi;
    v[i] = vi;
  }
}

Consts MakeConsts(const AdamWHyper& h) {
  const double step = static_cast<double>(h.step);
  Consts c;
  c.beta1 = h.beta1;
  c.beta2 = h.beta2;
  c.one_minus_beta1 = 1.0f - h.beta1;
  c.one_minus_beta2 = 1.0f - h.beta2;
  c.eps = h.eps;
  c.grad_scale = h.grad_scale;
  // decay == 1 when weight_decay == 0, and p * 1.0f == p exactly: no branch needed.
  c.decay = h.weight_decay != 0.0f ? 1.0f - h.lr * h.weight_decay : 1.0f;
  // Without bias correction both corrections are 1 (and x / 1.0f == x: no branch in the loop).
  const double bc1 = h.bias_correction ? 1.0 - std::pow(static_cast<double>(h.beta1), step) : 1.0;
  const double bc2 = h.bias_correction ? 1.0 - std::pow(static_cast<double>(h.beta2), step) : 1.0;
  c.step_size = static_cast<float>(h.lr / bc1);
  c.bc2_sqrt = static_cast<float>(std::sqrt(bc2));
  return c;
}

// bf16 storage: widen a cache-sized piece of each stream, update it in fp32, round it back.
void UpdateRangeBf16(uint16_t* params, uint16_t* m, uint16_t* v, const float* grads, int64_t n,
                     const Consts& c) {
  constexpr int64_t kPiece = 1024;
  alignas(64) float p32[kPiece], m32[kPiece], v32[kPiece];
  for (int64_t lo = 0; lo < n; lo += kPiece) {
    const int64_t len = std::min(kPiece, n - lo);
    Bf16ToFloat(params + lo, p32, len);
    Bf16ToFloat(m + lo, m32, len);
    Bf16ToFloat(v + lo, v32, len);
    UpdateRange(p32, m32, v32, grads + lo, len, c);
    FloatToBf16(p32, params + lo, len);
    FloatToBf16(m32, m + lo, len);
    FloatToBf16(v32, v + lo, len);
  }
}

// update(lo, len) over [0, n) in kBlock pieces, spread over OpenMP threads.
template <typename Update>
void ForEachBlock(int64_t n, const Update& update) {
  const int64_t blocks = (n + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) if (n >= kParallelMin)
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t lo = b * kBlock;
    update(lo, std::min(kBlock, n - lo));
  }
}

}  // namespace

void AdamWUpdate(float* params, float* m, float* v, const float* grads, int64_t n,
                 const AdamWHyper& h) {
  if (n <= 0) return;
  const Consts c = MakeConsts(h);
  ForEachBlock(n, [&](int64_t lo, int64_t len) {
    UpdateRange(params + lo, m + lo, v + lo, grads + lo, len, c);
  });
}

void AdamWUpdateBf16(uint16_t* params, uint16_t* m, uint16_t* v, const float* grads, int64_t n,
                     const AdamWHyper& h) {
  if (n <= 0) return;
  const Consts c = MakeConsts(h);
  ForEachBlock(n, [&](int64_t lo, int64_t len) {
    UpdateRangeBf16(params + lo, m + lo, v + lo, grads + lo, len, c);
  });
}

double SquaredL2Norm(const float* x, int64_t n) {
  double sum = 0.0;
#pragma omp parallel for simd schedule(static) reduction(+ : sum) if (n >= kParallelMin)
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i]) * x[i];
  return sum;
}

}  // namespace accel::kernels
