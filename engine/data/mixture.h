// Which documents go where, and in which order (prepare.h has the rules in words): the
// validation split by fraction, source weights, and the mixture's shuffle. A pure function of
// the options and the documents' positions, so the same inputs give the same shards.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/data/prepare.h"
#include "engine/data/record_encoder.h"

namespace accel::data {

struct MixtureFile {
  int source = 0;           // index into PrepareOptions::sources; -1 for a validation file
  int index_in_source = 0;  // its position among the source's (or validation's) files
  bool validation = false;
};

struct DocRef {
  uint32_t file = 0;
  uint32_t record = 0;
};

struct MixturePlan {
  std::vector<DocRef> train;
  std::vector<DocRef> validation;
  bool has_validation = false;
};

// SplitMix64: the stateless generator behind every draw (Steele et al.; Java's SplittableRandom).
uint64_t SplitMix64(uint64_t x);

// docs[f][r] is null for a skipped record. InvalidArgument when the train set (or a requested
// validation set) ends up with no document.
[[nodiscard]] absl::StatusOr<MixturePlan> PlanMixture(
    const PrepareOptions& options, const std::vector<MixtureFile>& files,
    const std::vector<std::vector<const EncodedDocument*>>& docs, int64_t skipped_records);

}  // namespace accel::data
