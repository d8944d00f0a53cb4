// Cuts a TokenSource into (B, T) training batches for one data-parallel rank.
//
// The token stream is split into windows of B*T*world tokens; window w holds one B*T slice per
// rank. Batch k of rank r reads the B*T + 1 consecutive tokens starting at
//   (w * world + r) * B * T,   w = k mod windows_per_epoch        (llm.c's order)
// so the ranks of one step read disjoint slices, and the stream wraps around (a new epoch) after
// windows_per_epoch = (size - 1) / (B * T * world) batches; the tail that does not fill a window
// is never read. inputs = those tokens [0, B*T), targets = [1, B*T] (the next token).
// With a loss mask on the source (token_source.h), a target whose token has mask 0 is written as
// -100 (kernels::kIgnoreIndex, PyTorch's ignore_index): its loss does not count. Without one the
// targets are the tokens themselves.
//
// With a shuffle seed s, epoch e = k / windows_per_epoch visits windows in the order of a
// Fisher-Yates permutation of [0, windows_per_epoch) drawn from std::mt19937_64 seeded with
// a mix of (s, e) through a portable uniform-integer helper, so every rank and every platform computes the
// same order: ranks never collide within a step, and a resumed run replays the same batches.
//
// The position k (batches consumed) is what checkpoints store; set_position(k) resumes there.
// Fill is const and thread-safe; Next/set_position mutate the position (one user at a time).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/data/token_source.h"

namespace accel::data {

struct BatchLoaderOptions {
  int64_t batch_size = 1;  // B
  int64_t seq_len = 1;     // T
  int rank = 0;
  int world = 1;
  std::optional<uint64_t> shuffle_seed;  // none: sequential order
};

class BatchLoader {
 public:
  // InvalidArgument unless B, T >= 1, 0 <= rank < world and the source holds at least
  // B*T*world + 1 tokens (one window for every rank plus the last target).
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<BatchLoader>> Create(
      std::shared_ptr<const TokenSource> source, const BatchLoaderOptions& options);

  // Writes batch k (k >= 0) of this rank: inputs and targets, B*T tokens each, (B, T) row-major;
  // masked targets are -100.
  void Fill(int64_t k, int32_t* inputs, int32_t* targets) const;
  // Fill(position()) and advance the position.
  void Next(int32_t* inputs, int32_t* targets);

  int64_t position() const { return position_; }
  void set_position(int64_t k) { position_ = k; }

  int64_t windows_per_epoch() const { return windows_per_epoch_; }
  int64_t epoch(int64_t k) const { return k / windows_per_epoch_; }
  // The window batch k reads (sequential or permuted) and the index of its first token.
  int64_t window(int64_t k) const;
  int64_t token_offset(int64_t k) const;

  const BatchLoaderOptions& options() const { return options_; }
  const TokenSource& source() const { return *source_; }

 private:
  BatchLoader(std::shared_ptr<const TokenSource> source, const BatchLoaderOptions& options,
              int64_t windows_per_epoch)
      : source_(std::move(source)), options_(options), windows_per_epoch_(windows_per_epoch) {}

  std::shared_ptr<const TokenSource> source_;
  BatchLoaderOptions options_;
  int64_t windows_per_epoch_;
  int64_t position_ = 0;

  // The permutation of the most recent epoch asked for; regenerating it per batch would cost
  // O(windows_per_epoch) each time.
  mutable std::mutex perm_mu_;
  mutable int64_t perm_epoch_ = -1;
  mutable std::shared_ptr<const std::vector<int64_t>> perm_;
};

// Uniform integer in [0, n), n >= 1, by rejection sampling: the same values on every platform
// (std::uniform_int_distribution's algorithm is implementation-defined).
uint64_t UniformBelow(std::mt19937_64& gen, uint64_t n);
// Fisher-Yates permutation of [0, n) from std::mt19937_64 seeded with a splitmix64 mix of (seed, epoch).
std::vector<int64_t> EpochPermutation(uint64_t seed, int64_t epoch, int64_t n);

}  // namespace accel::data
