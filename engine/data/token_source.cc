#include "engine/data/token_source.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/data/loss_mask.h"

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

bool IsShardMagic(int32_t magic) {
  return magic == kTokenShardMagic || magic == kTokenShard32Magic;
}

template <typename T>
int32_t MaxOf(std::span<const T> v) {
  return v.empty() ? 0 : static_cast<int32_t>(*std::max_element(v.begin(), v.end()));
}

// A vector's elements as a span, with the vector as the span's owner.
template <typename T>
std::pair<std::span<const T>, std::shared_ptr<const void>> Owned(std::vector<T> v) {
  auto owner = std::make_shared<const std::vector<T>>(std::move(v));
  return {std::span<const T>(*owner), owner};
}

}  // namespace

TokenSource::TokenSource(std::span<const uint16_t> tokens16, std::span<const uint32_t> tokens32,
                         std::shared_ptr<const void> owner, bool streamed, TokenSourceKind kind,
                         std::string path)
    : tokens16_(tokens16),
      tokens32_(tokens32),
      tokens_owner_(std::move(owner)),
      streamed_(streamed),
      kind_(kind),
      path_(std::move(path)) {
  max_token_ = tokens16_.empty() ? MaxOf(tokens32_) : MaxOf(tokens16_);
}

std::unique_ptr<TokenSource> TokenSource::FromTokens(std::vector<uint16_t> tokens,
                                                     TokenSourceKind kind, std::string path) {
  auto [span, owner] = Owned(std::move(tokens));
  return std::unique_ptr<TokenSource>(
      new TokenSource(span, {}, std::move(owner), false, kind, std::move(path)));
}

std::unique_ptr<TokenSource> TokenSource::FromTokens(std::vector<uint32_t> tokens,
                                                     TokenSourceKind kind, std::string path) {
  auto [span, owner] = Owned(std::move(tokens));
  return std::unique_ptr<TokenSource>(
      new TokenSource({}, span, std::move(owner), false, kind, std::move(path)));
}

absl::StatusOr<std::unique_ptr<TokenSource>> TokenSource::OpenTokenShard(Env* env,
                                                                         const std::string& path) {
  ACCEL_ASSIGN_OR_RETURN(std::shared_ptr<const MappedFile> file, MapFile(env, path));
  const uint64_t size = file->size();
  auto bad = [&](auto&&... parts) {
    return absl::DataLossError(absl::StrCat("file ", path, ": ", parts...));
  };
  if (size < static_cast<uint64_t>(kTokenShardHeaderBytes)) {
    return bad("truncated llm.c token shard: ", size, " bytes, shorter than the ",
               kTokenShardHeaderBytes, "-byte header");
  }
  const char* header = file->data();
  const int32_t magic = ReadLe32(header);
  if (!IsShardMagic(magic)) {
    return bad("bad magic ", magic, " at offset 0, expected ", kTokenShardMagic, " or ",
               kTokenShard32Magic, " (llm.c token shard)");
  }
  // Each magic has one version and one token width (llm.c's "gpt-2" and "llama-3" headers).
  const bool wide = magic == kTokenShard32Magic;
  const int32_t want_version = wide ? kTokenShard32Version : kTokenShardVersion;
  const uint64_t width = wide ? 4 : 2;
  const int32_t version = ReadLe32(header + 4);
  if (version != want_version) {
    return bad("unsupported version ", version, " at offset 4, expected ", want_version,
               " for magic ", magic);
  }
  const int32_t n = ReadLe32(header + 8);
  if (n <= 0) return bad("token count ", n, " at offset 8 must be positive");
  const uint64_t expected = kTokenShardHeaderBytes + width * static_cast<uint64_t>(n);
  if (size != expected) {
    return bad(size < expected ? "truncated: " : "trailing bytes: ", size, " bytes, expected ",
               expected, " (1024-byte header + ", width, " * ", n,
               " tokens, the count at offset 8)");
  }
  // The header is 1024 bytes and the file's base page-aligned (or a heap buffer), so the
  // token array is aligned for its width.
  const char* body = header + kTokenShardHeaderBytes;
  const bool streamed = file->mapped();
  if (!wide) {
    const std::span<const uint16_t> tokens(reinterpret_cast<const uint16_t*>(body),
                                           static_cast<size_t>(n));
    return std::unique_ptr<TokenSource>(new TokenSource(
        tokens, {}, std::move(file), streamed, TokenSourceKind::kTokenShard, path));
  }
  const std::span<const uint32_t> tokens(reinterpret_cast<const uint32_t*>(body),
                                         static_cast<size_t>(n));
  constexpr uint32_t kMaxId = std::numeric_limits<int32_t>::max();
  const auto over =
      std::find_if(tokens.begin(), tokens.end(), [](uint32_t t) { return t > kMaxId; });
  if (over != tokens.end()) {
    return bad("token id ", *over, " at offset ",
               kTokenShardHeaderBytes + 4 * static_cast<uint64_t>(over - tokens.begin()),
               " is above ", kMaxId, " (ids are int32)");
  }
  return std::unique_ptr<TokenSource>(new TokenSource(
      {}, tokens, std::move(file), streamed, TokenSourceKind::kTokenShard, path));
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

absl::Status TokenSource::SetLossMask(std::vector<uint8_t> mask) {
  if (static_cast<int64_t>(mask.size()) != size()) {
    return absl::InvalidArgumentError(absl::StrCat("loss mask of ", mask.size(), " bytes for ",
                                                   path_, " of ", size(), " tokens"));
  }
  const auto odd = std::find_if(mask.begin(), mask.end(), [](uint8_t b) { return b > 1; });
  if (odd != mask.end()) {
    return absl::InvalidArgumentError(absl::StrCat("loss mask of ", path_, ": byte ", int{*odd},
                                                   " at index ", odd - mask.begin(),
                                                   " is neither 0 nor 1"));
  }
  auto [span, owner] = Owned(std::move(mask));
  mask_ = span;
  mask_owner_ = std::move(owner);
  return absl::OkStatus();
}

absl::Status TokenSource::SetLossMask(MappedLossMask mask) {
  if (static_cast<int64_t>(mask.bytes.size()) != size()) {
    return absl::InvalidArgumentError(absl::StrCat("loss mask of ", mask.bytes.size(),
                                                   " bytes for ", path_, " of ", size(),
                                                   " tokens"));
  }
  mask_ = mask.bytes;
  mask_owner_ = std::move(mask.file);
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<TokenSource>> TokenSource::Open(Env* env, const std::string& path) {
  std::unique_ptr<TokenSource> source;
  {
    ACCEL_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file,
                           env->NewRandomAccessFile(path));
    char head[4];
    if (file->Size() >= 4) ACCEL_RETURN_IF_ERROR(file->Read(0, 4, head));
    if (file->Size() >= 4 && IsShardMagic(ReadLe32(head))) {
      ACCEL_ASSIGN_OR_RETURN(source, OpenTokenShard(env, path));
    } else {
      ACCEL_ASSIGN_OR_RETURN(source, OpenTextBytes(env, path));
    }
  }
  const std::string mask_path = LossMaskPath(path);
  if (env->FileExists(mask_path)) {
    ACCEL_ASSIGN_OR_RETURN(MappedLossMask mask, MapLossMask(env, mask_path, source->size()));
    ACCEL_RETURN_IF_ERROR(source->SetLossMask(std::move(mask)));
  }
  return source;
}

}  // namespace accel::data
