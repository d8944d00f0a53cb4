#include "engine/checkpoint/full_model_writer.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/checkpoint/crc32c.h"
#include "engine/checkpoint/safetensors.h"
#include "engine/model/model_config.h"

namespace accel::checkpoint {
namespace {

// Conversion chunk: bounds the writer's own memory independently of the unit size.
constexpr int64_t kChunkElements = int64_t{1} << 18;

// The header SaveHfWeights and consolidation write for this layout (same encoder, same
// metadata), so the three paths give identical files.
absl::StatusOr<std::string> Header(const model::ModelLayout& layout, DType dtype) {
  std::vector<HeaderTensor> tensors;
  tensors.reserve(layout.flat().entries().size());
  for (const LayoutEntry& e : layout.flat().entries()) tensors.push_back({e.name, dtype, e.shape});
  return EncodeSafetensorsHeader(tensors, {{"format", "pt"}, {"producer", "accel"}});
}

}  // namespace

absl::StatusOr<uint64_t> FullModelFileBytes(const model::ModelLayout& layout, DType dtype) {
  ACCEL_ASSIGN_OR_RETURN(std::string header, Header(layout, dtype));
  return header.size() + static_cast<uint64_t>(layout.num_params()) * DTypeSize(dtype);
}

absl::StatusOr<std::unique_ptr<FullModelWriter>> FullModelWriter::Create(
    Env* env, const std::string& path, const model::ModelLayout* layout, DType dtype) {
  std::unique_ptr<FullModelWriter> w(new FullModelWriter(env, path, layout, dtype));
  ACCEL_ASSIGN_OR_RETURN(std::string header, Header(*layout, dtype));
  ACCEL_ASSIGN_OR_RETURN(w->file_, env->NewWritableFile(path + ".tmp"));
  if (dtype != DType::kF32) w->converted_.resize(kChunkElements * DTypeSize(dtype));
  ACCEL_RETURN_IF_ERROR(w->Append(header.data(), header.size()));
  return w;
}

FullModelWriter::~FullModelWriter() {
  if (finished_) return;
  file_.reset();
  // Best effort: an abandoned save must not leave a partial file a later step could pick up.
  if (env_->FileExists(path_ + ".tmp")) env_->DeleteFile(path_ + ".tmp").IgnoreError();
}

absl::Status FullModelWriter::Append(const void* data, size_t n) {
  if (file_ == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(path_, ": writer is closed"));
  }
  absl::Status s = file_->Append(std::string_view(static_cast<const char*>(data), n));
  if (!s.ok()) {
    file_.reset();  // the file is unusable after a failed write
    return Annotate(s, absl::StrCat("writing ", path_, ".tmp at offset ", bytes_));
  }
  crc_ = crc32c::Extend(crc_, data, n);
  bytes_ += n;
  return absl::OkStatus();
}

absl::Status FullModelWriter::AppendUnit(int u, const float* values) {
  if (u != next_unit_ || u >= layout_->num_units()) {
    return absl::InvalidArgumentError(absl::StrCat(path_, ": unit ", u, " appended, expected unit ",
                                                   next_unit_, " of ", layout_->num_units()));
  }
  const int64_t numel = layout_->unit(u).numel;
  if (dtype_ == DType::kF32) {
    ACCEL_RETURN_IF_ERROR(Append(values, static_cast<size_t>(numel) * sizeof(float)));
  } else {
    const size_t item = DTypeSize(dtype_);
    for (int64_t done = 0; done < numel;) {
      const int64_t n = std::min(kChunkElements, numel - done);
      ConvertDType(values + done, DType::kF32, converted_.data(), dtype_, static_cast<size_t>(n));
      ACCEL_RETURN_IF_ERROR(Append(converted_.data(), static_cast<size_t>(n) * item));
      done += n;
    }
  }
  ++next_unit_;
  return absl::OkStatus();
}

absl::StatusOr<ModelFileInfo> FullModelWriter::Finish(bool write_config) {
  if (next_unit_ != layout_->num_units()) {
    return absl::FailedPreconditionError(absl::StrCat(path_, ": finished after ", next_unit_,
                                                      " of ", layout_->num_units(), " units"));
  }
  if (file_ == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(path_, ": writer is closed"));
  }
  const std::string tmp = path_ + ".tmp";
  ACCEL_RETURN_IF_ERROR(Annotate(file_->Sync(), absl::StrCat("syncing ", tmp)));
  ACCEL_RETURN_IF_ERROR(Annotate(file_->Close(), absl::StrCat("closing ", tmp)));
  file_.reset();
  ACCEL_RETURN_IF_ERROR(env_->RenameFile(tmp, path_));
  finished_ = true;  // PATH is complete from here on; nothing to clean up
  ACCEL_RETURN_IF_ERROR(env_->SyncDir(DirName(path_)));
  if (write_config) {
    ACCEL_RETURN_IF_ERROR(WriteFileAtomic(env_, JoinPath(DirName(path_), "config.json"),
                                          model::ModelConfigToJson(layout_->config())));
  }
  ModelFileInfo info;
  info.file = path_.substr(path_.rfind('/') + 1);
  info.dtype = dtype_;
  info.bytes = bytes_;
  info.crc32c = crc_;
  return info;
}

}  // namespace accel::checkpoint
