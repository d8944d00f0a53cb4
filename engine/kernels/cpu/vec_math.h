// Vectorisable float math shared by the fast CPU kernels. glibc offers a vector expf only under
// -ffast-math, which the build does not use, so the kernels use this one inside `omp simd` loops.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>

namespace accel::kernels::cpu {

// exp(x) in float to within 1 ulp, as straight-line code that `#pragma omp simd` loops
// vectorise (glibc declares its vector expf only under -ffast-math, which we do not use).
// x = n ln2 + r with |r| <= ln2/2 (ln2 split in two for an exact product), exp(r) by its
// degree-7 Taylor polynomial (truncation < 2^-26), 2^n by building the float's exponent.
// Inputs below -87 give 0 (no denormals); inputs above 88 are clamped; NaN propagates.
inline float VecExp(float x) {
  const float xc = std::min(std::max(x, -87.0f), 88.0f);
  constexpr float kRoundMagic = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  const float n = (xc * 1.44269504088896341f + kRoundMagic) - kRoundMagic;
  const float r = (xc - n * 0.693145751953125f) - n * 1.428606765330187e-06f;
  float p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const float two_to_n = std::bit_cast<float>((static_cast<int32_t>(n) + 127) << 23);
  return x < -87.0f ? 0.0f : p * two_to_n;
}

}  // namespace accel::kernels::cpu

namespace accel::kernels::cpu {

// Σ_{j < n} term(j) in kSumLanes independent partial sums. An `omp simd reduction` keeps one
// vector accumulator, so a reduction over a row in L1 waits on the add's (or FMA's) latency,
// 3-5 cycles a vector: LayerNorm's and RMSNorm's rows ran at a third of the bandwidth bound for
// it. 32 lanes are four AVX2 (two AVX-512) accumulators, enough to cover that latency. The
// order of the additions differs from a plain loop's (as a vector reduction's does).
// term must be inlinable into an `omp simd` loop.
inline constexpr int kSumLanes = 32;
template <typename T, typename Term>
inline T LaneSum(int64_t n, const Term& term) {
  T part[kSumLanes] = {};
  int64_t j = 0;
  for (; j + kSumLanes <= n; j += kSumLanes) {
#pragma omp simd
    for (int l = 0; l < kSumLanes; ++l) part[l] += term(j + l);
  }
  T sum = 0;
#pragma omp simd reduction(+ : sum)
  for (int64_t k = j; k < n; ++k) sum += term(k);
#pragma omp simd reduction(+ : sum)
  for (int l = 0; l < kSumLanes; ++l) sum += part[l];
  return sum;
}

}  // namespace accel::kernels::cpu
