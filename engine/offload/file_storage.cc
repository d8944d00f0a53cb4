// File storage (storage.h): each region a file, mapped shared, streamed range by range.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/io/block_file.h"
#include "engine/offload/count_only.h"
#include "engine/offload/storage.h"

namespace accel::offload {
namespace {

class FileStorage final : public Storage {
 public:
  FileStorage(MemoryLedger* ledger, FileStorageOptions options)
      : ledger_(ledger), options_(std::move(options)), counted_(ledger, MemoryPool::kNvme) {}
  ~FileStorage() override {
    for (auto& [data, f] : files_) Unmap(data, f);
  }

  MemoryPool pool() const override { return MemoryPool::kNvme; }

  // A fresh file in the directory, unlinked at once, sized (zero-filled, padded to the
  // direct-I/O alignment) and mapped shared. The one descriptor serves the mapping (which
  // ignores O_DIRECT) and AsyncIo's direct transfers (FileOf).
  absl::StatusOr<void*> Allocate(size_t bytes, MemoryCategory category) override {
    if (options_.mode == Mode::kCountOnly) return counted_.Allocate(bytes, category);
    if (bytes == 0) return nullptr;
    std::string path = options_.dir + "/accel-offload-XXXXXX";
    const int fd = ::mkstemp(path.data());
    if (fd < 0) return FileError("mkstemp", bytes);
    absl::StatusOr<std::unique_ptr<io::BlockFile>> file =
        io::BlockFile::Open(path, static_cast<int64_t>(bytes));
    ::unlink(path.c_str());
    ::close(fd);
    if (!file.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("offload file of ", bytes, " bytes in ",
                                                     options_.dir, ": ", file.status().message()));
    }
    void* data = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, (*file)->fd(), 0);
    if (data == MAP_FAILED) return FileError("mmap", bytes);
    files_.emplace(data, File{std::move(*file), bytes, category});
    ledger_->Charge(MemoryPool::kNvme, category, static_cast<int64_t>(bytes));
    return data;
  }

  bool Free(void* data) override {
    if (options_.mode == Mode::kCountOnly) return counted_.Free(data);
    auto it = files_.find(data);
    if (it == files_.end()) return false;
    Unmap(data, it->second);
    files_.erase(it);
    return true;
  }

  // Punches a hole for the whole pages (memset for the partial ones at the range's edges): a
  // hole reads as zeros, and the next write to it faults in a fresh page instead of reading the
  // old one from the disk — a lazily zeroed gradient shard or a gradient copy about to be
  // rewritten costs no reads.
  bool Zero(void* data, size_t bytes) override {
    char* p = static_cast<char*>(data);
    const std::optional<FileRange> r = FindFileRange(p, bytes);
    if (!r || r->to <= r->from) return false;
    // Unmap first so no stale page stays mapped over the hole.
    (void)::madvise(r->from, r->to - r->from, MADV_DONTNEED);
    const off_t at = r->offset + (r->from - p);
    if (::fallocate(r->file->file->fd(), FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, at,
                    static_cast<off_t>(r->to - r->from)) != 0) {
      return false;  // the caller memsets the whole range
    }
    std::memset(p, 0, r->from - p);
    std::memset(r->to, 0, std::max<ptrdiff_t>(0, p + bytes - r->to));
    return true;
  }

  absl::Status Evict() override {
    for (const auto& [data, f] : files_) ACCEL_RETURN_IF_ERROR(EvictFile(data, f));
    return absl::OkStatus();
  }

  absl::Status EvictRange(const void* data, size_t bytes) override {
    const std::optional<FileRange> r = FindFileRange(data, bytes);
    if (!r) return absl::OkStatus();  // not one of ours
    const int fd = r->file->file->fd();
    if (::fdatasync(fd) != 0) return FileError("fdatasync", r->file->bytes);
    // Unmap first: the page cache keeps a page that is still mapped.
    if (r->to > r->from) (void)::madvise(r->from, r->to - r->from, MADV_DONTNEED);
    // fadvise keeps a partial last page of its range; length 0 reaches the end of the file.
    (void)::posix_fadvise(fd, r->offset, r->to_end ? 0 : static_cast<off_t>(bytes),
                          POSIX_FADV_DONTNEED);
    return absl::OkStatus();
  }

  FileSpan FileOf(const void* data) const override {
    const std::optional<FileRange> r = FindFileRange(data, 1);
    if (!r) return {};
    return {r->file->file.get(), r->offset};
  }

  int64_t PassTile(int64_t) const override { return std::max<int64_t>(1, options_.tile_numel); }
  bool KeepsGradCopies() const override { return true; }
  bool ZeroesOnFirstWrite() const override { return true; }
  bool KeepsTransientCache() const override { return false; }
  bool StreamsUpdate() const override { return true; }

 private:
  struct File {
    std::unique_ptr<io::BlockFile> file;  // direct I/O where the file system allows it
    size_t bytes;
    MemoryCategory category;
  };

  // [data, data + bytes) inside one region: the region, the range's offset in its file, and
  // the whole pages inside the range, [from, to). A page shared with a neighbouring range is
  // not whole; the region's last page has no neighbour (each region is its own file and
  // mapping), so a range that ends the region (to_end) covers it whole.
  struct FileRange {
    const File* file;
    off_t offset;
    char* from;
    char* to;
    bool to_end;
  };
  std::optional<FileRange> FindFileRange(const void* data, size_t bytes) const {
    char* p = static_cast<char*>(const_cast<void*>(data));
    for (const auto& [base, f] : files_) {
      char* b = static_cast<char*>(base);
      if (p < b || p + bytes > b + f.bytes) continue;
      const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
      const uintptr_t start = reinterpret_cast<uintptr_t>(p), end = start + bytes;
      const bool to_end = p + bytes == b + f.bytes;
      const uintptr_t from = (start + page - 1) / page * page;
      const uintptr_t to = (to_end ? end + page - 1 : end) / page * page;
      return FileRange{&f, p - b, reinterpret_cast<char*>(from),
                       reinterpret_cast<char*>(std::max(from, to)), to_end};
    }
    return std::nullopt;
  }

  absl::Status FileError(const char* what, size_t bytes) const {
    return absl::InvalidArgumentError(absl::StrCat("offload file of ", bytes, " bytes in ",
                                                   options_.dir, ": ", what, ": ",
                                                   std::strerror(errno)));
  }

  // Write back, then drop the pages from the page cache and from this mapping; the next touch
  // reads them from the file again.
  absl::Status EvictFile(void* data, const File& f) const {
    const int fd = f.file->fd();
    if (::fdatasync(fd) != 0) return FileError("fdatasync", f.bytes);
    (void)::madvise(data, f.bytes, MADV_DONTNEED);  // first: a mapped page stays cached
    (void)::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    return absl::OkStatus();
  }

  void Unmap(void* data, File& f) {
    ::munmap(data, f.bytes);
    f.file.reset();
    ledger_->Release(MemoryPool::kNvme, f.category, static_cast<int64_t>(f.bytes));
  }

  MemoryLedger* ledger_;
  FileStorageOptions options_;
  absl::flat_hash_map<void*, File> files_;  // every region, by its mapping
  internal::CountOnlyRegions counted_;      // Mode::kCountOnly's regions
};

}  // namespace

absl::StatusOr<std::unique_ptr<Storage>> CreateFileStorage(MemoryLedger* ledger,
                                                           const FileStorageOptions& options) {
  const std::string& dir = options.dir;
  if (options.mode == Mode::kCountOnly) {
    return std::unique_ptr<Storage>(std::make_unique<FileStorage>(ledger, options));
  }
  // Files on tmpfs or ramfs are memory: offload there would lower nothing.
  if (absl::Status s = io::CheckNotMemoryBacked(dir); !s.ok()) {
    return absl::InvalidArgumentError(std::string(s.message()));
  }
  // Fail here, naming the directory, rather than at the first allocation.
  std::string probe = dir + "/accel-offload-XXXXXX";
  const int fd = ::mkstemp(probe.data());
  if (fd < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("offload directory ", dir, " is not writable: ", std::strerror(errno)));
  }
  ::unlink(probe.c_str());
  ::close(fd);
  return std::unique_ptr<Storage>(std::make_unique<FileStorage>(ledger, options));
}

}  // namespace accel::offload
