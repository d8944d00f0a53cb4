#include "engine/data/shard_writer.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/data/token_source.h"

namespace accel::data {
namespace {

std::string Header(int32_t magic, int32_t version, int64_t n) {
  int32_t header[256] = {};
  header[0] = magic;
  header[1] = version;
  header[2] = static_cast<int32_t>(n);
  return std::string(reinterpret_cast<const char*>(header), sizeof(header));
}

absl::Status CheckCount(size_t n) {
  if (n > static_cast<size_t>(INT32_MAX)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a shard holds at most 2^31-1 tokens (its header's count is an int32); this one has ", n));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> TokenShardFileBytes(absl::Span<const int32_t> ids, bool wide) {
  ACCEL_RETURN_IF_ERROR(CheckCount(ids.size()));
  std::string out = wide ? Header(kTokenShard32Magic, kTokenShard32Version, ids.size())
                         : Header(kTokenShardMagic, kTokenShardVersion, ids.size());
  const size_t width = wide ? 4 : 2;
  const size_t at = out.size();
  out.resize(at + ids.size() * width);
  char* p = out.data() + at;
  for (size_t i = 0; i < ids.size(); ++i, p += width) {
    const int32_t id = ids[i];
    if (id < 0 || (!wide && id > 65535)) {
      return absl::InvalidArgumentError(absl::StrCat("token id ", id, " at index ", i,
                                                     " does not fit a ", wide ? 32 : 16,
                                                     "-bit shard"));
    }
    if (wide) {
      const uint32_t v = static_cast<uint32_t>(id);
      std::memcpy(p, &v, 4);
    } else {
      const uint16_t v = static_cast<uint16_t>(id);
      std::memcpy(p, &v, 2);
    }
  }
  return out;
}

absl::StatusOr<std::string> LossMaskFileBytes(absl::Span<const uint8_t> mask) {
  ACCEL_RETURN_IF_ERROR(CheckCount(mask.size()));
  std::string out = Header(kLossMaskMagic, kLossMaskVersion, mask.size());
  out.append(reinterpret_cast<const char*>(mask.data()), mask.size());
  return out;
}

absl::Status WriteTokenShard(Env* env, const std::string& path, absl::Span<const int32_t> ids,
                             absl::Span<const uint8_t> mask, bool wide) {
  ACCEL_ASSIGN_OR_RETURN(std::string bytes, TokenShardFileBytes(ids, wide));
  ACCEL_RETURN_IF_ERROR(WriteFileAtomic(env, path, bytes));
  if (mask.empty()) return absl::OkStatus();
  if (mask.size() != ids.size()) {
    return absl::InternalError(absl::StrCat("mask of ", mask.size(), " entries for ", ids.size(),
                                            " tokens (", path, ")"));
  }
  ACCEL_ASSIGN_OR_RETURN(std::string mask_bytes, LossMaskFileBytes(mask));
  return WriteFileAtomic(env, LossMaskPath(path), mask_bytes);
}

}  // namespace accel::data
