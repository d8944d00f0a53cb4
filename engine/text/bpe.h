// BpeModel: Hugging Face's BPE model (models/bpe) with its exact merge order: a min-heap of
// (rank, position) over adjacent pairs, stale entries skipped, as in HF's Word::merge_all.
// Options: unk_token with fuse_unk, byte_fallback (<0xNN> tokens for characters outside the
// vocabulary), ignore_merges (a word already in the vocabulary is one token),
// continuing_subword_prefix / end_of_word_suffix. dropout other than null/0 is refused.
//
// Speed: merge ranks live in a hash map keyed by the id pair (one 64-bit key), and the ids of
// each word are cached (words under 256 bytes, up to kCacheWords of them), as HF does.
// Thread safety: Tokenize may run from many threads; the cache is behind a mutex.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "engine/text/json_fields.h"
#include "engine/text/string_map.h"

namespace accel::text {

struct BpeOptions {
  std::optional<std::string> unk_token;
  bool fuse_unk = false;
  bool byte_fallback = false;
  bool ignore_merges = false;
  std::optional<std::string> continuing_subword_prefix;
  std::optional<std::string> end_of_word_suffix;
};

class BpeModel {
 public:
  static constexpr size_t kCacheWords = 100000;

  // `merges` in rank order. InvalidArgument (naming `origin` and the merge's rank) when a merge
  // names a token, or makes one, that is not in the vocabulary, or unk_token is not in it.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<BpeModel>> Create(
      StringMap<int32_t> vocab, const std::vector<std::pair<std::string, std::string>>& merges,
      BpeOptions options, std::string_view origin);

  // tokenizer.json's "model" object (type BPE; merges as "a b" strings or [a, b] pairs).
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<BpeModel>> FromJson(const Json& j,
                                                                          const JsonPath& at);

  // Appends the ids of one pre-tokenized word.
  void Tokenize(std::string_view word, std::vector<int32_t>* ids) const;

  std::optional<int32_t> TokenToId(std::string_view token) const;
  // nullptr for an id outside the vocabulary.
  const std::string* IdToToken(int32_t id) const;
  // Number of vocabulary entries (HF's get_vocab_size).
  size_t vocab_size() const { return vocab_.size(); }
  // The largest id in the vocabulary (-1 when it is empty).
  int32_t max_id() const { return max_id_; }

 private:
  struct Merge {
    uint32_t rank;
    int32_t new_id;
  };
  BpeModel() = default;
  static uint64_t PairKey(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }
  void MergeWord(std::string_view word, std::vector<int32_t>* ids) const;
  void MergeAll(std::vector<int32_t>* symbols) const;

  StringMap<int32_t> vocab_;
  absl::flat_hash_map<int32_t, std::string> vocab_r_;
  absl::flat_hash_map<uint64_t, Merge> merges_;
  BpeOptions options_;
  std::optional<int32_t> unk_id_;
  int32_t max_id_ = -1;
  std::vector<std::optional<int32_t>> byte_ids_;  // <0xNN> ids when byte_fallback

  // The word cache, in shards so that threads encoding at once rarely wait on each other.
  struct CacheShard {
    absl::Mutex mu;
    StringMap<std::vector<int32_t>> words ABSL_GUARDED_BY(mu);
  };
  static constexpr size_t kCacheShards = 16;
  CacheShard& ShardFor(std::string_view word) const {
    return cache_[StringViewHash{}(word) % kCacheShards];
  }
  mutable std::array<CacheShard, kCacheShards> cache_;
};

}  // namespace accel::text
