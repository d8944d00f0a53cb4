// Bytes of an llm.c token shard (engine/data/token_source.h), for tests that write data files,
// well-formed or not.
//
// The header is 256 little-endian int32: magic, version, count (default: tokens.size()), zeros.
// The tokens follow at the width the magic implies: uint32 for kTokenShard32Magic (Llama 3),
// uint16 for any other magic (GPT-2; ids are truncated to 16 bits). version defaults to the
// magic's own (1 or 7). Malformed shards come from the overrides or from cutting the result.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "engine/data/token_source.h"

namespace accel::testing {

inline std::string TokenShardBytes(const std::vector<uint32_t>& tokens,
                                   int32_t magic = data::kTokenShardMagic,
                                   std::optional<int32_t> version = std::nullopt,
                                   std::optional<int32_t> count = std::nullopt) {
  const bool wide = magic == data::kTokenShard32Magic;
  int32_t header[256] = {};
  header[0] = magic;
  header[1] = version.value_or(wide ? data::kTokenShard32Version : data::kTokenShardVersion);
  header[2] = count.value_or(static_cast<int32_t>(tokens.size()));
  std::string bytes(reinterpret_cast<const char*>(header), sizeof(header));
  for (uint32_t t : tokens) {
    char le[4];
    std::memcpy(le, &t, 4);  // little-endian host (token_source.cc asserts it)
    bytes.append(le, wide ? 4 : 2);
  }
  return bytes;
}

}  // namespace accel::testing
