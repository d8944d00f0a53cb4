// The read side of the sharded checkpoint and the per-rank write; the commit protocol is in
// commit.cc.
#include "engine/checkpoint/sharded_checkpoint.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/checkpoint/checkpoint_metadata.h"
#include "engine/checkpoint/crc32c.h"
#include "engine/checkpoint/rank_file.h"
#include "engine/checkpoint/step_reader.h"

namespace accel::checkpoint {

std::string StepDir(const std::string& dir, int64_t step) {
  return JoinPath(dir, absl::StrCat("step_", step));
}

std::string StepTmpDir(const std::string& dir, int64_t step) { return StepDir(dir, step) + ".tmp"; }

absl::Status WriteRankFile(Env* env, const std::string& dir, int64_t step, int rank,
                           const std::vector<SaveRange>& ranges, const RankFileOptions& options) {
  if (step < 0 || rank < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("checkpoint in ", dir, ": step ", step, " and rank ", rank, " must be >= 0"));
  }
  const std::string tmp = StepTmpDir(dir, step);
  // Every rank creates it; one that loses a creation race to another still finds it there.
  absl::Status created = env->CreateDirs(tmp);
  if (!created.ok() && !env->FileExists(tmp)) return created;
  return WriteRankFileAt(env, JoinPath(tmp, RankFileName(rank)), step, rank, ranges, options);
}

absl::StatusOr<std::string> LatestStepDir(Env* env, const std::string& dir) {
  const std::string path = JoinPath(dir, kLatestFileName);
  if (!env->FileExists(path)) {
    return absl::NotFoundError(
        absl::StrCat("no checkpoint in ", dir, " (", path, " does not exist)"));
  }
  ACCEL_ASSIGN_OR_RETURN(std::string text, ReadFileToString(env, path));
  const std::string name(absl::StripAsciiWhitespace(text));
  int64_t step = -1;
  if (!absl::StartsWith(name, "step_") || !absl::SimpleAtoi(name.substr(5), &step) || step < 0 ||
      name != absl::StrCat("step_", step)) {
    return absl::DataLossError(absl::StrCat(path, ": expected \"step_<N>\" at offset 0, found \"",
                                            absl::CHexEscape(name), "\""));
  }
  const std::string step_dir = StepDir(dir, step);
  if (!env->FileExists(JoinPath(step_dir, kMetadataFileName))) {
    return absl::DataLossError(
        absl::StrCat(path, " names ", name, ", but ", step_dir, " has no ", kMetadataFileName));
  }
  return step_dir;
}

absl::StatusOr<CheckpointMeta> ReadMetadata(Env* env, const std::string& step_dir) {
  ACCEL_ASSIGN_OR_RETURN(std::unique_ptr<StepReader> reader, StepReader::Open(env, step_dir));
  return reader->metadata().meta;
}

absl::Status VerifyModelFile(Env* env, const std::string& step_dir, const ModelFileInfo& info) {
  const std::string path = JoinPath(step_dir, info.file);
  if (!env->FileExists(path)) {
    return absl::DataLossError(
        absl::StrCat(path, ": missing, but ", kMetadataFileName, " lists it"));
  }
  ACCEL_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file, env->NewRandomAccessFile(path));
  if (file->Size() != info.bytes) {
    return absl::DataLossError(absl::StrCat(
        path, ": ", file->Size() < info.bytes ? "truncated at offset " : "unexpected bytes at offset ",
        std::min(file->Size(), info.bytes), ": the file has ", file->Size(), " bytes, ",
        kMetadataFileName, " says ", info.bytes));
  }
  constexpr uint64_t kChunk = uint64_t{1} << 20;
  std::vector<char> buf(static_cast<size_t>(std::min(kChunk, std::max<uint64_t>(info.bytes, 1))));
  uint32_t crc = 0;
  for (uint64_t at = 0; at < info.bytes;) {
    const uint64_t n = std::min<uint64_t>(buf.size(), info.bytes - at);
    ACCEL_RETURN_IF_ERROR(file->Read(at, static_cast<size_t>(n), buf.data()));
    crc = crc32c::Extend(crc, buf.data(), static_cast<size_t>(n));
    at += n;
  }
  if (crc != info.crc32c) {
    return absl::DataLossError(absl::StrCat(path, ": its CRC-32C differs from the one ",
                                            kMetadataFileName,
                                            " records: the file is corrupt or from another save"));
  }
  return absl::OkStatus();
}

absl::Status LoadRanges(Env* env, const std::string& step_dir, const model::ModelLayout& layout,
                        const std::vector<LoadRange>& ranges) {
  ACCEL_ASSIGN_OR_RETURN(std::unique_ptr<StepReader> reader, StepReader::Open(env, step_dir));
  ACCEL_RETURN_IF_ERROR(
      CheckLayoutMatches(reader->metadata(), layout, JoinPath(step_dir, kMetadataFileName)));
  for (const LoadRange& r : ranges) {
    if (r.flat_begin < 0 || r.flat_end < r.flat_begin || r.flat_end > layout.num_params()) {
      return absl::InvalidArgumentError(
          absl::StrCat("loading ", step_dir, ": range [", r.flat_begin, ", ", r.flat_end,
                       ") is outside the model's ", layout.num_params(), " parameters"));
    }
    const std::pair<Section, float*> targets[] = {{Section::kParams, r.params},
                                                  {Section::kExpAvg, r.exp_avg},
                                                  {Section::kExpAvgSq, r.exp_avg_sq}};
    for (const auto& [section, dst] : targets) {
      if (dst == nullptr || r.flat_begin == r.flat_end) continue;
      ACCEL_RETURN_IF_ERROR(reader->Read(section, r.flat_begin, r.flat_end, dst));
    }
  }
  return absl::OkStatus();
}

}  // namespace accel::checkpoint
