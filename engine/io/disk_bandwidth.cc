#include "engine/io/disk_bandwidth.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "engine/base/status_macros.h"
#include "engine/io/aligned_buffer.h"
#include "engine/io/block_file.h"

namespace accel::io {
namespace {

// One staging buffer is reused for every chunk: the point is disk speed, and a buffer the size
// of the file would itself be the memory that offload exists to avoid.
constexpr int64_t kChunkBytes = int64_t{64} << 20;

std::string TempPath(const std::string& dir) {
  static std::atomic<int> counter{0};
  return absl::StrCat(dir, "/.accel_disk_bandwidth_", getpid(), "_", counter.fetch_add(1),
                      ".tmp");
}

// Submits `bytes` of transfers of up to chunk bytes each, all from/into `buf`, and waits.
absl::Status MoveAll(AsyncIo& aio, BlockFile& file, bool write, AlignedBuffer& buf,
                     int64_t bytes) {
  const auto chunk = static_cast<int64_t>(buf.size());
  for (int64_t off = 0; off < bytes; off += chunk) {
    const int64_t n = std::min(chunk, bytes - off);
    if (write) {
      ACCEL_RETURN_IF_ERROR(aio.SubmitWrite(file, off, buf.data(), n).status());
    } else {
      ACCEL_RETURN_IF_ERROR(aio.SubmitRead(file, off, buf.data(), n).status());
    }
  }
  return aio.WaitAll();
}

}  // namespace

absl::StatusOr<DiskBandwidth> MeasureDiskBandwidth(const std::string& dir, int64_t bytes,
                                                   const AioOptions& options) {
  if (bytes <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("disk bandwidth: bytes must be positive, got ", bytes));
  }
  const int64_t total = PadTo(bytes, kPageAlignment);
  BlockFileOptions file_options;
  file_options.remove_on_close = true;
  ACCEL_ASSIGN_OR_RETURN(std::unique_ptr<BlockFile> file,
                         BlockFile::Open(TempPath(dir), total, file_options));
  ACCEL_ASSIGN_OR_RETURN(std::unique_ptr<AsyncIo> aio, AsyncIo::Create(options));
  ACCEL_ASSIGN_OR_RETURN(AlignedBuffer buf,
                         AlignedBuffer::Allocate(static_cast<size_t>(std::min(total, kChunkBytes))));
  std::mt19937_64 rng(0x5eed);
  for (size_t i = 0; i < buf.size() / sizeof(uint64_t); ++i) buf.as<uint64_t>()[i] = rng();

  DiskBandwidth result;
  result.bytes = total;
  result.direct = file->direct();
  result.backend = std::string(aio->backend());
  result.note = file->direct_reason();
  if (!aio->fallback_reason().empty()) {
    result.note = absl::StrCat(result.note, result.note.empty() ? "" : "; ",
                               aio->fallback_reason());
  }

  absl::Time start = absl::Now();
  ACCEL_RETURN_IF_ERROR(MoveAll(*aio, *file, /*write=*/true, buf, total));
  if (fdatasync(file->fd()) != 0) {
    return absl::InternalError(
        absl::StrCat("fdatasync of ", file->path(), " failed: ", std::strerror(errno)));
  }
  const double write_s = absl::ToDoubleSeconds(absl::Now() - start);
  start = absl::Now();
  ACCEL_RETURN_IF_ERROR(MoveAll(*aio, *file, /*write=*/false, buf, total));
  const double read_s = absl::ToDoubleSeconds(absl::Now() - start);
  result.write_gbps = static_cast<double>(total) / 1e9 / std::max(write_s, 1e-9);
  result.read_gbps = static_cast<double>(total) / 1e9 / std::max(read_s, 1e-9);
  return result;
}

}  // namespace accel::io
