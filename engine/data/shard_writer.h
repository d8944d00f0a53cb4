// Writing what token_source.h reads: llm.c token shards and, beside a shard X.bin, its loss
// mask X.mask (docs/data.md "Mask shards"):
//   header of 256 little-endian int32 (1024 bytes): [0] = 20261203, [1] = 1, [2] = n (the token
//   count of X.bin); then n bytes, each 0 or 1. The file is exactly 1024 + n bytes.
// Shards are uint16 (GPT-2 header) when every id of the vocabulary fits, else uint32 (llm.c's
// "llama-3" header). Files are written crash-safely (WriteFileAtomic: temp, fsync, rename).
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "engine/base/env.h"
#include "engine/data/loss_mask.h"  // the mask format, read and written

namespace accel::data {

// True when ids of a vocabulary of `vocab_size` need the uint32 form.
inline bool NeedsWideShard(int64_t vocab_size) { return vocab_size > 65536; }

// InvalidArgument when there are more than INT32_MAX ids (the header's count is an int32) or an
// id does not fit the chosen width.
[[nodiscard]] absl::StatusOr<std::string> TokenShardFileBytes(absl::Span<const int32_t> ids,
                                                              bool wide);
[[nodiscard]] absl::StatusOr<std::string> LossMaskFileBytes(absl::Span<const uint8_t> mask);

// `path` ends in ".bin"; the mask (when `mask` is non-empty; same length as ids) goes to
// LossMaskPath(path), the same name ending in ".mask".
[[nodiscard]] absl::Status WriteTokenShard(Env* env, const std::string& path,
                                           absl::Span<const int32_t> ids,
                                           absl::Span<const uint8_t> mask, bool wide);

}  // namespace accel::data
