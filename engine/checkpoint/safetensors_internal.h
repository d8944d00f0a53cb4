// What safetensors.cc (the reader) and safetensors_writer.cc share: the conversion chunk and
// overflow-checked element counts (which checkpoint_metadata.cc uses too).
#pragma once

#include <cstdint>
#include <optional>
#include <span>

namespace accel::checkpoint::internal {

// Elements converted per chunk when reading or writing a 16-bit tensor as f32.
inline constexpr int64_t kConvertChunk = int64_t{1} << 20;

// numel of a shape, or nullopt on int64 overflow.
inline std::optional<int64_t> CheckedNumel(std::span<const int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0 || __builtin_mul_overflow(n, d, &n)) return std::nullopt;
  }
  return n;
}

}  // namespace accel::checkpoint::internal
