#include "engine/checkpoint/step_reader.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"

namespace accel::checkpoint {

absl::StatusOr<std::unique_ptr<StepReader>> StepReader::Open(Env* env,
                                                             const std::string& step_dir) {
  const std::string path = JoinPath(step_dir, kMetadataFileName);
  if (!env->FileExists(path)) {
    return absl::NotFoundError(
        absl::StrCat("no checkpoint at ", step_dir, " (", path, " does not exist)"));
  }
  ACCEL_ASSIGN_OR_RETURN(std::string text, ReadFileToString(env, path));
  ACCEL_ASSIGN_OR_RETURN(StepMetadata metadata, StepMetadataFromJson(text, path));
  return std::unique_ptr<StepReader>(new StepReader(env, step_dir, std::move(metadata)));
}

StepReader::StepReader(Env* env, std::string step_dir, StepMetadata metadata)
    : env_(env), step_dir_(std::move(step_dir)), metadata_(std::move(metadata)) {
  for (const RankFileRecord& f : metadata_.files) {
    for (size_t i = 0; i < f.ranges.size(); ++i) {
      if (f.ranges[i].first < f.ranges[i].second) {
        pieces_.push_back({f.ranges[i].first, f.ranges[i].second, f.rank, i});
      }
    }
  }
  // StepMetadataFromJson checked that the pieces tile [0, num_params).
  std::sort(pieces_.begin(), pieces_.end(),
            [](const Piece& a, const Piece& b) { return a.flat_begin < b.flat_begin; });
  files_.resize(metadata_.files.size());
}

absl::StatusOr<const RankFileReader*> StepReader::File(int rank) {
  if (files_[rank] != nullptr) return files_[rank].get();
  const RankFileRecord& rec = metadata_.files[rank];
  const std::string path = JoinPath(step_dir_, rec.file);
  if (!env_->FileExists(path)) {
    return absl::DataLossError(
        absl::StrCat(path, ": missing, but ", kMetadataFileName, " lists it"));
  }
  absl::StatusOr<uint64_t> size_or = env_->GetFileSize(path);
  if (absl::IsInvalidArgument(size_or.status())) {
    // Something other than a file (a directory) stands where the rank file was: the step is
    // damaged, like a missing file, and says so instead of reporting a bogus size.
    return absl::DataLossError(absl::StrCat(size_or.status().message(), ", but ",
                                            kMetadataFileName, " lists it as a rank file"));
  }
  ACCEL_ASSIGN_OR_RETURN(uint64_t size, std::move(size_or));
  if (size != rec.bytes) {
    // Checked before parsing so a truncated file is reported as such, with where it ends.
    return absl::DataLossError(absl::StrCat(
        path, ": ", size < rec.bytes ? "truncated at offset " : "unexpected bytes at offset ",
        std::min(size, rec.bytes), ": the file has ", size, " bytes, ", kMetadataFileName, " says ",
        rec.bytes));
  }
  ACCEL_ASSIGN_OR_RETURN(std::unique_ptr<RankFileReader> file, RankFileReader::Open(env_, path));
  ACCEL_RETURN_IF_ERROR(file->ExpectIdentity(metadata_.meta.step, rank));
  if (file->file_crc() != rec.crc32c) {
    return absl::DataLossError(absl::StrCat(
        path, ": its checksum (footer at offset ", file->file_size() - kRankFileFooterBytes,
        ") differs from the one ", kMetadataFileName, " records: the file is from another save"));
  }
  bool same = file->ranges().size() == rec.ranges.size();
  for (size_t i = 0; same && i < rec.ranges.size(); ++i) {
    same = file->ranges()[i].flat_begin == rec.ranges[i].first &&
           file->ranges()[i].flat_end == rec.ranges[i].second;
  }
  if (!same) {
    return absl::DataLossError(absl::StrCat(path, ": the ranges in its header (offset 56) differ ",
                                            "from the ones ", kMetadataFileName, " records"));
  }
  files_[rank] = std::move(file);
  return files_[rank].get();
}

absl::Status StepReader::Read(Section section, int64_t flat_begin, int64_t flat_end, float* dst) {
  if (!KindHasRankFiles(metadata_.meta.kind)) {
    return absl::FailedPreconditionError(absl::StrCat(
        step_dir_, " is a \"", metadata_.meta.kind, "\" checkpoint: it holds Hugging Face model "
        "files (load the step directory with --init-weights), not rank files"));
  }
  if (flat_begin < 0 || flat_end < flat_begin || flat_end > metadata_.num_params) {
    return absl::InvalidArgumentError(absl::StrCat(step_dir_, ": elements [", flat_begin, ", ",
                                                   flat_end, ") are outside the checkpoint's ",
                                                   metadata_.num_params, " parameters"));
  }
  // The first piece that ends after flat_begin; pieces are contiguous from there on.
  auto it = std::upper_bound(pieces_.begin(), pieces_.end(), flat_begin,
                             [](int64_t v, const Piece& p) { return v < p.flat_end; });
  for (int64_t at = flat_begin; at < flat_end; ++it) {
    const int64_t end = std::min(flat_end, it->flat_end);
    ACCEL_ASSIGN_OR_RETURN(const RankFileReader* file, File(it->rank));
    ACCEL_RETURN_IF_ERROR(file->Read(it->range_index, section, at, end, dst + (at - flat_begin)));
    at = end;
  }
  return absl::OkStatus();
}

absl::Status StepReader::VerifyFile(int rank) {
  if (rank < 0 || rank >= static_cast<int>(files_.size())) {
    return absl::InvalidArgumentError(absl::StrCat(step_dir_, ": no rank ", rank));
  }
  ACCEL_ASSIGN_OR_RETURN(const RankFileReader* file, File(rank));
  return file->VerifyAll();
}

}  // namespace accel::checkpoint
