#include "engine/comm/reduce.h"

#include <algorithm>
#include <cstdint>

namespace accel::comm {
namespace {

// Blocks small enough to stay in L1 let the array conversions in dtype.h do the vector work.
constexpr size_t kBlock = 512;

template <void (*ToFloat)(const uint16_t*, float*, size_t),
          void (*FromFloat)(const float*, uint16_t*, size_t)>
void Sum16(const uint16_t* a, const uint16_t* b, uint16_t* out, size_t n) {
  float fa[kBlock];
  float fb[kBlock];
  for (size_t start = 0; start < n; start += kBlock) {
    size_t m = std::min(kBlock, n - start);
    ToFloat(a + start, fa, m);
    ToFloat(b + start, fb, m);
    for (size_t i = 0; i < m; ++i) fa[i] += fb[i];
    FromFloat(fa, out + start, m);
  }
}

}  // namespace

void SumInto(DType dtype, const void* a, const void* b, void* out, size_t n) {
  switch (dtype) {
    case DType::kF32: {
      auto* fa = static_cast<const float*>(a);
      auto* fb = static_cast<const float*>(b);
      auto* fo = static_cast<float*>(out);
      for (size_t i = 0; i < n; ++i) fo[i] = fa[i] + fb[i];
      return;
    }
    case DType::kBF16:
      Sum16<Bf16ToFloat, FloatToBf16>(static_cast<const uint16_t*>(a),
                                      static_cast<const uint16_t*>(b), static_cast<uint16_t*>(out),
                                      n);
      return;
    case DType::kF16:
      Sum16<F16ToFloat, FloatToF16>(static_cast<const uint16_t*>(a),
                                    static_cast<const uint16_t*>(b), static_cast<uint16_t*>(out),
                                    n);
      return;
  }
}

}  // namespace accel::comm
