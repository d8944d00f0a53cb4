// StepReader: one committed step directory as a single flat address space. It reads
// metadata.json once, then serves any flat range of params / exp_avg / exp_avg_sq from
// whichever rank files hold it, opening a rank file only when a read first touches it and
// reading only the blocks a request covers. LoadRanges, consolidation and inspect sit on it.
//
// Every rank file opened is checked against the metadata before use: size, whole-file checksum,
// step, rank and ranges (DataLoss naming the file, with the byte offset where there is one).
// Thread-compatible: one user at a time (rank files are opened lazily).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/base/env.h"
#include "engine/checkpoint/checkpoint_metadata.h"
#include "engine/checkpoint/rank_file.h"

namespace accel::checkpoint {

class StepReader {
 public:
  // NotFound when the directory or its metadata.json is missing; DataLoss for a bad metadata.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<StepReader>> Open(
      Env* env, const std::string& step_dir);

  const std::string& step_dir() const { return step_dir_; }
  const StepMetadata& metadata() const { return metadata_; }

  // Copies flat elements [flat_begin, flat_end) of `section` into dst (flat_end - flat_begin
  // floats). InvalidArgument when the range lies outside [0, num_params).
  [[nodiscard]] absl::Status Read(Section section, int64_t flat_begin, int64_t flat_end,
                                  float* dst);

  // Opens rank file r (if not yet open) and reads every block of it.
  [[nodiscard]] absl::Status VerifyFile(int rank);

 private:
  struct Piece {  // one saved range, located
    int64_t flat_begin, flat_end;
    int rank;
    size_t range_index;
  };
  StepReader(Env* env, std::string step_dir, StepMetadata metadata);
  [[nodiscard]] absl::StatusOr<const RankFileReader*> File(int rank);

  Env* env_;
  std::string step_dir_;
  StepMetadata metadata_;
  std::vector<Piece> pieces_;  // sorted by flat_begin, tiling [0, num_params)
  std::vector<std::unique_ptr<RankFileReader>> files_;  // by rank; null until opened
};

}  // namespace accel::checkpoint
