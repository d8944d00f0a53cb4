// All tokens of a training data set, held in memory.
//
// Two on-disk forms (DESIGN.md §3.5):
//   - llm.c token shards: a header of 256 little-endian int32 (1024 bytes) with [0] = magic
//     20240520, [1] = version 1, [2] = token count n, then n little-endian uint16 tokens; the
//     file is exactly 1024 + 2n bytes.
//   - any other file: its raw bytes, each one token in [0, 256) (a byte-level "tokenizer").
//
// Tokens are stored as uint16 (both forms fit), 2 bytes per token: a 2 MB text file takes 4 MB,
// a 300 MB shard 300 MB.
//
// Errors: NotFound for a missing file; DataLoss for a malformed shard (message names the file
// and the byte offset of the bad field, or the expected and actual sizes); InvalidArgument for
// an empty text file. Immutable after creation, so safe to share between threads (the loaders
// of several ranks hold one shared_ptr<const TokenSource>).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/base/env.h"

namespace accel::data {

inline constexpr int32_t kTokenShardMagic = 20240520;
inline constexpr int32_t kTokenShardVersion = 1;
inline constexpr int64_t kTokenShardHeaderBytes = 256 * 4;

enum class TokenSourceKind { kTokenShard, kTextBytes };

class TokenSource {
 public:
  // llm.c token shard.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<TokenSource>> OpenTokenShard(
      Env* env, const std::string& path);
  // The file's bytes as tokens 0..255 (vocab 256).
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<TokenSource>> OpenTextBytes(
      Env* env, const std::string& path);
  // A shard if the file starts with the shard magic, else text bytes.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<TokenSource>> Open(Env* env,
                                                                         const std::string& path);
  // For tests and in-memory data; `tokens` must be non-empty.
  static std::unique_ptr<TokenSource> FromTokens(std::vector<uint16_t> tokens, TokenSourceKind kind,
                                                 std::string path);

  int64_t size() const { return static_cast<int64_t>(tokens_.size()); }
  // 0 <= i < size().
  int32_t token(int64_t i) const { return tokens_[static_cast<size_t>(i)]; }
  const uint16_t* data() const { return tokens_.data(); }
  int32_t max_token() const { return max_token_; }
  // A lower bound for the model's vocabulary: 256 for text, max_token() + 1 for shards.
  int32_t vocab_hint() const { return kind_ == TokenSourceKind::kTextBytes ? 256 : max_token_ + 1; }
  const std::string& path() const { return path_; }
  TokenSourceKind kind() const { return kind_; }

 private:
  TokenSource(std::vector<uint16_t> tokens, TokenSourceKind kind, std::string path);

  std::vector<uint16_t> tokens_;
  TokenSourceKind kind_;
  std::string path_;
  int32_t max_token_ = 0;
};

}  // namespace accel::data
