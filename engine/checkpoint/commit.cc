// WriteMetadataAndCommit: the step becomes visible only through a rename and then the `latest`
// pointer, each made durable before the next, so a crash at any point leaves `latest` naming a
// complete step (the old one or the new one). See docs/checkpoint_format.md, "Crash safety".
#include <algorithm>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/base/logging.h"
#include "engine/base/status_macros.h"
#include "engine/checkpoint/checkpoint_metadata.h"
#include "engine/checkpoint/prune.h"
#include "engine/checkpoint/rank_file.h"
#include "engine/checkpoint/sharded_checkpoint.h"
#include "engine/model/model_config.h"

namespace accel::checkpoint {
namespace {

// Checks rank r's file against what rank 0 was told, and records its size and checksum.
absl::StatusOr<RankFileRecord> ExamineRankFile(
    Env* env, const std::string& tmp, int64_t step, int rank,
    const std::vector<std::pair<int64_t, int64_t>>& want) {
  const std::string path = JoinPath(tmp, RankFileName(rank));
  if (!env->FileExists(path)) {
    return absl::FailedPreconditionError(
        absl::StrCat("committing step ", step, ": rank ", rank, " has not written ", path,
                     " (every rank must call WriteRankFile before rank 0 commits)"));
  }
  ACCEL_ASSIGN_OR_RETURN(std::unique_ptr<RankFileReader> file, RankFileReader::Open(env, path));
  ACCEL_RETURN_IF_ERROR(file->ExpectIdentity(step, rank));
  std::vector<std::pair<int64_t, int64_t>> have;
  for (const RankFileRange& r : file->ranges()) have.emplace_back(r.flat_begin, r.flat_end);
  if (have != want) {
    return absl::DataLossError(absl::StrCat(path, ": the ranges in its header (offset 56) are ",
                                            "not the ones rank 0 was given for rank ", rank));
  }
  RankFileRecord rec;
  rec.rank = rank;
  rec.file = RankFileName(rank);
  rec.ranges = std::move(have);
  rec.bytes = file->file_size();
  rec.crc32c = file->file_crc();
  return rec;
}

// The highest complete step below `step` in dir, or -1.
int64_t PreviousStep(Env* env, const std::string& dir, int64_t step) {
  absl::StatusOr<std::vector<std::string>> names = env->ListDir(dir);
  int64_t best = -1;
  if (!names.ok()) return best;
  for (const std::string& name : *names) {
    const int64_t n = ParseStepName(name, /*tmp=*/false);
    if (n >= 0 && n < step && env->FileExists(JoinPath(JoinPath(dir, name), kMetadataFileName))) {
      best = std::max(best, n);
    }
  }
  return best;
}

// Makes room for the rename when step_<N> already exists (a run resumed from an earlier step
// reached N again). If `latest` names it, `latest` first moves back to the previous complete
// step (or goes), so no crash leaves it naming a half-replaced directory. A step another job
// wrote is never replaced (FailedPrecondition); one whose metadata cannot be read is.
absl::Status RemoveExistingStep(Env* env, const std::string& dir, int64_t step,
                                const CheckpointOwner& owner) {
  const std::string final_dir = StepDir(dir, step);
  if (!env->FileExists(final_dir)) return absl::OkStatus();
  absl::StatusOr<CheckpointOwner> wrote = StepOwner(env, final_dir);
  if (wrote.ok() && *wrote != owner) {
    return absl::FailedPreconditionError(absl::StrCat(
        final_dir, " was written by ", DescribeOwner(*wrote), "; ", DescribeOwner(owner),
        " does not replace another job's step (give the job a directory of its own)"));
  }
  absl::StatusOr<std::string> latest = LatestStepDir(env, dir);
  if (latest.ok() && *latest == final_dir) {
    const int64_t previous = PreviousStep(env, dir, step);
    const std::string latest_path = JoinPath(dir, kLatestFileName);
    if (previous >= 0) {
      ACCEL_RETURN_IF_ERROR(
          WriteFileAtomic(env, latest_path, absl::StrCat("step_", previous, "\n")));
    } else {
      ACCEL_RETURN_IF_ERROR(env->DeleteFile(latest_path));
      ACCEL_RETURN_IF_ERROR(env->SyncDir(dir));
    }
  }
  ACCEL_LOG(warn, "checkpoint: replacing existing {}", final_dir);
  ACCEL_RETURN_IF_ERROR(RemoveStepDir(env, dir, absl::StrCat("step_", step)));
  return env->SyncDir(dir);
}

}  // namespace

absl::Status WriteMetadataAndCommit(Env* env, const std::string& dir, const CheckpointMeta& meta,
                                    const model::ModelLayout& layout, int keep_last,
                                    int keep_best) {
  const std::string context = absl::StrCat("committing checkpoint step ", meta.step, " in ", dir);
  if (!IsKnownKind(meta.kind)) {
    return absl::InvalidArgumentError(absl::StrCat(context, ": unknown kind \"", meta.kind, "\""));
  }
  const bool rank_files = KindHasRankFiles(meta.kind);
  const size_t lists = rank_files ? static_cast<size_t>(std::max(meta.world_size, 0)) : 0;
  if (meta.step < 0 || meta.world_size < 1 || meta.ranges_by_rank.size() != lists) {
    return absl::InvalidArgumentError(absl::StrCat(
        context, ": needs step >= 0 and one range list per rank for a kind with rank files, none ",
        "otherwise (kind ", meta.kind, ", world_size ", meta.world_size, ", ",
        meta.ranges_by_rank.size(), " lists)"));
  }
  if (!rank_files && meta.model_files.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(context, ": a \"", meta.kind, "\" step needs its model file"));
  }
  if (rank_files) {
    ACCEL_RETURN_IF_ERROR(CheckRangesTile(meta.ranges_by_rank, layout.num_params(),
                                          absl::StatusCode::kInvalidArgument, context));
  }
  // The directory is this job's (or becomes it) before anything in it changes.
  ACCEL_RETURN_IF_ERROR(ClaimDir(env, dir, meta.owner));
  StepMetadata m;
  m.meta = meta;
  if (m.meta.model_config_json.empty()) {
    m.meta.model_config_json = model::ModelConfigToJson(layout.config());
  }
  SetLayoutTable(layout, &m);

  const std::string tmp = StepTmpDir(dir, meta.step);
  std::set<std::string> expected = {std::string(kMetadataFileName)};
  for (int r = 0; rank_files && r < meta.world_size; ++r) {
    ACCEL_ASSIGN_OR_RETURN(RankFileRecord rec,
                           ExamineRankFile(env, tmp, meta.step, r, meta.ranges_by_rank[r]));
    expected.insert(rec.file);
    m.files.push_back(std::move(rec));
  }
  for (const ModelFileInfo& f : meta.model_files) {
    const std::string path = JoinPath(tmp, f.file);
    absl::StatusOr<uint64_t> size = env->GetFileSize(path);
    if (!size.ok() || *size != f.bytes) {
      return absl::FailedPreconditionError(absl::StrCat(
          context, ": model file ", path, " is missing or not ", f.bytes,
          " bytes (it must be finished before the commit)"));
    }
    expected.insert(f.file);
    expected.insert("config.json");  // written beside every model file
  }
  // Files left by an earlier attempt at this step with more ranks would otherwise be renamed
  // into the committed directory.
  ACCEL_ASSIGN_OR_RETURN(std::vector<std::string> present, env->ListDir(tmp));
  for (const std::string& name : present) {
    if (!expected.contains(name)) {
      ACCEL_RETURN_IF_ERROR(env->DeleteRecursively(JoinPath(tmp, name)));
    }
  }

  {
    ACCEL_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file,
                           env->NewWritableFile(JoinPath(tmp, kMetadataFileName)));
    ACCEL_RETURN_IF_ERROR(file->Append(StepMetadataToJson(m)));
    ACCEL_RETURN_IF_ERROR(file->Sync());
    ACCEL_RETURN_IF_ERROR(file->Close());
  }
  // Every rank file and metadata.json are durable entries of tmp before tmp becomes the step.
  ACCEL_RETURN_IF_ERROR(env->SyncDir(tmp));
  ACCEL_RETURN_IF_ERROR(RemoveExistingStep(env, dir, meta.step, meta.owner));
  ACCEL_RETURN_IF_ERROR(env->RenameFile(tmp, StepDir(dir, meta.step)));
  ACCEL_RETURN_IF_ERROR(env->SyncDir(dir));
  // The checkpoint directory itself may be new (first save).
  ACCEL_RETURN_IF_ERROR(env->SyncDir(DirName(dir)));
  ACCEL_RETURN_IF_ERROR(
      WriteFileAtomic(env, JoinPath(dir, kLatestFileName), absl::StrCat("step_", meta.step, "\n")));
  Prune(env, dir, meta.step, keep_last, meta.owner, keep_best);
  return absl::OkStatus();
}

}  // namespace accel::checkpoint
