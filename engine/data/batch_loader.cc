#include "engine/data/batch_loader.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/kernels/cross_entropy.h"

namespace accel::data {

uint64_t UniformBelow(std::mt19937_64& gen, uint64_t n) {
  // Reject the first (2^64 mod n) values so the remaining range is a multiple of n.
  const uint64_t threshold = (0 - n) % n;
  for (;;) {
    const uint64_t x = gen();
    if (x >= threshold) return x % n;
  }
}

std::vector<int64_t> EpochPermutation(uint64_t seed, int64_t epoch, int64_t n) {
  std::vector<int64_t> perm(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) perm[i] = i;
  // Mix seed and epoch (splitmix64 of the pair) so that no (seed, epoch) repeats another's order:
  // a plain seed + epoch would make seed s's second epoch seed s+1's first.
  uint64_t z = seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(epoch) + 0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  std::mt19937_64 gen(z ^ (z >> 31));
  for (int64_t i = n - 1; i > 0; --i) {
    const int64_t j = static_cast<int64_t>(UniformBelow(gen, static_cast<uint64_t>(i) + 1));
    std::swap(perm[i], perm[j]);
  }
  return perm;
}

absl::StatusOr<std::unique_ptr<BatchLoader>> BatchLoader::Create(
    std::shared_ptr<const TokenSource> source, const BatchLoaderOptions& options) {
  if (source == nullptr) return absl::InvalidArgumentError("BatchLoader: no token source");
  if (options.batch_size < 1 || options.seq_len < 1) {
    return absl::InvalidArgumentError(absl::StrCat("BatchLoader: batch size ", options.batch_size,
                                                   " and sequence length ", options.seq_len,
                                                   " must be >= 1"));
  }
  if (options.world < 1 || options.rank < 0 || options.rank >= options.world) {
    return absl::InvalidArgumentError(absl::StrCat("BatchLoader: rank ", options.rank,
                                                   " is not in [0, world = ", options.world, ")"));
  }
  int64_t window_tokens;  // B * T * world
  if (__builtin_mul_overflow(options.batch_size, options.seq_len, &window_tokens) ||
      __builtin_mul_overflow(window_tokens, int64_t{options.world}, &window_tokens) ||
      window_tokens == INT64_MAX) {
    return absl::InvalidArgumentError(
        absl::StrCat("BatchLoader: B * T * world overflows (B = ", options.batch_size,
                     ", T = ", options.seq_len, ", world = ", options.world, ")"));
  }
  const int64_t windows = (source->size() - 1) / window_tokens;
  if (windows < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "file ", source->path(), " has ", source->size(),
        " tokens, too few for B = ", options.batch_size, ", T = ", options.seq_len,
        ", world = ", options.world, ": needs at least B*T*world + 1 = ", window_tokens + 1));
  }
  return std::unique_ptr<BatchLoader>(new BatchLoader(std::move(source), options, windows));
}

int64_t BatchLoader::window(int64_t k) const {
  const int64_t w = k % windows_per_epoch_;
  if (!options_.shuffle_seed.has_value()) return w;
  const int64_t e = epoch(k);
  std::shared_ptr<const std::vector<int64_t>> perm;
  {
    std::lock_guard<std::mutex> lock(perm_mu_);
    if (perm_epoch_ != e) {
      perm_ = std::make_shared<const std::vector<int64_t>>(
          EpochPermutation(*options_.shuffle_seed, e, windows_per_epoch_));
      perm_epoch_ = e;
    }
    perm = perm_;
  }
  return (*perm)[static_cast<size_t>(w)];
}

int64_t BatchLoader::token_offset(int64_t k) const {
  const int64_t bt = options_.batch_size * options_.seq_len;
  return (window(k) * options_.world + options_.rank) * bt;
}

namespace {

// The copy loop at the source's token width (ids of 32-bit sources are <= INT32_MAX). mask, when
// not null, is aligned with tokens: a target token with mask 0 becomes kIgnoreIndex.
template <typename T>
void CopyShifted(const T* tokens, const uint8_t* mask, int64_t n, int32_t* inputs,
                 int32_t* targets) {
  for (int64_t i = 0; i < n; ++i) {
    inputs[i] = static_cast<int32_t>(tokens[i]);
    targets[i] = static_cast<int32_t>(tokens[i + 1]);
  }
  if (mask == nullptr) return;
  for (int64_t i = 0; i < n; ++i) {
    if (mask[i + 1] == 0) targets[i] = kernels::kIgnoreIndex;
  }
}

}  // namespace

void BatchLoader::Fill(int64_t k, int32_t* inputs, int32_t* targets) const {
  const int64_t bt = options_.batch_size * options_.seq_len;
  const int64_t first = token_offset(k);
  const uint8_t* mask = source_->has_mask() ? source_->mask().data() + first : nullptr;
  if (source_->token_bytes() == 2) {
    CopyShifted(source_->tokens16().data() + first, mask, bt, inputs, targets);
  } else {
    CopyShifted(source_->tokens32().data() + first, mask, bt, inputs, targets);
  }
}

void BatchLoader::Next(int32_t* inputs, int32_t* targets) {
  Fill(position_, inputs, targets);
  ++position_;
}

}  // namespace accel::data
