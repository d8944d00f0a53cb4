// The gloo collective tests' reference side: buffers of wire-typed elements (f32, bf16, f16 as
// bytes), the serial ring sum in the documented order (docs/comm.md), and the bound of a ring
// result against the exact sum.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "engine/comm/ring_algorithms.h"
#include "engine/tensor/dtype.h"
#include "engine/testing/random.h"
#include "gtest/gtest.h"

namespace accel::comm::testing {

using Bytes = std::vector<char>;

inline float Load(DType dtype, const Bytes& b, size_t i) {
  if (dtype == DType::kF32) {
    float f;
    std::memcpy(&f, b.data() + 4 * i, 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, b.data() + 2 * i, 2);
  return dtype == DType::kBF16 ? Bf16ToFloat(h) : F16ToFloat(h);
}

inline void Store(DType dtype, Bytes& b, size_t i, float f) {
  if (dtype == DType::kF32) {
    std::memcpy(b.data() + 4 * i, &f, 4);
    return;
  }
  uint16_t h = dtype == DType::kBF16 ? FloatToBf16(f) : FloatToF16(f);
  std::memcpy(b.data() + 2 * i, &h, 2);
}

inline float Round(DType dtype, float f) {
  Bytes one(4);
  Store(dtype, one, 0, f);
  return Load(dtype, one, 0);
}

inline Bytes RandomBytes(DType dtype, size_t n, uint64_t seed) {
  accel::testing::TestRng rng(seed);
  Bytes b(n * DTypeSize(dtype));
  for (size_t i = 0; i < n; ++i) Store(dtype, b, i, rng.Uniform(-1.f, 1.f));
  return b;
}

// The documented order: chunk c is summed x[c+1] + x[c+2] + ... + x[c], rounded per add.
inline Bytes SerialRingSum(DType dtype, const std::vector<Bytes>& inputs, const ChunkLayout& layout) {
  const int n = static_cast<int>(inputs.size());
  Bytes out(layout.count * DTypeSize(dtype));
  for (int c = 0; c < n; ++c) {
    for (size_t i = layout.Offset(c); i < layout.Offset(c) + layout.Length(c); ++i) {
      float acc = Load(dtype, inputs[(c + 1) % n], i);
      for (int k = 2; k <= n; ++k) acc = Round(dtype, acc + Load(dtype, inputs[(c + k) % n], i));
      Store(dtype, out, i, acc);
    }
  }
  return out;
}

// The ring result is within one rounding per hop of the exact sum.
inline ::testing::AssertionResult CloseToExactSum(DType dtype, const std::vector<Bytes>& inputs,
                                           const Bytes& got, size_t count) {
  const double eps = dtype == DType::kF32 ? 0x1p-24 : dtype == DType::kBF16 ? 0x1p-8 : 0x1p-11;
  for (size_t i = 0; i < count; ++i) {
    double exact = 0, magnitude = 0;
    for (const Bytes& x : inputs) {
      exact += Load(dtype, x, i);
      magnitude += std::fabs(Load(dtype, x, i));
    }
    double err = std::fabs(Load(dtype, got, i) - exact);
    if (err > inputs.size() * eps * magnitude + 1e-30) {
      return ::testing::AssertionFailure()
             << "element " << i << ": " << Load(dtype, got, i) << " vs exact " << exact;
    }
  }
  return ::testing::AssertionSuccess();
}

inline Bytes Slice(const Bytes& b, DType dtype, size_t offset, size_t count) {
  const size_t e = DTypeSize(dtype);
  return Bytes(b.begin() + offset * e, b.begin() + (offset + count) * e);
}

inline uint64_t Seed(int rank, DType dtype, int salt = 0) {
  return 1000 * rank + 10 * static_cast<int>(dtype) + salt;
}

}  // namespace accel::comm::testing
