// All tokens of a training data set, held in memory.
//
// Three on-disk forms (DESIGN.md §3.5, docs/data.md), the two shard forms being llm.c's
// (dev/data/data_common.py, write_datafile):
//   - GPT-2 token shards: a header of 256 little-endian int32 (1024 bytes) with [0] = magic
//     20240520, [1] = version 1, [2] = token count n, then n little-endian uint16 tokens; the
//     file is exactly 1024 + 2n bytes.
//   - Llama 3 token shards (vocabularies past 65,536 ids): the same header with magic 20240801
//     and version 7, then n little-endian uint32 tokens; the file is exactly 1024 + 4n bytes.
//     An id above INT32_MAX is refused (the trainer's token ids are int32).
//   - any other file: its raw bytes, each one token in [0, 256) (a byte-level "tokenizer").
// A magic selects its form and its one version; any other version of either magic is refused.
//
// A loss mask (engine/data/loss_mask.h) may sit beside the file (X.bin → X.mask): Open loads
// it, and mask(i) = 0 marks token i as a target whose loss does not count. Without one every
// target counts (has_mask() false).
//
// Shards and their masks are streamed, not loaded: Open maps them (engine/base/mapped_file.h),
// so a rank's memory holds only the pages its batches touch, from the page cache the ranks of a
// machine share, and a shard larger than memory trains. Opening reads every token once (the
// largest id, and for uint32 shards the INT32_MAX check) and every mask byte (0 or 1). A file
// read as text bytes is widened into memory (2 bytes per byte: a 2 MB text file takes 4 MB).
// token(i) reads either width; tokens16()/tokens32() give the one array for loops that want no
// per-token branch.
// A mapped file must not be truncated or rewritten while a job reads it (mapped_file.h); prepared
// datasets never are (their cache entries are immutable).
//
// Errors: NotFound for a missing file; DataLoss for a malformed shard (message names the file
// and the byte offset of the bad field or token, or the expected and actual sizes);
// InvalidArgument for an empty text file. Immutable after creation, so safe to share between
// threads (the loaders of several ranks hold one shared_ptr<const TokenSource>).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/base/env.h"
#include "engine/data/loss_mask.h"

namespace accel::data {

// GPT-2 shards: uint16 tokens.
inline constexpr int32_t kTokenShardMagic = 20240520;
inline constexpr int32_t kTokenShardVersion = 1;
// Llama 3 shards: uint32 tokens (llm.c's "llama-3" header).
inline constexpr int32_t kTokenShard32Magic = 20240801;
inline constexpr int32_t kTokenShard32Version = 7;
inline constexpr int64_t kTokenShardHeaderBytes = 256 * 4;

enum class TokenSourceKind { kTokenShard, kTextBytes };

class TokenSource {
 public:
  // An llm.c token shard of either width.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<TokenSource>> OpenTokenShard(
      Env* env, const std::string& path);
  // The file's bytes as tokens 0..255 (vocab 256).
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<TokenSource>> OpenTextBytes(
      Env* env, const std::string& path);
  // A shard if the file starts with either shard magic, else text bytes; with the loss mask
  // beside it (LossMaskPath) when that file exists. A malformed mask is DataLoss naming it.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<TokenSource>> Open(Env* env,
                                                                         const std::string& path);
  // For tests and in-memory data; `tokens` must be non-empty, and 32-bit ids <= INT32_MAX.
  static std::unique_ptr<TokenSource> FromTokens(std::vector<uint16_t> tokens, TokenSourceKind kind,
                                                 std::string path);
  static std::unique_ptr<TokenSource> FromTokens(std::vector<uint32_t> tokens, TokenSourceKind kind,
                                                 std::string path);

  int64_t size() const {
    return static_cast<int64_t>(tokens16_.empty() ? tokens32_.size() : tokens16_.size());
  }
  // True when the tokens are a mapping of the file (shards from Open / OpenTokenShard under
  // Env::Default()), false when they are in memory (text bytes, FromTokens, in-memory Envs).
  bool streamed() const { return streamed_; }
  // 0 <= i < size().
  int32_t token(int64_t i) const {
    const auto k = static_cast<size_t>(i);
    return tokens16_.empty() ? static_cast<int32_t>(tokens32_[k]) : tokens16_[k];
  }
  // Bytes per stored token: 2 (GPT-2 shards, text) or 4 (Llama 3 shards). Exactly one of
  // tokens16() / tokens32() is non-empty, the one of this width.
  int token_bytes() const { return tokens16_.empty() ? 4 : 2; }
  std::span<const uint16_t> tokens16() const { return tokens16_; }
  std::span<const uint32_t> tokens32() const { return tokens32_; }
  // Bytes of token data: size() * token_bytes() (in memory, or mapped when streamed()).
  int64_t storage_bytes() const { return size() * token_bytes(); }

  // The loss mask: one byte (0 or 1) per token, or empty (every target counts).
  bool has_mask() const { return !mask_.empty(); }
  std::span<const uint8_t> mask() const { return mask_; }
  // Attaches a mask of size() bytes, each 0 or 1 (InvalidArgument otherwise). Before sharing.
  [[nodiscard]] absl::Status SetLossMask(std::vector<uint8_t> mask);
  // Attaches a checked mapped mask (loss_mask.h MapLossMask) of size() bytes. Before sharing.
  [[nodiscard]] absl::Status SetLossMask(MappedLossMask mask);

  int32_t max_token() const { return max_token_; }
  // A lower bound for the model's vocabulary: 256 for text, max_token() + 1 for shards.
  // int64 since a Llama 3 shard's ids may reach INT32_MAX.
  int64_t vocab_hint() const {
    return kind_ == TokenSourceKind::kTextBytes ? 256 : int64_t{max_token_} + 1;
  }
  const std::string& path() const { return path_; }
  TokenSourceKind kind() const { return kind_; }

 private:
  // Exactly one of the spans is non-empty; `owner` keeps its bytes alive (a vector or a mapping).
  TokenSource(std::span<const uint16_t> tokens16, std::span<const uint32_t> tokens32,
              std::shared_ptr<const void> owner, bool streamed, TokenSourceKind kind,
              std::string path);

  std::span<const uint16_t> tokens16_;
  std::span<const uint32_t> tokens32_;
  std::shared_ptr<const void> tokens_owner_;
  std::span<const uint8_t> mask_;  // empty, or one byte per token
  std::shared_ptr<const void> mask_owner_;
  bool streamed_ = false;
  TokenSourceKind kind_;
  std::string path_;
  int32_t max_token_ = 0;
};

}  // namespace accel::data
