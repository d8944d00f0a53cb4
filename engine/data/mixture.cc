#include "engine/data/mixture.h"

#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"

namespace accel::data {
namespace {

enum Salt : uint64_t { kValidationDraw = 1, kWeightDraw = 2, kShuffle = 3 };

// A number in [0, 1) drawn from the document's position alone.
double Draw(uint64_t seed, Salt salt, const MixtureFile& f, uint64_t record) {
  uint64_t h = SplitMix64(seed ^ (salt * 0x9E3779B97F4A7C15ULL));
  h = SplitMix64(h ^ static_cast<uint64_t>(f.source + 1));
  h = SplitMix64(h ^ static_cast<uint64_t>(f.index_in_source));
  h = SplitMix64(h ^ record);
  return static_cast<double>(h >> 11) * 0x1.0p-53;
}

}  // namespace

uint64_t SplitMix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

absl::StatusOr<MixturePlan> PlanMixture(const PrepareOptions& options,
                                        const std::vector<MixtureFile>& files,
                                        const std::vector<std::vector<const EncodedDocument*>>& docs,
                                        int64_t skipped_records) {
  MixturePlan plan;
  plan.has_validation = options.validation_fraction > 0 || !options.validation_files.empty();
  bool mixture = options.sources.size() > 1;
  for (const DataSource& s : options.sources) mixture = mixture || s.weight != 1.0;
  for (size_t f = 0; f < files.size(); ++f) {
    const MixtureFile& file = files[f];
    for (size_t r = 0; r < docs[f].size(); ++r) {
      if (docs[f][r] == nullptr) continue;
      const DocRef ref{static_cast<uint32_t>(f), static_cast<uint32_t>(r)};
      if (file.validation) {
        plan.validation.push_back(ref);
        continue;
      }
      if (options.validation_fraction > 0 &&
          Draw(options.seed, kValidationDraw, file, r) < options.validation_fraction) {
        plan.validation.push_back(ref);
        continue;
      }
      const double w = options.sources[static_cast<size_t>(file.source)].weight;
      int64_t copies = static_cast<int64_t>(std::floor(w));
      if (Draw(options.seed, kWeightDraw, file, r) < w - std::floor(w)) ++copies;
      for (int64_t c = 0; c < copies; ++c) plan.train.push_back(ref);
    }
  }
  if (mixture) {
    // Fisher-Yates with our own generator: std::shuffle's draws differ between libraries.
    uint64_t state = SplitMix64(options.seed ^ (kShuffle * 0x9E3779B97F4A7C15ULL));
    for (size_t i = plan.train.size(); i > 1; --i) {
      state = SplitMix64(state);
      std::swap(plan.train[i - 1], plan.train[state % i]);
    }
  }
  const std::string skipped =
      skipped_records > 0 ? absl::StrCat(" (", skipped_records, " invalid records skipped)") : "";
  if (plan.train.empty()) {
    std::string names;
    for (const DataSource& s : options.sources) absl::StrAppend(&names, names.empty() ? "" : ", ", s.path);
    return absl::InvalidArgumentError(
        absl::StrCat("data: the dataset is empty: no training document in ", names, skipped));
  }
  if (plan.has_validation && plan.validation.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "data.validation: no validation document",
        options.validation_fraction > 0
            ? absl::StrCat(" (fraction ", options.validation_fraction, " of ", plan.train.size(),
                           " documents drew none)")
            : "",
        skipped));
  }
  return plan;
}

}  // namespace accel::data
