#include "engine/io/block_file.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "engine/io/aligned_buffer.h"

#ifndef RAMFS_MAGIC
#define RAMFS_MAGIC 0x858458f6
#endif
#ifndef TMPFS_MAGIC
#define TMPFS_MAGIC 0x01021994
#endif

namespace accel::io {
namespace {

std::string ParentDir(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

absl::Status SystemError(int err, const std::string& what, const std::string& path) {
  std::string msg = absl::StrCat(what, " ", path, ": ", std::strerror(err));
  if (err == ENOENT) return absl::NotFoundError(msg);
  if (err == EACCES || err == EPERM) return absl::PermissionDeniedError(msg);
  return absl::InternalError(msg);
}

// The kernel's direct-I/O alignment for an open file, where statx reports it (Linux 6.1+ with
// matching headers). offset_align == 0 with the mask set means "this file has no direct I/O".
struct DioAlign {
  bool known = false;
  int64_t mem = 0;
  int64_t offset = 0;
};

DioAlign QueryDioAlign(int fd) {
  DioAlign a;
#ifdef STATX_DIOALIGN
  struct statx sx;
  if (statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) == 0 &&
      (sx.stx_mask & STATX_DIOALIGN) != 0) {
    a.known = true;
    a.mem = sx.stx_dio_mem_align;
    a.offset = sx.stx_dio_offset_align;
  }
#else
  (void)fd;
#endif
  return a;
}

absl::Status MemoryBackedError(const std::string& where, const struct statfs& fs) {
  const auto magic = static_cast<uint64_t>(fs.f_type);
  const bool tmpfs = magic == static_cast<uint64_t>(TMPFS_MAGIC);
  if (!tmpfs && magic != static_cast<uint64_t>(RAMFS_MAGIC)) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      where, " is on ", tmpfs ? "tmpfs" : "ramfs",
      ": tmpfs keeps file pages in memory: offload there would not lower memory use; choose "
      "a directory on a disk"));
}

}  // namespace

absl::Status CheckNotMemoryBacked(const std::string& dir) {
  struct statfs fs;
  if (statfs(dir.c_str(), &fs) != 0) return absl::OkStatus();
  return MemoryBackedError(dir, fs);
}

absl::StatusOr<std::unique_ptr<BlockFile>> BlockFile::Open(const std::string& path,
                                                           int64_t size_bytes,
                                                           const BlockFileOptions& options) {
  if (size_bytes < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("negative size ", size_bytes, " for block file ", path));
  }
  const std::string dir = ParentDir(path);
  if (struct stat st; stat(dir.c_str(), &st) != 0) {
    return SystemError(errno, "cannot open the directory of block file", path);
  }
  if (absl::Status s = CheckNotMemoryBacked(dir); !s.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot use block file ", path, ": ", s.message()));
  }

  struct stat before;
  const bool existed = stat(path.c_str(), &before) == 0;
  std::unique_ptr<BlockFile> f(new BlockFile());
  f->path_ = path;
  f->remove_on_close_ = options.remove_on_close;
  const int base_flags = O_RDWR | O_CREAT | O_CLOEXEC;
  auto fall_back = [&](const std::string& why) -> absl::Status {
    if (!options.allow_buffered_fallback) {
      return absl::FailedPreconditionError(
          absl::StrCat("direct I/O is not possible for ", path, ": ", why));
    }
    f->direct_ = false;
    f->direct_reason_ = absl::StrCat(
        why, "; using buffered I/O with writeback and posix_fadvise(DONTNEED) after each "
        "transfer");
    return absl::OkStatus();
  };

  if (options.try_direct) {
    f->fd_ = open(path.c_str(), base_flags | O_DIRECT, 0600);
    if (f->fd_ >= 0) {
      f->direct_ = true;
    } else if (errno == EINVAL) {
      absl::Status s = fall_back("the file system refused O_DIRECT at open (EINVAL)");
      if (!s.ok()) return s;
    } else {
      return SystemError(errno, "cannot open block file", path);
    }
  } else {
    f->direct_reason_ = "direct I/O turned off by the caller (BlockFileOptions::try_direct)";
  }
  if (f->fd_ < 0) {
    f->fd_ = open(path.c_str(), base_flags, 0600);
    if (f->fd_ < 0) return SystemError(errno, "cannot open block file", path);
  }

  // The directory check misses a path that is a symlink onto tmpfs: check the file itself.
  if (struct statfs fs; fstatfs(f->fd_, &fs) == 0) {
    if (absl::Status s = MemoryBackedError(path, fs); !s.ok()) {
      if (!existed) {  // remove what this call created, not a symlink of the caller's
        if (char* real = realpath(path.c_str(), nullptr); real != nullptr) {
          unlink(real);
          std::free(real);
        }
      }
      return s;
    }
  }

  const DioAlign dio = QueryDioAlign(f->fd_);
  if (dio.known && dio.offset > 0) {
    f->alignment_ = dio.offset;
    f->mem_alignment_ = dio.mem > 0 ? dio.mem : 4096;
  }
  if (f->direct_ && dio.known && dio.offset == 0) {
    absl::Status s = fall_back("statx reports no direct I/O support for this file");
    if (!s.ok()) return s;
  }

  f->size_ = PadTo(size_bytes, f->alignment_);
  if (ftruncate(f->fd_, f->size_) != 0) {
    return SystemError(errno, absl::StrCat("cannot set the size to ", f->size_, " bytes of"),
                       path);
  }

  // Buffered fallback: readahead would cache pages beyond each transfer, after the transfer's
  // DONTNEED, so turn it off for this file.
  if (!f->direct_) posix_fadvise(f->fd_, 0, 0, POSIX_FADV_RANDOM);

  // Some file systems accept O_DIRECT at open and refuse it on the first transfer: probe with
  // one aligned read (of zeros, or of the existing first block).
  if (f->direct_ && f->size_ > 0) {
    void* probe = nullptr;
    const size_t probe_bytes = static_cast<size_t>(PadTo(f->alignment_, kPageAlignment));
    if (posix_memalign(&probe, kPageAlignment, probe_bytes) != 0) {
      return absl::ResourceExhaustedError("cannot allocate the direct-I/O probe buffer");
    }
    const ssize_t r = pread(f->fd_, probe, static_cast<size_t>(f->alignment_), 0);
    const int err = errno;
    std::free(probe);
    if (r < 0 && err == EINVAL) {
      absl::Status s = fall_back("the file system refused an aligned O_DIRECT read (EINVAL)");
      if (!s.ok()) return s;
      const int flags = fcntl(f->fd_, F_GETFL);
      if (flags < 0 || fcntl(f->fd_, F_SETFL, flags & ~O_DIRECT) != 0) {
        return SystemError(errno, "cannot turn off O_DIRECT on", path);
      }
      posix_fadvise(f->fd_, 0, 0, POSIX_FADV_RANDOM);
    } else if (r < 0) {
      return SystemError(err, "cannot read block file", path);
    }
  }
  return f;
}

BlockFile::~BlockFile() {
  if (fd_ >= 0) close(fd_);
  if (remove_on_close_) unlink(path_.c_str());
}

absl::Status BlockFile::CheckTransfer(int64_t offset, const void* buf, int64_t bytes) const {
  if (offset < 0 || bytes < 0) {
    return absl::InvalidArgumentError(absl::StrCat("negative offset ", offset, " or length ",
                                                   bytes, " for block file ", path_));
  }
  if (offset % alignment_ != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("offset ", offset, " in block file ", path_,
                     " is not a multiple of the direct-I/O alignment ", alignment_));
  }
  if (bytes % alignment_ != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("length ", bytes, " at offset ", offset, " in block file ", path_,
                     " is not a multiple of the direct-I/O alignment ", alignment_,
                     " (pad the transfer)"));
  }
  if (reinterpret_cast<uintptr_t>(buf) % static_cast<uintptr_t>(mem_alignment_) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("buffer for offset ", offset, " in block file ", path_,
                     " is not aligned to ", mem_alignment_, " bytes (use an AlignedBuffer)"));
  }
  return absl::OkStatus();
}

absl::Status BlockFile::AfterTransfer(int64_t offset, int64_t bytes, bool wrote) const {
  if (direct_ || bytes == 0) return absl::OkStatus();
  // DONTNEED cannot drop dirty pages, so write them back first and wait for it.
  if (wrote && sync_file_range(fd_, offset, bytes,
                               SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
                                   SYNC_FILE_RANGE_WAIT_AFTER) != 0) {
    return absl::InternalError(absl::StrCat("writeback of ", bytes, " bytes at offset ", offset,
                                            " in ", path_, " failed: ", std::strerror(errno)));
  }
  const int rc = posix_fadvise(fd_, offset, bytes, POSIX_FADV_DONTNEED);
  if (rc != 0) {
    return absl::InternalError(absl::StrCat("posix_fadvise(DONTNEED) of offset ", offset, " in ",
                                            path_, " failed: ", std::strerror(rc)));
  }
  return absl::OkStatus();
}

}  // namespace accel::io
