#include "engine/checkpoint/full_model_writer.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/checkpoint/crc32c.h"
#include "engine/model/model_config.h"

namespace accel::checkpoint {
namespace {

// Conversion chunk: bounds the writer's own memory independently of the unit size.
constexpr int64_t kChunkElements = int64_t{1} << 18;

}  // namespace

absl::StatusOr<uint64_t> FullModelFileBytes(const model::ModelLayout& layout, DType dtype,
                                            int64_t max_shard_bytes) {
  uint64_t bytes = static_cast<uint64_t>(layout.num_params()) * DTypeSize(dtype);
  for (const HfShard& s : HfShards(layout, dtype, max_shard_bytes)) {
    ACCEL_ASSIGN_OR_RETURN(std::string header, HfShardHeader(s, dtype));
    bytes += header.size();
  }
  return bytes;
}

absl::StatusOr<std::unique_ptr<FullModelWriter>> FullModelWriter::Create(
    Env* env, const std::string& path, const model::ModelLayout* layout, DType dtype,
    int64_t max_shard_bytes) {
  std::unique_ptr<FullModelWriter> w(new FullModelWriter(env, path, layout, dtype));
  w->shards_ = HfShards(*layout, dtype, max_shard_bytes);
  if (dtype != DType::kF32) w->converted_.resize(kChunkElements * DTypeSize(dtype));
  ACCEL_RETURN_IF_ERROR(w->OpenShard(0));
  ACCEL_RETURN_IF_ERROR(w->AdvanceFullShards());
  return w;
}

FullModelWriter::~FullModelWriter() {
  if (!finished_) DeleteTmpFiles();
}

void FullModelWriter::DeleteTmpFiles() {
  file_.reset();
  // Best effort: an abandoned save must not leave a partial file a later step could pick up.
  for (int s = 0; s <= current_; ++s) {
    const std::string tmp = ShardPath(s) + ".tmp";
    if (env_->FileExists(tmp)) env_->DeleteFile(tmp).IgnoreError();
  }
}

std::string FullModelWriter::ShardPath(int s) const {
  const int n = static_cast<int>(shards_.size());
  return n == 1 ? path_ : JoinPath(DirName(path_), HfShardFileName(s, n));
}

absl::Status FullModelWriter::OpenShard(int s) {
  ACCEL_ASSIGN_OR_RETURN(std::string header, HfShardHeader(shards_[s], dtype_));
  current_ = s;
  ModelFileInfo info;
  info.file = ShardPath(s).substr(ShardPath(s).rfind('/') + 1);
  info.dtype = dtype_;
  infos_.push_back(std::move(info));
  ACCEL_ASSIGN_OR_RETURN(file_, env_->NewWritableFile(ShardPath(s) + ".tmp"));
  return Append(header.data(), header.size());
}

absl::Status FullModelWriter::AdvanceFullShards() {
  while (pos_ >= shards_[current_].flat_end && current_ + 1 < static_cast<int>(shards_.size())) {
    const std::string tmp = ShardPath(current_) + ".tmp";
    ACCEL_RETURN_IF_ERROR(Annotate(file_->Sync(), absl::StrCat("syncing ", tmp)));
    ACCEL_RETURN_IF_ERROR(Annotate(file_->Close(), absl::StrCat("closing ", tmp)));
    file_.reset();
    ACCEL_RETURN_IF_ERROR(OpenShard(current_ + 1));
  }
  return absl::OkStatus();
}

absl::Status FullModelWriter::Append(const void* data, size_t n) {
  ModelFileInfo& info = infos_[current_];
  if (file_ == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(ShardPath(current_), ": writer is closed"));
  }
  absl::Status s = file_->Append(std::string_view(static_cast<const char*>(data), n));
  if (!s.ok()) {
    file_.reset();  // the file is unusable after a failed write
    return Annotate(s, absl::StrCat("writing ", ShardPath(current_), ".tmp at offset ", info.bytes));
  }
  info.crc32c = crc32c::Extend(info.crc32c, data, n);
  info.bytes += n;
  return absl::OkStatus();
}

absl::Status FullModelWriter::AppendValues(const float* values, int64_t n) {
  if (n < 0 || n > layout_->num_params() - pos_) {
    return absl::InvalidArgumentError(absl::StrCat(path_, ": ", n, " values appended at element ",
                                                   pos_, " of ", layout_->num_params()));
  }
  const size_t item = DTypeSize(dtype_);
  for (int64_t done = 0; done < n;) {
    // Up to the end of the current shard's data, then the next file.
    int64_t m = std::min(n - done, shards_[current_].flat_end - pos_);
    if (dtype_ == DType::kF32) {
      ACCEL_RETURN_IF_ERROR(Append(values + done, static_cast<size_t>(m) * sizeof(float)));
    } else {
      m = std::min(m, kChunkElements);
      ConvertDType(values + done, DType::kF32, converted_.data(), dtype_, static_cast<size_t>(m));
      ACCEL_RETURN_IF_ERROR(Append(converted_.data(), static_cast<size_t>(m) * item));
    }
    done += m;
    pos_ += m;
    ACCEL_RETURN_IF_ERROR(AdvanceFullShards());
  }
  while (next_unit_ < layout_->num_units() &&
         layout_->unit(next_unit_).offset + layout_->unit(next_unit_).numel <= pos_) {
    ++next_unit_;
  }
  return absl::OkStatus();
}

absl::Status FullModelWriter::AppendUnit(int u, const float* values) {
  if (u != next_unit_ || u >= layout_->num_units() || layout_->unit(u).offset != pos_) {
    return absl::InvalidArgumentError(absl::StrCat(path_, ": unit ", u, " appended, expected unit ",
                                                   next_unit_, " of ", layout_->num_units()));
  }
  return AppendValues(values, layout_->unit(u).numel);
}

absl::StatusOr<std::vector<ModelFileInfo>> FullModelWriter::Finish(bool write_config) {
  if (pos_ != layout_->num_params()) {
    return absl::FailedPreconditionError(
        absl::StrCat(path_, ": finished after ", next_unit_, " of ", layout_->num_units(),
                     " units (", pos_, " of ", layout_->num_params(), " elements)"));
  }
  if (file_ == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(path_, ": writer is closed"));
  }
  const std::string last = ShardPath(current_) + ".tmp";
  ACCEL_RETURN_IF_ERROR(Annotate(file_->Sync(), absl::StrCat("syncing ", last)));
  ACCEL_RETURN_IF_ERROR(Annotate(file_->Close(), absl::StrCat("closing ", last)));
  file_.reset();
  for (int s = 0; s <= current_; ++s) {
    ACCEL_RETURN_IF_ERROR(env_->RenameFile(ShardPath(s) + ".tmp", ShardPath(s)));
  }
  finished_ = true;  // every file is complete from here on; nothing to clean up
  const std::string dir = DirName(path_);
  ACCEL_RETURN_IF_ERROR(env_->SyncDir(dir));
  std::vector<ModelFileInfo> files = infos_;
  if (shards_.size() > 1) {
    // The index is covered by the checkpoint's verification too: a loader reads it first.
    const std::string index = HfShardIndexJson(shards_, dtype_);
    ACCEL_RETURN_IF_ERROR(WriteFileAtomic(env_, JoinPath(dir, kHfIndexFileName), index));
    files.push_back({kHfIndexFileName, dtype_, index.size(),
                     crc32c::Value(index)});
  }
  if (write_config) {
    ACCEL_RETURN_IF_ERROR(WriteFileAtomic(env_, JoinPath(dir, "config.json"),
                                          model::ModelConfigToJson(layout_->config())));
  }
  return files;
}

}  // namespace accel::checkpoint
