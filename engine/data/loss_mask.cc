#include "engine/data/loss_mask.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"

namespace accel::data {
namespace {

static_assert(std::endian::native == std::endian::little, "mask headers are little-endian");

int32_t ReadLe32(const char* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

}  // namespace

std::string LossMaskPath(const std::string& data_path) {
  if (absl::EndsWith(data_path, ".bin")) {
    return absl::StrCat(data_path.substr(0, data_path.size() - 4), ".mask");
  }
  return absl::StrCat(data_path, ".mask");
}

absl::StatusOr<MappedLossMask> MapLossMask(Env* env, const std::string& path, int64_t tokens) {
  ACCEL_ASSIGN_OR_RETURN(std::shared_ptr<const MappedFile> file, MapFile(env, path));
  const uint64_t size = file->size();
  auto bad = [&](auto&&... parts) {
    return absl::DataLossError(absl::StrCat("loss mask ", path, ": ", parts...));
  };
  if (size < static_cast<uint64_t>(kLossMaskHeaderBytes)) {
    return bad("truncated: ", size, " bytes, shorter than the ", kLossMaskHeaderBytes,
               "-byte header");
  }
  const char* header = file->data();
  if (const int32_t magic = ReadLe32(header); magic != kLossMaskMagic) {
    return bad("bad magic ", magic, " at offset 0, expected ", kLossMaskMagic);
  }
  if (const int32_t version = ReadLe32(header + 4); version != kLossMaskVersion) {
    return bad("unsupported version ", version, " at offset 4, expected ", kLossMaskVersion);
  }
  if (const int32_t n = ReadLe32(header + 8); n != tokens) {
    return bad("count ", n, " at offset 8 differs from the token file's ", tokens, " tokens");
  }
  const uint64_t expected = kLossMaskHeaderBytes + static_cast<uint64_t>(tokens);
  if (size != expected) {
    return bad(size < expected ? "truncated: " : "trailing bytes: ", size, " bytes, expected ",
               expected, " (1024-byte header + ", tokens, " mask bytes)");
  }
  const std::span<const uint8_t> mask(
      reinterpret_cast<const uint8_t*>(header + kLossMaskHeaderBytes), static_cast<size_t>(tokens));
  const auto odd = std::find_if(mask.begin(), mask.end(), [](uint8_t b) { return b > 1; });
  if (odd != mask.end()) {
    return bad("byte ", int{*odd}, " at offset ", kLossMaskHeaderBytes + (odd - mask.begin()),
               " is neither 0 nor 1");
  }
  return MappedLossMask{std::move(file), mask};
}

absl::StatusOr<std::vector<uint8_t>> ReadLossMask(Env* env, const std::string& path,
                                                  int64_t tokens) {
  ACCEL_ASSIGN_OR_RETURN(MappedLossMask mask, MapLossMask(env, path, tokens));
  return std::vector<uint8_t>(mask.bytes.begin(), mask.bytes.end());
}

std::string LossMaskBytes(const std::vector<uint8_t>& mask) {
  int32_t header[256] = {};
  header[0] = kLossMaskMagic;
  header[1] = kLossMaskVersion;
  header[2] = static_cast<int32_t>(mask.size());
  std::string bytes(reinterpret_cast<const char*>(header), sizeof(header));
  bytes.append(reinterpret_cast<const char*>(mask.data()), mask.size());
  return bytes;
}

}  // namespace accel::data
