// Element types and conversions between them.
//
// bf16 and f16 are stored as raw uint16_t bits. Conversions from f32 round to nearest, ties to
// even (what PyTorch's .to(torch.bfloat16) does); f32 subnormals are rounded, not flushed; NaN
// stays NaN (quietened, sign and top payload bits kept, as the hardware converts do),
// infinities stay infinite, and f16 overflow becomes infinity. The array conversions are vectorised (AVX-512
// BF16 / F16C when the build targets them, otherwise loops the compiler vectorises) and agree
// bit for bit with the scalar ones.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "absl/status/statusor.h"

namespace accel {

enum class DType : uint8_t { kF32 = 0, kBF16 = 1, kF16 = 2 };

size_t DTypeSize(DType dtype);
// "f32", "bf16", "f16".
std::string_view DTypeName(DType dtype);
// Accepts our names and safetensors' ("F32", "BF16", "F16"); InvalidArgument otherwise.
absl::StatusOr<DType> ParseDType(std::string_view name);
// safetensors' spelling: "F32", "BF16", "F16".
std::string_view SafetensorsDTypeName(DType dtype);

uint16_t FloatToBf16(float value);
float Bf16ToFloat(uint16_t bits);
uint16_t FloatToF16(float value);
float F16ToFloat(uint16_t bits);

void FloatToBf16(const float* src, uint16_t* dst, size_t n);
void Bf16ToFloat(const uint16_t* src, float* dst, size_t n);
void FloatToF16(const float* src, uint16_t* dst, size_t n);
void F16ToFloat(const uint16_t* src, float* dst, size_t n);

// Converts n elements between any two dtypes (a copy when they are equal).
void ConvertDType(const void* src, DType src_dtype, void* dst, DType dst_dtype, size_t n);

}  // namespace accel
