#include "engine/io/aligned_buffer.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"

namespace accel::io {

absl::StatusOr<AlignedBuffer> AlignedBuffer::Allocate(size_t bytes,
                                                      const AlignedBufferOptions& options) {
  AlignedBuffer b;
  b.ledger_ = options.ledger;
  b.pool_ = options.pool;
  b.category_ = options.category;
  if (bytes == 0) return b;
  // Padding must not wrap, and the ledger counts in int64_t.
  if (bytes > static_cast<size_t>(std::numeric_limits<int64_t>::max()) - kPageAlignment) {
    return absl::ResourceExhaustedError(absl::StrCat("cannot allocate ", bytes, " bytes"));
  }
  const size_t padded = static_cast<size_t>(PadTo(static_cast<int64_t>(bytes), kPageAlignment));
  void* p = nullptr;
  if (posix_memalign(&p, kPageAlignment, padded) != 0 || p == nullptr) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "cannot allocate an aligned I/O buffer of ", padded, " bytes (", bytes, " requested)"));
  }
  std::memset(p, 0, padded);
  b.data_ = p;
  b.size_ = padded;
  b.requested_ = bytes;
  if (options.lock) {
    if (mlock(p, padded) == 0) {
      b.locked_ = true;
    } else {
      const int err = errno;
      b.lock_reason_ = absl::StrCat(
          "mlock of ", padded, " bytes refused (", std::strerror(err),
          err == ENOMEM || err == EPERM
              ? "; RLIMIT_MEMLOCK is too small for pinned I/O buffers: raise `ulimit -l`)"
              : ")",
          "; the buffer stays unlocked");
    }
  }
  if (b.ledger_ != nullptr) b.ledger_->Charge(b.pool_, b.category_, static_cast<int64_t>(padded));
  return b;
}

AlignedBuffer::~AlignedBuffer() { Reset(); }

AlignedBuffer::AlignedBuffer(AlignedBuffer&& other) noexcept { *this = std::move(other); }

AlignedBuffer& AlignedBuffer::operator=(AlignedBuffer&& other) noexcept {
  if (this != &other) {
    Reset();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    requested_ = std::exchange(other.requested_, 0);
    locked_ = std::exchange(other.locked_, false);
    lock_reason_ = std::move(other.lock_reason_);
    other.lock_reason_.clear();
    ledger_ = other.ledger_;
    pool_ = other.pool_;
    category_ = other.category_;
  }
  return *this;
}

void AlignedBuffer::Reset() {
  if (data_ != nullptr) {
    if (locked_) munlock(data_, size_);
    if (ledger_ != nullptr) ledger_->Release(pool_, category_, static_cast<int64_t>(size_));
    std::free(data_);
  }
  data_ = nullptr;
  size_ = 0;
  requested_ = 0;
  locked_ = false;
  lock_reason_.clear();
}

}  // namespace accel::io
