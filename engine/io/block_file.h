// BlockFile: one file opened for direct I/O (O_DIRECT), the backing store of NVMe offload.
//
// Why direct: page cache is charged to the memory cgroup exactly like anonymous memory, so an
// mmap or buffered "offload" does not lower a job's memory use (shared/reference/
// zero_infinity.md §5.3). O_DIRECT moves bytes between the caller's buffer and the disk with no
// cached copy.
//
// Rules the caller must keep (checked by CheckTransfer, which the async engine calls):
//   * file offset and length are multiples of alignment() — pad lengths, never round offsets;
//   * the buffer address is a multiple of mem_alignment() (an AlignedBuffer always is).
//
// Open refuses tmpfs and ramfs: their "files" are memory (shmem) whatever the flags, so
// offload there would not lower memory use. Where the file system refuses O_DIRECT (EINVAL,
// at open or on the first aligned read), the file falls back to buffered I/O and every
// transfer is followed by writeback + posix_fadvise(DONTNEED), so its pages still leave the
// cache; direct() is then false and direct_reason() says why.
//
// Never mix access modes on one file: do not mmap a BlockFile or read it with buffered I/O
// while it is open (Linux gives no coherence guarantee between the two).
//
// Thread-safety: after Open, all accessors are const and CheckTransfer/AfterTransfer may be
// called from any thread (the fd is only used with positional I/O).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace accel::io {

struct BlockFileOptions {
  // Try O_DIRECT; false opens buffered (with the fadvise discipline) from the start — for
  // tests of the fallback path and for file systems known to refuse O_DIRECT.
  bool try_direct = true;
  // When O_DIRECT is refused: fall back to buffered I/O (true) or fail with
  // FailedPrecondition (false).
  bool allow_buffered_fallback = true;
  // Unlink the file when the BlockFile is destroyed (temporary swap and benchmark files).
  bool remove_on_close = false;
};

class BlockFile {
 public:
  // Creates `path` (mode 0600) or opens it, and sets its size to `size_bytes` rounded up to
  // alignment(): a shorter file is extended with zeros (sparse), a longer one is truncated,
  // existing bytes below the size are kept. Errors: FailedPrecondition for tmpfs/ramfs (or a
  // refused O_DIRECT without fallback), InvalidArgument for a negative size, NotFound when the
  // directory does not exist, Internal for other system errors; each names the path.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<BlockFile>> Open(
      const std::string& path, int64_t size_bytes, const BlockFileOptions& options = {});
  ~BlockFile();
  BlockFile(const BlockFile&) = delete;
  BlockFile& operator=(const BlockFile&) = delete;

  const std::string& path() const { return path_; }
  int fd() const { return fd_; }
  // The file's size after Open (a multiple of alignment()).
  int64_t size() const { return size_; }
  // Required alignment of file offsets and lengths: statx STATX_DIOALIGN's
  // stx_dio_offset_align where the kernel reports it, else 4096.
  int64_t alignment() const { return alignment_; }
  // Required alignment of buffer addresses: stx_dio_mem_align, else 4096.
  int64_t mem_alignment() const { return mem_alignment_; }
  bool direct() const { return direct_; }
  // Empty when direct(); otherwise why the file is buffered.
  const std::string& direct_reason() const { return direct_reason_; }

  // OK when a transfer of `bytes` at `offset` from/to `buf` keeps the rules above;
  // InvalidArgument naming the file and the offending offset, length or address otherwise.
  [[nodiscard]] absl::Status CheckTransfer(int64_t offset, const void* buf, int64_t bytes) const;
  // After a completed transfer: nothing when direct(); otherwise writes back (for writes) and
  // drops the range from the page cache. Internal error naming file and offset on failure.
  [[nodiscard]] absl::Status AfterTransfer(int64_t offset, int64_t bytes, bool wrote) const;

 private:
  BlockFile() = default;

  std::string path_;
  int fd_ = -1;
  int64_t size_ = 0;
  int64_t alignment_ = 4096;
  int64_t mem_alignment_ = 4096;
  bool direct_ = false;
  std::string direct_reason_;
  bool remove_on_close_ = false;
};

// FailedPrecondition naming `dir` when it lies on tmpfs or ramfs (memory-backed), OK otherwise
// (including when statfs fails: Open reports that path's own error).
[[nodiscard]] absl::Status CheckNotMemoryBacked(const std::string& dir);

}  // namespace accel::io
