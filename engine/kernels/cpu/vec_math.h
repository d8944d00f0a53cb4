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
