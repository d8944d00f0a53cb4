// DeviceBlock, and the host DeviceOps: Buffers and a BufferPool, every operation done before it
// returns (device_ops.h); optionally with file-backed persistent blocks (NVMe offload).
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
#include "engine/kernels/adamw.h"
#include "engine/shard/device_ops.h"
#include "engine/tensor/buffer.h"
#include "engine/tensor/buffer_pool.h"

namespace accel::shard {

DeviceBlock::~DeviceBlock() {
  if (ops_ != nullptr && data_ != nullptr) ops_->Free(data_, bytes_);
}

DeviceBlock& DeviceBlock::operator=(DeviceBlock&& other) noexcept {
  if (this != &other) {
    if (ops_ != nullptr && data_ != nullptr) ops_->Free(data_, bytes_);
    ops_ = std::exchange(other.ops_, nullptr);
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void* DeviceBlock::Detach() {
  ops_ = nullptr;
  bytes_ = 0;
  return std::exchange(data_, nullptr);
}

namespace {

class HostDeviceOps final : public DeviceOps {
 public:
  HostDeviceOps(MemoryLedger* ledger, MemoryPool pool, bool as_device, std::string file_dir = "")
      : ledger_(ledger),
        pool_kind_(pool),
        as_device_(as_device),
        file_dir_(std::move(file_dir)),
        pool_(pool, ledger) {}
  ~HostDeviceOps() override {
    for (auto& [data, f] : files_) Unmap(data, f);
  }

  bool host_addressable() const override { return !as_device_; }
  bool file_backed() const override { return !file_dir_.empty(); }

  absl::StatusOr<DeviceBlock> Allocate(size_t bytes, MemoryCategory category) override {
    if (!file_dir_.empty()) return AllocateFile(bytes, category);
    absl::StatusOr<Buffer> b = Buffer::Allocate(bytes, pool_kind_, category, ledger_);
    if (!b.ok()) return b.status();
    return Own(std::move(*b));
  }

  absl::StatusOr<DeviceBlock> Acquire(size_t bytes, MemoryCategory category, bool zero) override {
    absl::StatusOr<Buffer> b = pool_.Acquire(bytes, category, zero);
    if (!b.ok()) return b.status();
    return Own(std::move(*b));
  }

  void Recycle(DeviceBlock block) override {
    void* data = block.Detach();
    if (data == nullptr) return;
    auto it = live_.find(data);
    if (it == live_.end()) return;
    pool_.Release(std::move(it->second));
    live_.erase(it);
  }

  absl::Status Zero(void* dst, size_t bytes) override {
    if (bytes == 0) return absl::OkStatus();
    if (ZeroFileRange(static_cast<char*>(dst), bytes)) return absl::OkStatus();
    std::memset(dst, 0, bytes);
    return absl::OkStatus();
  }
  absl::Status Copy(void* dst, const void* src, size_t bytes) override {
    if (bytes > 0 && dst != src) std::memmove(dst, src, bytes);
    return absl::OkStatus();
  }
  absl::Status Convert(const void* src, DType src_dtype, void* dst, DType dst_dtype,
                       int64_t n) override {
    if (n > 0) ConvertDType(src, src_dtype, dst, dst_dtype, static_cast<size_t>(n));
    return absl::OkStatus();
  }

  absl::Status Accumulate(void* dst, const void* src, int64_t n, DType dtype) override {
    if (dtype == DType::kF32) {
      float* d = static_cast<float*>(dst);
      const float* s = static_cast<const float*>(src);
      for (int64_t i = 0; i < n; ++i) d[i] += s[i];
      return absl::OkStatus();
    }
    constexpr int64_t kChunk = 1024;
    float a[kChunk], b[kChunk];
    const size_t size = DTypeSize(dtype);
    for (int64_t i = 0; i < n; i += kChunk) {
      const int64_t m = std::min(kChunk, n - i);
      char* d = static_cast<char*>(dst) + i * size;
      ConvertDType(d, dtype, a, DType::kF32, m);
      ConvertDType(static_cast<const char*>(src) + i * size, dtype, b, DType::kF32, m);
      for (int64_t j = 0; j < m; ++j) a[j] += b[j];
      ConvertDType(a, DType::kF32, d, dtype, m);
    }
    return absl::OkStatus();
  }

  absl::Status Scale(float* x, int64_t n, float factor) override {
    for (int64_t i = 0; i < n; ++i) x[i] *= factor;
    return absl::OkStatus();
  }

  absl::StatusOr<double> SumOfSquares(std::span<const FloatSpan> parts) override {
    double total = 0;
    for (const FloatSpan& p : parts) total += kernels::SquaredL2Norm(p.data, p.n);
    return total;
  }

  absl::Status ToHost(void* host, const void* src, size_t bytes) override {
    return Copy(host, src, bytes);
  }
  absl::Status FromHost(void* dst, const void* host, size_t bytes) override {
    return Copy(dst, host, bytes);
  }

  absl::Status Synchronize() override { return absl::OkStatus(); }

  absl::Status Evict() override {
    for (const auto& [data, f] : files_) ACCEL_RETURN_IF_ERROR(EvictFile(data, f));
    // The transient blocks (the optimizer's gradient copies) go back to the system too: with
    // the state on disk, holding them between steps would keep a third of it in RAM.
    if (!file_dir_.empty()) pool_.Trim();
    return absl::OkStatus();
  }

  absl::Status AdamWUpdate(float* params, float* m, float* v, const float* grads, int64_t n,
                           const kernels::AdamWHyper& hyper) override {
    kernels::AdamWUpdate(params, m, v, grads, n, hyper);
    return absl::OkStatus();
  }
  absl::Status AdamWUpdateBf16(uint16_t* params, uint16_t* m, uint16_t* v, const float* grads,
                               int64_t n, const kernels::AdamWHyper& hyper) override {
    kernels::AdamWUpdateBf16(params, m, v, grads, n, hyper);
    return absl::OkStatus();
  }

  absl::Status BeforeCollective(comm::Communicator&) override { return absl::OkStatus(); }
  absl::Status AfterCollective(comm::Communicator&, const std::shared_ptr<comm::Work>& work,
                               absl::Duration timeout) override {
    return work->Wait(timeout);
  }

 protected:
  absl::Status EvictRange(const void* data, size_t bytes) override {
    const std::optional<FileRange> r = FindFileRange(data, bytes);
    if (!r) return absl::OkStatus();  // not file-backed
    const int fd = r->file->file->fd();
    if (::fdatasync(fd) != 0) return FileError("fdatasync", r->file->bytes);
    // Unmap first: the page cache keeps a page that is still mapped.
    if (r->to > r->from) (void)::madvise(r->from, r->to - r->from, MADV_DONTNEED);
    // fadvise keeps a partial last page of its range; length 0 reaches the end of the file.
    (void)::posix_fadvise(fd, r->offset, r->to_end ? 0 : static_cast<off_t>(bytes),
                          POSIX_FADV_DONTNEED);
    return absl::OkStatus();
  }

  // Zeroes a file-backed range by punching a hole in its file for the whole pages (memset for
  // the partial ones at its edges): a hole reads as zeros, and the next write to it faults in
  // a fresh page instead of reading the old one from the disk — a lazily zeroed gradient shard
  // or a gradient copy about to be rewritten costs no reads. False (nothing done) for memory
  // that is not file-backed, or where the file system cannot punch holes.
  bool ZeroFileRange(char* p, size_t bytes) {
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

  FileSpan FileOf(const void* data) const override {
    const std::optional<FileRange> r = FindFileRange(data, 1);
    if (!r) return {};
    return {r->file->file.get(), r->offset};
  }

  void Free(void* data, size_t) override {
    if (auto it = files_.find(data); it != files_.end()) {
      Unmap(data, it->second);
      files_.erase(it);
      return;
    }
    live_.erase(data);
  }

 private:
  struct File {
    std::unique_ptr<io::BlockFile> file;  // direct I/O where the file system allows it
    size_t bytes;
    MemoryCategory category;
  };

  // [data, data + bytes) inside one file-backed block: the block, the range's offset in its
  // file, and the whole pages inside the range, [from, to). A page shared with a neighbouring
  // range is not whole; the block's last page has no neighbour (each block is its own file and
  // mapping), so a range that ends the block (to_end) covers it whole.
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
                                                   file_dir_, ": ", what, ": ",
                                                   std::strerror(errno)));
  }

  // A fresh file in file_dir_, unlinked at once, sized (zero-filled, padded to the direct-I/O
  // alignment) and mapped shared. The one descriptor serves the mapping (which ignores
  // O_DIRECT) and AsyncIo's direct transfers (FileOf).
  absl::StatusOr<DeviceBlock> AllocateFile(size_t bytes, MemoryCategory category) {
    if (bytes == 0) return DeviceBlock();
    std::string path = file_dir_ + "/accel-offload-XXXXXX";
    const int fd = ::mkstemp(path.data());
    if (fd < 0) return FileError("mkstemp", bytes);
    absl::StatusOr<std::unique_ptr<io::BlockFile>> file =
        io::BlockFile::Open(path, static_cast<int64_t>(bytes));
    ::unlink(path.c_str());
    ::close(fd);
    if (!file.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("offload file of ", bytes, " bytes in ",
                                                     file_dir_, ": ", file.status().message()));
    }
    void* data = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, (*file)->fd(), 0);
    if (data == MAP_FAILED) return FileError("mmap", bytes);
    files_.emplace(data, File{std::move(*file), bytes, category});
    ledger_->Charge(MemoryPool::kNvme, category, static_cast<int64_t>(bytes));
    return DeviceBlock(this, data, bytes);
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

  DeviceBlock Own(Buffer b) {
    if (b.empty()) return DeviceBlock();
    void* data = b.data();
    const size_t bytes = b.bytes();
    live_.emplace(data, std::move(b));
    return DeviceBlock(this, data, bytes);
  }

  MemoryLedger* ledger_;
  MemoryPool pool_kind_;
  bool as_device_;
  std::string file_dir_;  // non-empty: Allocate'd blocks are files here
  BufferPool pool_;
  absl::flat_hash_map<void*, Buffer> live_;  // every host block handed out, by its data pointer
  absl::flat_hash_map<void*, File> files_;   // every file-backed block, by its mapping
};

}  // namespace

std::unique_ptr<DeviceOps> CreateHostDeviceOps(MemoryLedger* ledger, MemoryPool pool,
                                               bool as_device) {
  return std::make_unique<HostDeviceOps>(ledger, pool, as_device);
}

absl::StatusOr<std::unique_ptr<DeviceOps>> CreateFileBackedDeviceOps(MemoryLedger* ledger,
                                                                     const std::string& dir) {
  // Files on tmpfs or ramfs are memory: offload there would lower nothing.
  if (absl::Status s = io::CheckNotMemoryBacked(dir); !s.ok()) {
    return absl::InvalidArgumentError(std::string(s.message()));
  }
  // Fail here, naming the directory, rather than at the first allocation.
  std::string probe = dir + "/accel-offload-XXXXXX";
  const int fd = ::mkstemp(probe.data());
  if (fd < 0) {
    return absl::InvalidArgumentError(absl::StrCat("offload directory ", dir,
                                                   " is not writable: ", std::strerror(errno)));
  }
  ::unlink(probe.c_str());
  ::close(fd);
  return std::unique_ptr<DeviceOps>(
      std::make_unique<HostDeviceOps>(ledger, MemoryPool::kHost, false, dir));
}

}  // namespace accel::shard
