// The loss mask shard beside a token shard (docs/data.md "Loss mask"): which targets count.
//
// Beside X.bin, a file X.mask: a header of 256 little-endian int32 (1024 bytes) with [0] =
// magic 20261203, [1] = version 1, [2] = n (X.bin's token count), then n bytes, each 0 or 1;
// the file is exactly 1024 + n bytes. mask[i] = 1: token i is a prediction target whose loss
// counts (the position that predicts it contributes); 0: its target becomes -100
// (kernels::kIgnoreIndex) in the BatchLoader. mask[0] is never used (token 0 predicts nothing
// before it).
//
// Errors are DataLoss naming the mask file and the byte offset of the bad field or byte, or the
// expected and actual sizes.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/base/env.h"
#include "engine/base/mapped_file.h"

namespace accel::data {

inline constexpr int32_t kLossMaskMagic = 20261203;
inline constexpr int32_t kLossMaskVersion = 1;
inline constexpr int64_t kLossMaskHeaderBytes = 256 * 4;

// The mask file of a data file: X.bin → X.mask; a path not ending in ".bin" gets ".mask" added.
std::string LossMaskPath(const std::string& data_path);

// A checked mask file, mapped (engine/base/mapped_file.h): `bytes` are its `tokens` mask bytes,
// valid while `file` lives.
struct MappedLossMask {
  std::shared_ptr<const MappedFile> file;
  std::span<const uint8_t> bytes;
};

// Maps and checks the mask at `path` for a token file of `tokens` tokens (every byte is read
// once, to check it is 0 or 1).
[[nodiscard]] absl::StatusOr<MappedLossMask> MapLossMask(Env* env, const std::string& path,
                                                         int64_t tokens);
// The same, copied into memory.
[[nodiscard]] absl::StatusOr<std::vector<uint8_t>> ReadLossMask(Env* env, const std::string& path,
                                                                int64_t tokens);

// The bytes of a mask file holding `mask` (each 0 or 1), e.g. for tests and writers.
std::string LossMaskBytes(const std::vector<uint8_t>& mask);

}  // namespace accel::data
