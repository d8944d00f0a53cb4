#include "engine/data/token_source.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"

namespace accel::data {
namespace {

static_assert(std::endian::native == std::endian::little, "token shards are little-endian");

// Text files are read in chunks and widened to uint16 without holding two full copies.
constexpr size_t kTextChunkBytes = size_t{1} << 20;

int32_t ReadLe32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return static_cast<int32_t>(v);
}

}  // namespace

TokenSource::TokenSource(std::vector<uint16_t> tokens, TokenSourceKind kind, std::string path)
    : tokens_(std::move(tokens)), kind_(kind), path_(std::move(path)) {
  max_token_ = tokens_.empty() ? 0 : *std::max_element(tokens_.begin(), tokens_.end());
}

std::unique_ptr<TokenSource> TokenSource::FromTokens(std::vector<uint16_t> tokens,
                                                     TokenSourceKind kind, std::string path) {
  return std::unique_ptr<TokenSource>(new TokenSource(std::move(tokens), kind, std::move(path)));
}

absl::StatusOr<std::unique_ptr<TokenSource>> TokenSource::OpenTokenShard(Env* env,
                                                                         const std::string& path) {
  ACCEL_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file, env->NewRandomAccessFile(path));
  const uint64_t size = file->Size();
  auto bad = [&](auto&&... parts) {
    return absl::DataLossError(absl::StrCat("file ", path, ": ", parts...));
  };
  if (size < static_cast<uint64_t>(kTokenShardHeaderBytes)) {
    return bad("truncated llm.c token shard: ", size, " bytes, shorter than the ",
               kTokenShardHeaderBytes, "-byte header");
  }
  char header[kTokenShardHeaderBytes];
  ACCEL_RETURN_IF_ERROR(file->Read(0, sizeof(header), header));
  const int32_t magic = ReadLe32(header);
  if (magic != kTokenShardMagic) {
    return bad("bad magic ", magic, " at offset 0, expected ", kTokenShardMagic,
               " (llm.c token shard)");
  }
  const int32_t version = ReadLe32(header + 4);
  if (version != kTokenShardVersion) {
    return bad("unsupported version ", version, " at offset 4, expected ", kTokenShardVersion);
  }
  const int32_t n = ReadLe32(header + 8);
  if (n <= 0) return bad("token count ", n, " at offset 8 must be positive");
  const uint64_t expected = kTokenShardHeaderBytes + 2 * static_cast<uint64_t>(n);
  if (size != expected) {
    return bad(size < expected ? "truncated: " : "trailing bytes: ", size, " bytes, expected ",
               expected, " (1024-byte header + 2 * ", n, " tokens, the count at offset 8)");
  }
  std::vector<uint16_t> tokens(static_cast<size_t>(n));
  ACCEL_RETURN_IF_ERROR(file->Read(kTokenShardHeaderBytes, tokens.size() * 2,
                                   reinterpret_cast<char*>(tokens.data())));
  return FromTokens(std::move(tokens), TokenSourceKind::kTokenShard, path);
}

absl::StatusOr<std::unique_ptr<TokenSource>> TokenSource::OpenTextBytes(Env* env,
                                                                        const std::string& path) {
  ACCEL_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file, env->NewRandomAccessFile(path));
  const uint64_t size = file->Size();
  if (size == 0) {
    return absl::InvalidArgumentError(absl::StrCat("file ", path, " is empty: no tokens"));
  }
  std::vector<uint16_t> tokens(size);
  std::vector<unsigned char> chunk(std::min<uint64_t>(size, kTextChunkBytes));
  for (uint64_t done = 0; done < size;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(size - done, chunk.size()));
    ACCEL_RETURN_IF_ERROR(file->Read(done, n, reinterpret_cast<char*>(chunk.data())));
    std::copy(chunk.begin(), chunk.begin() + n, tokens.begin() + done);
    done += n;
  }
  return FromTokens(std::move(tokens), TokenSourceKind::kTextBytes, path);
}

absl::StatusOr<std::unique_ptr<TokenSource>> TokenSource::Open(Env* env, const std::string& path) {
  ACCEL_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file, env->NewRandomAccessFile(path));
  if (file->Size() >= 4) {
    char head[4];
    ACCEL_RETURN_IF_ERROR(file->Read(0, 4, head));
    if (ReadLe32(head) == kTokenShardMagic) return OpenTokenShard(env, path);
  }
  return OpenTextBytes(env, path);
}

}  // namespace accel::data
