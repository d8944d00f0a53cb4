#include "engine/tensor/dtype.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"

#if defined(__AVX512BF16__) || defined(__F16C__)
#include <immintrin.h>
#endif

namespace accel {
namespace {

inline uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float FromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

}  // namespace

size_t DTypeSize(DType dtype) { return dtype == DType::kF32 ? 4 : 2; }

std::string_view DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kF32: return "f32";
    case DType::kBF16: return "bf16";
    case DType::kF16: return "f16";
  }
  return "unknown";
}

std::string_view SafetensorsDTypeName(DType dtype) {
  switch (dtype) {
    case DType::kF32: return "F32";
    case DType::kBF16: return "BF16";
    case DType::kF16: return "F16";
  }
  return "unknown";
}

absl::StatusOr<DType> ParseDType(std::string_view name) {
  if (name == "f32" || name == "F32" || name == "fp32" || name == "float32") return DType::kF32;
  if (name == "bf16" || name == "BF16" || name == "bfloat16") return DType::kBF16;
  if (name == "f16" || name == "F16" || name == "fp16" || name == "float16") return DType::kF16;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown dtype '", std::string(name), "' (expected f32, bf16 or f16)"));
}

uint16_t FloatToBf16(float value) {
  uint32_t u = Bits(value);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x0040u);  // NaN
  uint32_t rounding_bias = 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>((u + rounding_bias) >> 16);
}

float Bf16ToFloat(uint16_t bits) { return FromBits(static_cast<uint32_t>(bits) << 16); }

uint16_t FloatToF16(float value) {
  uint32_t u = Bits(value);
  uint32_t sign = (u >> 16) & 0x8000u;
  uint32_t abs = u & 0x7fffffffu;
  // NaN: quiet it and keep the top payload bits, as F16C's vcvtps2ph does.
  if (abs > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow -> inf
  if (abs < 0x38800000u) {
    // Result is subnormal (or zero): scale into the subnormal grid with one rounding, using the
    // FPU (round to nearest even) by adding 0.5 (2^-1) as a magic number.
    float f = FromBits(abs) + 0.5f;
    return static_cast<uint16_t>(sign | (Bits(f) - 0x3f000000u));
  }
  // Normal: rebias exponent (127 -> 15) and round the 13 dropped mantissa bits to nearest even.
  uint32_t mant_odd = (abs >> 13) & 1u;
  abs += 0xc8000fffu + mant_odd;  // (15 - 127) << 23, plus rounding bias
  return static_cast<uint16_t>(sign | (abs >> 13));
}

float F16ToFloat(uint16_t bits) {
  uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  uint32_t exp = (bits >> 10) & 0x1fu;
  uint32_t mant = bits & 0x3ffu;
  if (exp == 0x1f) {
    // inf, or NaN quietened with its payload kept, as F16C's vcvtph2ps does.
    return FromBits(sign | 0x7f800000u | (mant != 0 ? 0x00400000u : 0u) | (mant << 13));
  }
  if (exp == 0) {
    // zero or subnormal: value = mant * 2^-24
    float f = static_cast<float>(mant) * 5.9604644775390625e-8f;
    return sign ? -f : f;
  }
  return FromBits(sign | ((exp + 112u) << 23) | (mant << 13));
}

namespace {

void FloatToBf16Serial(const float* src, uint16_t* dst, size_t n) {
  size_t i = 0;
#if defined(__AVX512BF16__)
  // vcvtneps2bf16 rounds to nearest even and quiets NaNs like the scalar path, but it treats
  // f32 subnormal inputs as zero (the scalar path rounds them, as PyTorch does); a chunk that
  // holds one goes through the scalar path.
  const __m512i exp_mask = _mm512_set1_epi32(0x7f800000);
  const __m512i mant_mask = _mm512_set1_epi32(0x007fffff);
  for (; i + 16 <= n; i += 16) {
    __m512 v = _mm512_loadu_ps(src + i);
    __m512i u = _mm512_castps_si512(v);
    if ((_mm512_testn_epi32_mask(u, exp_mask) & _mm512_test_epi32_mask(u, mant_mask)) != 0) {
      for (size_t j = i; j < i + 16; ++j) dst[j] = FloatToBf16(src[j]);
      continue;
    }
    __m256bh r = _mm512_cvtneps_pbh(v);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), reinterpret_cast<__m256i&>(r));
  }
#endif
  for (; i < n; ++i) dst[i] = FloatToBf16(src[i]);
}

void Bf16ToFloatSerial(const uint16_t* src, float* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = FromBits(static_cast<uint32_t>(src[i]) << 16);
}

void FloatToF16Serial(const float* src, uint16_t* dst, size_t n) {
  size_t i = 0;
#if defined(__F16C__) && defined(__AVX__)
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), h);
  }
#endif
  for (; i < n; ++i) dst[i] = FloatToF16(src[i]);
}

void F16ToFloatSerial(const uint16_t* src, float* dst, size_t n) {
  size_t i = 0;
#if defined(__F16C__) && defined(__AVX__)
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
  }
#endif
  for (; i < n; ++i) dst[i] = F16ToFloat(src[i]);
}

// Conversions are elementwise, so splitting them changes no bit. Below kParallelMin elements a
// parallel region costs more than it saves; chunks are a multiple of 16 (the vector width).
constexpr size_t kParallelMin = size_t{1} << 16;
constexpr size_t kChunkElems = size_t{1} << 15;

template <typename Src, typename Dst>
void Chunked(void (*convert)(const Src*, Dst*, size_t), const Src* src, Dst* dst, size_t n) {
  if (n < kParallelMin) {
    convert(src, dst, n);
    return;
  }
  const int64_t chunks = static_cast<int64_t>((n + kChunkElems - 1) / kChunkElems);
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < chunks; ++c) {
    const size_t begin = static_cast<size_t>(c) * kChunkElems;
    convert(src + begin, dst + begin, std::min(kChunkElems, n - begin));
  }
}

}  // namespace

void FloatToBf16(const float* src, uint16_t* dst, size_t n) {
  Chunked(&FloatToBf16Serial, src, dst, n);
}
void Bf16ToFloat(const uint16_t* src, float* dst, size_t n) {
  Chunked(&Bf16ToFloatSerial, src, dst, n);
}
void FloatToF16(const float* src, uint16_t* dst, size_t n) { Chunked(&FloatToF16Serial, src, dst, n); }
void F16ToFloat(const uint16_t* src, float* dst, size_t n) { Chunked(&F16ToFloatSerial, src, dst, n); }

void ConvertDType(const void* src, DType src_dtype, void* dst, DType dst_dtype, size_t n) {
  if (n == 0) return;  // src and dst may be null; memcpy must not see a null pointer
  if (src_dtype == dst_dtype) {
    std::memcpy(dst, src, n * DTypeSize(src_dtype));
    return;
  }
  auto* s16 = static_cast<const uint16_t*>(src);
  auto* d16 = static_cast<uint16_t*>(dst);
  if (src_dtype == DType::kF32) {
    auto* s = static_cast<const float*>(src);
    dst_dtype == DType::kBF16 ? FloatToBf16(s, d16, n) : FloatToF16(s, d16, n);
    return;
  }
  if (dst_dtype == DType::kF32) {
    auto* d = static_cast<float*>(dst);
    src_dtype == DType::kBF16 ? Bf16ToFloat(s16, d, n) : F16ToFloat(s16, d, n);
    return;
  }
  // bf16 <-> f16 through f32, in chunks.
  constexpr size_t kChunk = 1024;
  float tmp[kChunk];
  for (size_t i = 0; i < n; i += kChunk) {
    size_t m = n - i < kChunk ? n - i : kChunk;
    ConvertDType(s16 + i, src_dtype, tmp, DType::kF32, m);
    ConvertDType(tmp, DType::kF32, d16 + i, dst_dtype, m);
  }
}

}  // namespace accel
