// metadata.json of a sharded checkpoint step: what CheckpointMeta says, plus the layout table
// the data was saved under and every rank file's size and checksum. The JSON carries its own
// CRC-32C ("checksum", over the canonical compact dump of the object without that key), so a
// flipped digit is DataLoss rather than a silently different step. Format:
// docs/checkpoint_format.md.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/checkpoint/sharded_checkpoint.h"
#include "engine/model/param_specs.h"

namespace accel::checkpoint {

inline constexpr char kCheckpointFormatName[] = "accel-sharded-checkpoint";
inline constexpr int kCheckpointFormatVersion = 1;
inline constexpr char kMetadataFileName[] = "metadata.json";
inline constexpr char kLatestFileName[] = "latest";

// "rank_<R>.bin".
std::string RankFileName(int rank);

struct TensorRecord {
  std::string name;
  std::vector<int64_t> shape;
  int64_t offset = 0;  // first element in the flat layout
  int64_t numel = 0;
  int unit = 0;
};

struct RankFileRecord {
  int rank = 0;
  std::string file;  // name inside the step directory
  std::vector<std::pair<int64_t, int64_t>> ranges;
  uint64_t bytes = 0;
  uint32_t crc32c = 0;  // RankFileReader::file_crc()
};

struct StepMetadata {
  CheckpointMeta meta;  // meta.ranges_by_rank mirrors files[r].ranges
  int64_t num_params = 0;
  std::vector<TensorRecord> tensors;
  std::vector<model::UnitRange> units;
  std::vector<RankFileRecord> files;  // one per rank, files[r].rank == r

  uint64_t total_bytes() const;
};

// The layout part of a StepMetadata, from the model's layout.
void SetLayoutTable(const model::ModelLayout& layout, StepMetadata* out);

// Pretty-printed JSON with its checksum.
std::string StepMetadataToJson(const StepMetadata& metadata);
// DataLoss naming `path` (and the byte offset for a JSON syntax error) for invalid JSON, a
// checksum mismatch, a wrong format name or version, or missing / inconsistent fields (the
// ranges of all files must tile [0, num_params) exactly, tensors must lie inside it).
[[nodiscard]] absl::StatusOr<StepMetadata> StepMetadataFromJson(std::string_view text,
                                                                const std::string& path);

// InvalidArgument naming the first difference when the saved layout table is not `layout`'s
// (names, shapes, offsets, units).
[[nodiscard]] absl::Status CheckLayoutMatches(const StepMetadata& metadata,
                                              const model::ModelLayout& layout,
                                              const std::string& path);

// OK when the ranges of all ranks together cover [0, num_params) exactly once; otherwise
// `code`-status naming the first gap or overlap.
[[nodiscard]] absl::Status CheckRangesTile(
    const std::vector<std::vector<std::pair<int64_t, int64_t>>>& ranges_by_rank, int64_t num_params,
    absl::StatusCode code, std::string_view context);

}  // namespace accel::checkpoint
