// SHARDED_STATE_DICT checkpoints: DIR/step_<N>/ holds metadata.json (format version, layout
// table, world size, strategy, step, data position, optimizer step, the resolved config, and
// which flat ranges each rank's file holds) and one rank_<R>.bin per rank with its pieces of the
// fp32 master parameters and the AdamW moments, each section checksummed. DIR/latest names the
// newest complete step. Nothing is gathered: every rank writes only its own ranges, and every
// element of the model is written exactly once (replicas other than the first write nothing).
//
// Loading intersects what each rank needs (its owned ranges under the NEW plan, which may have
// another world size or strategy) with the ranges saved, and reads only those byte ranges.
//
// The protocol (the trainer drives it; this module does no communication):
//   every rank:  WriteRankFile(env, dir, step, rank, ranges)      -> DIR/step_N.tmp/rank_R.bin
//   barrier
//   rank 0:      WriteMetadataAndCommit(env, dir, meta, keep_last) -> owner check, metadata.json,
//                fsyncs, rename step_N.tmp -> step_N, fsync DIR, write DIR/latest atomically,
//                prune this owner's old steps
// Before the first WriteRankFile into a directory, the trainer has rank 0 ClaimDir it
// (dir_owner.h), so no rank ever writes into another job's directory.
// Errors: DataLoss naming the file and byte offset for a truncated, corrupted or mismatched file;
// NotFound for a missing checkpoint; InvalidArgument when the checkpoint's layout does not fit
// the model. Format: docs/checkpoint_format.md. Offline tools: consolidate.h, inspect.h.
// Thread-compatible.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/base/env.h"
#include "engine/checkpoint/dir_owner.h"
#include "engine/checkpoint/full_model_writer.h"
#include "engine/model/param_specs.h"

namespace accel::checkpoint {

// A range of the flat layout with this rank's data for it: each pointer holds
// flat_end - flat_begin floats.
struct SaveRange {
  int64_t flat_begin = 0, flat_end = 0;
  const float* params = nullptr;
  const float* exp_avg = nullptr;
  const float* exp_avg_sq = nullptr;
};
// Null pointers skip that section.
struct LoadRange {
  int64_t flat_begin = 0, flat_end = 0;
  float* params = nullptr;
  float* exp_avg = nullptr;
  float* exp_avg_sq = nullptr;
};

struct CheckpointMeta {
  int64_t step = 0;            // optimizer steps completed
  int64_t data_position = 0;   // micro-batches consumed per rank (the loader's position)
  int64_t optimizer_step = 0;  // AdamW's step count
  int world_size = 1;
  std::string strategy;  // shard::StrategyName
  // Stored in metadata.json as JSON objects when they are JSON (read back compact), else strings.
  std::string model_config_json;  // model::Gpt2ConfigToJson
  std::string train_config_json;  // the resolved training options, for inspection
  // fp16 dynamic loss-scaler state (engine/train/loss_scaler.h JSON); empty when not in use.
  std::string loss_scaler_json;
  // ranges_by_rank[r] = the flat ranges rank r's file holds, in file order. Empty for a kind
  // without rank files.
  std::vector<std::vector<std::pair<int64_t, int64_t>>> ranges_by_rank;
  // What the step holds: "sharded" = rank files (exact resume); "sharded+full" = rank files plus
  // an fp32 model.safetensors (what the trainer writes for FULL_STATE_DICT); "sharded+16bit" =
  // rank files plus a 16-bit model.safetensors. "full" and "16bit" are model-file-only steps
  // (weights, no optimizer state), still read for resume. Model files sit in the step directory
  // beside config.json. A model above the writer's max_shard_bytes is several files
  // (model-0000k-of-0000n.safetensors) plus model.safetensors.index.json, all listed in
  // model_files (the index last) so that commit keeps and verification checks every one; a
  // loader opens the step directory (HfModelFile), which finds either form.
  std::string kind = "sharded";
  std::vector<ModelFileInfo> model_files;
  // The job that wrote the step (dir_owner.h); anonymous when metadata.json has no "owner"
  // (library use, or a step written before owners were recorded). Pruning deletes only steps
  // whose owner is the saving job's.
  CheckpointOwner owner;
  // The eval loss of the step's weights (engine/train/evaluation.h) when one was computed before
  // the save; keep_best keeps the steps with the lowest. Absent from metadata.json otherwise.
  std::optional<double> eval_loss;
};

// The step kinds above; KindHasRankFiles says which carry rank files (and so resume exactly).
inline constexpr char kKindSharded[] = "sharded";
inline constexpr char kKindFull[] = "full";
inline constexpr char kKind16Bit[] = "16bit";
inline constexpr char kKindSharded16Bit[] = "sharded+16bit";
inline constexpr char kKindShardedFull[] = "sharded+full";
bool IsKnownKind(std::string_view kind);
bool KindHasRankFiles(std::string_view kind);
// The name of a model file in a step directory.
inline constexpr char kModelFileName[] = "model.safetensors";

// How a rank file is cut into checksummed blocks. A partial read verifies (and so reads) whole
// blocks: smaller blocks make partial loads read less, larger ones make the table smaller.
struct RankFileOptions {
  uint32_t block_bytes = uint32_t{1} << 20;  // >= 64 and a multiple of 4
};

// DIR/step_<step>; a save in progress writes DIR/step_<step>.tmp (StepTmpDir).
std::string StepDir(const std::string& dir, int64_t step);
std::string StepTmpDir(const std::string& dir, int64_t step);

// Writes DIR/step_<step>.tmp/rank_<rank>.bin (creating the directories), fsyncs and closes it;
// the directory entry is made durable by rank 0's commit. `ranges` may be empty (a replica that
// is not the first writes an empty file). A file left by an earlier attempt is overwritten.
// InvalidArgument for a negative step or rank, a non-empty range with a null pointer, or
// overlapping ranges.
[[nodiscard]] absl::Status WriteRankFile(Env* env, const std::string& dir, int64_t step, int rank,
                                         const std::vector<SaveRange>& ranges,
                                         const RankFileOptions& options = {});
// Rank 0, after every rank's WriteRankFile returned (kinds with rank files) and after the model
// files of meta.model_files were written into StepTmpDir (each must exist there with its
// recorded size, else FailedPrecondition). Checks each rank file against
// meta.ranges_by_rank (FailedPrecondition if one is missing, DataLoss if one holds other ranges
// or another step) and that the ranges of all ranks tile the layout exactly once
// (InvalidArgument); an empty meta.model_config_json is filled from layout.config().
// First of all, DIR must be meta.owner's or nobody's yet (ClaimDir, dir_owner.h: it records
// meta.owner in DIR/owner.json on the first save); another job's directory is
// FailedPrecondition and nothing changes. The step's metadata records meta.owner.
// keep_last <= 0 keeps everything; otherwise, after `latest` points at the new step, the
// newest keep_last of meta.owner's steps at or below it stay and the rest of its steps go,
// together with its steps above it (the abandoned future of a run resumed from an earlier step)
// and stale step_*.tmp directories; steps another owner wrote are never pruned. A step leaves
// by a rename to .trash-step_N first (prune.h), so no loader sees it half deleted.
// keep_best > 0 (with keep_last > 0) also keeps the keep_best of meta.owner's steps at or below
// the new one with the lowest recorded eval loss (a step without one never counts; ties keep
// the newer step).
// A pruning failure is logged, not returned: the checkpoint is already committed.
// Saving a step that already exists replaces it (FailedPrecondition when another owner wrote
// it); if `latest` named it, `latest` first moves back to the previous complete step, so a
// crash meanwhile leaves that one.
[[nodiscard]] absl::Status WriteMetadataAndCommit(Env* env, const std::string& dir,
                                                  const CheckpointMeta& meta,
                                                  const model::ModelLayout& layout, int keep_last,
                                                  int keep_best = 0);

// Verifies a step's model file i (meta.model_files[i]): its size and its CRC-32C, reading the whole
// file in chunks. DataLoss naming the file otherwise.
[[nodiscard]] absl::Status VerifyModelFile(Env* env, const std::string& step_dir,
                                           const ModelFileInfo& info);

// The step directory DIR/latest points at; NotFound if there is none, DataLoss if `latest` is
// malformed or names a step without metadata.json.
[[nodiscard]] absl::StatusOr<std::string> LatestStepDir(Env* env, const std::string& dir);
[[nodiscard]] absl::StatusOr<CheckpointMeta> ReadMetadata(Env* env, const std::string& step_dir);
// Fills every LoadRange from the checkpoint (a kind with rank files; FailedPrecondition for
// "full" / "16bit" steps, whose model.safetensors hf_weights.h / hf_model_file.h read), reading only the needed byte ranges (whole
// checksummed blocks around them), verifying checksums of what it reads. A null pointer skips
// that section (e.g. params only, for inference or a fresh optimizer). InvalidArgument if the
// checkpoint's layout table differs from `layout` (names, shapes, offsets) or a range lies
// outside it.
[[nodiscard]] absl::Status LoadRanges(Env* env, const std::string& step_dir,
                                      const model::ModelLayout& layout,
                                      const std::vector<LoadRange>& ranges);

}  // namespace accel::checkpoint
