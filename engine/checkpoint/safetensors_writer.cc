// SafetensorsWriter and EncodeSafetensorsHeader (safetensors.h): the header's JSON, tensors in
// the order added, 16-bit conversions in chunks. The reader is safetensors.cc.
#include <algorithm>
#include <bit>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/base/status_macros.h"
#include "engine/checkpoint/safetensors.h"
#include "engine/checkpoint/safetensors_internal.h"
#include "nlohmann/json.hpp"

namespace accel::checkpoint {

using internal::CheckedNumel;
using internal::kConvertChunk;

// ---------------------------------------------------------------------------------------------
// Writer

absl::Status SafetensorsWriter::Add(std::string name, DType dtype, std::vector<int64_t> shape,
                                    const void* data) {
  return AddEntry(std::move(name), std::move(shape), data, dtype, dtype);
}

absl::Status SafetensorsWriter::AddConverted(std::string name, std::vector<int64_t> shape,
                                             const float* data, DType file_dtype) {
  return AddEntry(std::move(name), std::move(shape), data, DType::kF32, file_dtype);
}

void SafetensorsWriter::SetMetadata(std::string key, std::string value) {
  metadata_[std::move(key)] = std::move(value);
}

absl::Status SafetensorsWriter::AddEntry(std::string name, std::vector<int64_t> shape,
                                         const void* data, DType src_dtype, DType file_dtype) {
  if (name.empty() || name == "__metadata__") {
    return absl::InvalidArgumentError(
        absl::StrCat("safetensors: invalid tensor name \"", name, "\""));
  }
  for (const Entry& e : entries_) {
    if (e.name == name) {
      return absl::InvalidArgumentError(
          absl::StrCat("safetensors: tensor \"", name, "\" added twice"));
    }
  }
  std::optional<int64_t> numel = CheckedNumel(shape);
  if (!numel || *numel > INT64_MAX / 8) {
    return absl::InvalidArgumentError(absl::StrCat("safetensors: tensor \"", name,
                                                   "\" has invalid shape ", ShapeToString(shape)));
  }
  if (*numel > 0 && data == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("safetensors: tensor \"", name, "\" has no data"));
  }
  entries_.push_back(Entry{std::move(name), std::move(shape), *numel, data, src_dtype, file_dtype});
  return absl::OkStatus();
}

absl::StatusOr<std::string> EncodeSafetensorsHeader(
    const std::vector<HeaderTensor>& tensors, const std::map<std::string, std::string>& metadata) {
  std::string json;
  try {
    nlohmann::ordered_json header = nlohmann::ordered_json::object();
    if (!metadata.empty()) {
      nlohmann::ordered_json meta = nlohmann::ordered_json::object();
      for (const auto& [k, v] : metadata) meta[k] = v;
      header["__metadata__"] = std::move(meta);
    }
    uint64_t offset = 0;
    for (const HeaderTensor& e : tensors) {
      const uint64_t nbytes = static_cast<uint64_t>(NumElements(e.shape)) * DTypeSize(e.dtype);
      nlohmann::ordered_json t;
      t["dtype"] = std::string(SafetensorsDTypeName(e.dtype));
      t["shape"] = e.shape;
      t["data_offsets"] = {offset, offset + nbytes};
      header[e.name] = std::move(t);
      offset += nbytes;
    }
    json = header.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::strict);
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("safetensors: cannot encode header (names must be UTF-8): ", e.what()));
  }
  // Pad with spaces (allowed by the format) so the data block, at 8 + N, is 8-byte aligned.
  json.append((8 - json.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  const uint64_t n = json.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  out += json;
  return out;
}

absl::StatusOr<std::string> SafetensorsWriter::BuildHeader() const {
  std::vector<HeaderTensor> tensors;
  tensors.reserve(entries_.size());
  for (const Entry& e : entries_) tensors.push_back({e.name, e.file_dtype, e.shape});
  return EncodeSafetensorsHeader(tensors, metadata_);
}

absl::Status SafetensorsWriter::WriteTo(WritableFile* file, const std::string& header) const {
  ACCEL_RETURN_IF_ERROR(file->Append(header));
  std::vector<char> scratch;
  for (const Entry& e : entries_) {
    const size_t out_size = DTypeSize(e.file_dtype);
    if (e.src_dtype == e.file_dtype) {
      const size_t nbytes = static_cast<size_t>(e.numel) * out_size;
      if (nbytes > 0) {
        ACCEL_RETURN_IF_ERROR(
            file->Append(std::string_view(static_cast<const char*>(e.data), nbytes)));
      }
      continue;
    }
    const size_t in_size = DTypeSize(e.src_dtype);
    const char* src = static_cast<const char*>(e.data);
    for (int64_t done = 0; done < e.numel;) {
      const int64_t n = std::min(e.numel - done, kConvertChunk);
      scratch.resize(static_cast<size_t>(n) * out_size);
      ConvertDType(src + static_cast<size_t>(done) * in_size, e.src_dtype, scratch.data(),
                   e.file_dtype, static_cast<size_t>(n));
      ACCEL_RETURN_IF_ERROR(file->Append(std::string_view(scratch.data(), scratch.size())));
      done += n;
    }
  }
  ACCEL_RETURN_IF_ERROR(file->Sync());
  return file->Close();
}

absl::Status SafetensorsWriter::Write(Env* env, const std::string& path) const {
  ACCEL_ASSIGN_OR_RETURN(std::string header, BuildHeader());
  const std::string tmp = path + ".tmp";
  ACCEL_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file, env->NewWritableFile(tmp));
  absl::Status s = WriteTo(file.get(), header);
  file.reset();
  if (s.ok()) s = env->RenameFile(tmp, path);
  if (!s.ok()) {
    env->DeleteFile(tmp).IgnoreError();  // best effort: the error we return is the first one
    return s;
  }
  return env->SyncDir(DirName(path));
}

}  // namespace accel::checkpoint
