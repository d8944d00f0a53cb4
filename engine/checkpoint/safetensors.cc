#include "engine/checkpoint/safetensors.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/base/status_macros.h"
#include "engine/checkpoint/safetensors_internal.h"
#include "nlohmann/json.hpp"

namespace accel::checkpoint {
namespace {

using internal::CheckedNumel;
using internal::kConvertChunk;

// The format stores little-endian data; we copy bytes straight into host arrays.
static_assert(std::endian::native == std::endian::little, "safetensors I/O assumes little-endian");

// Same limit as the reference implementation: a header beyond this is a corrupt length field.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

struct DTypeEntry {
  std::string_view name;
  size_t item_size;
  std::optional<DType> dtype;
};

constexpr DTypeEntry kDTypes[] = {
    {"F32", 4, DType::kF32},   {"BF16", 2, DType::kBF16},    {"F16", 2, DType::kF16},
    {"F64", 8, std::nullopt},  {"I64", 8, std::nullopt},     {"I32", 4, std::nullopt},
    {"I16", 2, std::nullopt},  {"I8", 1, std::nullopt},      {"U64", 8, std::nullopt},
    {"U32", 4, std::nullopt},  {"U16", 2, std::nullopt},     {"U8", 1, std::nullopt},
    {"BOOL", 1, std::nullopt}, {"F8_E4M3", 1, std::nullopt}, {"F8_E5M2", 1, std::nullopt},
};

const DTypeEntry* LookupDType(std::string_view name) {
  for (const DTypeEntry& e : kDTypes) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

// Parses a JSON non-negative integer; false for anything else (negative, float, string).
bool AsNonNegative(const nlohmann::json& v, uint64_t* out) {
  if (v.is_number_unsigned()) {
    *out = v.get<uint64_t>();
    return true;
  }
  if (v.is_number_integer() && v.get<int64_t>() >= 0) {
    *out = static_cast<uint64_t>(v.get<int64_t>());
    return true;
  }
  return false;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Reader

absl::StatusOr<std::unique_ptr<SafetensorsReader>> SafetensorsReader::Open(
    Env* env, const std::string& path) {
  ACCEL_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file, env->NewRandomAccessFile(path));
  const uint64_t size = file->Size();
  if (size < 8) {
    return absl::DataLossError(absl::StrCat(path, ": ", size,
                                            " bytes is too short for a safetensors file (needs "
                                            "an 8-byte header length at offset 0)"));
  }
  unsigned char len_bytes[8];
  ACCEL_RETURN_IF_ERROR(file->Read(0, 8, reinterpret_cast<char*>(len_bytes)));
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | len_bytes[i];
  // The length is the file's first 8 bytes: never printed, since acceld opens weights for
  // clients that may not read them (docs/rpc.md), and a text file's 8 bytes would be its start.
  if (header_len > kMaxHeaderBytes) {
    return absl::DataLossError(absl::StrCat(path,
                                            ": the header length at offset 0 exceeds the limit of ",
                                            kMaxHeaderBytes, " bytes (not a safetensors file?)"));
  }
  if (8 + header_len > size) {
    return absl::DataLossError(absl::StrCat(
        path, ": the header length at offset 0 runs past the end of the file (", size, " bytes)"));
  }
  std::string header(header_len, '\0');
  ACCEL_RETURN_IF_ERROR(file->Read(8, header_len, header.data()));

  std::unique_ptr<SafetensorsReader> reader(new SafetensorsReader(std::move(file)));
  reader->data_begin_ = 8 + header_len;
  ACCEL_RETURN_IF_ERROR(reader->ParseHeader(header));
  return reader;
}

absl::Status SafetensorsReader::ParseHeader(std::string_view text) {
  const std::string& path = file_->Path();
  const uint64_t data_size = file_->Size() - data_begin_;
  auto corrupt = [&](auto&&... parts) {
    return absl::DataLossError(absl::StrCat(path, ": ", parts...));
  };
  nlohmann::json root;
  try {
    root = nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::parse_error& e) {
    // The offset only: the parser's message quotes the text it read ("last read: '...'").
    return corrupt("invalid header JSON near file offset ", 8 + e.byte);
  } catch (const nlohmann::json::exception& e) {
    // A number beyond double (1E400) is out_of_range, not a parse_error; it escaped (fuzzing).
    return corrupt("invalid header JSON at offset 8 (a number out of range)");
  }
  if (!root.is_object()) return corrupt("header at offset 8 is not a JSON object");

  try {
    for (const auto& item : root.items()) {
      // Named references, not a structured binding: clang 14 (the fuzz build) cannot capture
      // a binding in the lambda below.
      const std::string& key = item.key();
      const nlohmann::json& value = item.value();
      if (key == "__metadata__") {
        if (!value.is_object()) return corrupt("__metadata__ is not a JSON object");
        for (const auto& [mk, mv] : value.items()) {
          if (!mv.is_string())
            return corrupt("__metadata__ value for \"", mk, "\" is not a string");
          metadata_[mk] = mv.get<std::string>();
        }
        continue;
      }
      auto bad = [&](auto&&... parts) { return corrupt("tensor \"", key, "\" ", parts...); };
      if (!value.is_object()) return bad("entry is not a JSON object");
      TensorInfo info;
      info.name = key;

      auto dt = value.find("dtype");
      if (dt == value.end() || !dt->is_string()) return bad("has no string \"dtype\"");
      info.dtype_name = dt->get<std::string>();
      const DTypeEntry* entry = LookupDType(info.dtype_name);
      if (entry == nullptr) {
        return absl::InvalidArgumentError(absl::StrCat(
            path, ": tensor \"", key, "\" has unknown dtype \"", info.dtype_name, "\""));
      }
      info.dtype = entry->dtype;
      info.item_size = entry->item_size;

      auto sh = value.find("shape");
      if (sh == value.end() || !sh->is_array()) return bad("has no \"shape\" array");
      for (const auto& d : *sh) {
        uint64_t dim;
        if (!AsNonNegative(d, &dim) || dim > static_cast<uint64_t>(INT64_MAX)) {
          return bad("has a shape entry that is not a non-negative integer");
        }
        info.shape.push_back(static_cast<int64_t>(dim));
      }
      std::optional<int64_t> numel = CheckedNumel(info.shape);
      uint64_t expected_bytes;
      if (!numel ||
          __builtin_mul_overflow(static_cast<uint64_t>(*numel), info.item_size, &expected_bytes)) {
        return bad("has shape ", ShapeToString(info.shape), " whose size overflows");
      }
      info.numel = *numel;

      auto off = value.find("data_offsets");
      uint64_t begin, end;
      if (off == value.end() || !off->is_array() || off->size() != 2 ||
          !AsNonNegative((*off)[0], &begin) || !AsNonNegative((*off)[1], &end)) {
        return bad("has no \"data_offsets\" pair of non-negative integers");
      }
      if (begin > end || end > data_size) {
        return bad("has data_offsets [", begin, ", ", end, "] outside the data block (", data_size,
                   " bytes from file offset ", data_begin_, ")");
      }
      if (end - begin != expected_bytes) {
        return bad("has shape ", ShapeToString(info.shape), " of dtype ", info.dtype_name, " (",
                   expected_bytes, " bytes) but data_offsets [", begin, ", ", end, "] span ",
                   end - begin, " bytes (at file offset ", data_begin_ + begin, ")");
      }
      info.offset = data_begin_ + begin;
      info.nbytes = expected_bytes;
      tensors_.push_back(std::move(info));
    }
  } catch (const nlohmann::json::exception& e) {
    // The checks above should make this unreachable; a malformed header must still not throw.
    return corrupt("malformed header");
  }

  std::sort(tensors_.begin(), tensors_.end(), [](const TensorInfo& a, const TensorInfo& b) {
    return std::tie(a.offset, a.nbytes, a.name) < std::tie(b.offset, b.nbytes, b.name);
  });
  // Sorted by begin, a tensor overlaps an earlier one iff it starts before the furthest end seen.
  // Empty tensors occupy no bytes and overlap nothing.
  const TensorInfo* furthest = nullptr;
  for (const TensorInfo& t : tensors_) {
    if (t.nbytes == 0) continue;
    if (furthest != nullptr && t.offset < furthest->offset + furthest->nbytes) {
      return corrupt("tensors \"", furthest->name, "\" (file bytes [", furthest->offset, ", ",
                     furthest->offset + furthest->nbytes, ")) and \"", t.name, "\" (file bytes [",
                     t.offset, ", ", t.offset + t.nbytes, ")) overlap at file offset ", t.offset);
    }
    if (furthest == nullptr || t.offset + t.nbytes > furthest->offset + furthest->nbytes) {
      furthest = &t;
    }
  }
  for (size_t i = 0; i < tensors_.size(); ++i) index_.emplace(tensors_[i].name, i);
  return absl::OkStatus();
}

std::vector<std::string> SafetensorsReader::names() const {
  std::vector<std::string> out;
  out.reserve(tensors_.size());
  for (const TensorInfo& t : tensors_) out.push_back(t.name);
  return out;
}

const TensorInfo* SafetensorsReader::Find(std::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

absl::StatusOr<const TensorInfo*> SafetensorsReader::Get(std::string_view name) const {
  const TensorInfo* info = Find(name);
  if (info == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("tensor \"", std::string(name), "\" not found in ", path()));
  }
  return info;
}

absl::Status SafetensorsReader::ReadRaw(std::string_view name, void* dst, size_t dst_bytes) const {
  ACCEL_ASSIGN_OR_RETURN(const TensorInfo* info, Get(name));
  if (dst_bytes != info->nbytes) {
    return absl::InvalidArgumentError(absl::StrCat(path(), ": tensor \"", info->name, "\" has ",
                                                   info->nbytes, " bytes, buffer has ", dst_bytes));
  }
  if (info->nbytes == 0) return absl::OkStatus();
  return Annotate(file_->Read(info->offset, info->nbytes, static_cast<char*>(dst)),
                  absl::StrCat("reading tensor \"", info->name, "\""));
}

absl::Status SafetensorsReader::ReadFloat(std::string_view name, float* dst, int64_t numel) const {
  ACCEL_ASSIGN_OR_RETURN(const TensorInfo* info, Get(name));
  if (numel != info->numel) {
    return absl::InvalidArgumentError(absl::StrCat(path(), ": tensor \"", info->name, "\" has ",
                                                   info->numel, " elements, caller expects ",
                                                   numel));
  }
  return ReadRange(name, 0, numel, dst);
}

absl::Status SafetensorsReader::ReadRange(std::string_view name, int64_t elem_begin,
                                          int64_t elem_count, float* dst) const {
  ACCEL_ASSIGN_OR_RETURN(const TensorInfo* info, Get(name));
  if (!info->dtype.has_value()) {
    return absl::InvalidArgumentError(absl::StrCat(path(), ": tensor \"", info->name,
                                                   "\" has dtype ", info->dtype_name,
                                                   ", which cannot be read as float"));
  }
  if (elem_begin < 0 || elem_count < 0 || elem_begin > info->numel ||
      elem_count > info->numel - elem_begin) {
    return absl::InvalidArgumentError(absl::StrCat(
        path(), ": elements [", elem_begin, ", ", elem_begin + elem_count,
        ") are out of range for tensor \"", info->name, "\" with ", info->numel, " elements"));
  }
  const std::string context = absl::StrCat("reading tensor \"", info->name, "\"");
  const DType dtype = *info->dtype;
  const uint64_t first = info->offset + static_cast<uint64_t>(elem_begin) * info->item_size;
  if (dtype == DType::kF32) {
    if (elem_count == 0) return absl::OkStatus();
    return Annotate(
        file_->Read(first, static_cast<size_t>(elem_count) * 4, reinterpret_cast<char*>(dst)),
        context);
  }
  std::vector<uint16_t> scratch(static_cast<size_t>(std::min(elem_count, kConvertChunk)));
  for (int64_t done = 0; done < elem_count;) {
    const int64_t n = std::min(elem_count - done, kConvertChunk);
    ACCEL_RETURN_IF_ERROR(
        Annotate(file_->Read(first + static_cast<uint64_t>(done) * 2, static_cast<size_t>(n) * 2,
                             reinterpret_cast<char*>(scratch.data())),
                 context));
    ConvertDType(scratch.data(), dtype, dst + done, DType::kF32, static_cast<size_t>(n));
    done += n;
  }
  return absl::OkStatus();
}

absl::Status SafetensorsReader::ExpectShape(std::string_view name,
                                            std::span<const int64_t> shape) const {
  ACCEL_ASSIGN_OR_RETURN(const TensorInfo* info, Get(name));
  if (!std::equal(info->shape.begin(), info->shape.end(), shape.begin(), shape.end())) {
    return absl::InvalidArgumentError(absl::StrCat("tensor \"", info->name, "\" has shape ",
                                                   ShapeToString(info->shape), " in ", path(),
                                                   ", expected ", ShapeToString(shape)));
  }
  return absl::OkStatus();
}

}  // namespace accel::checkpoint
