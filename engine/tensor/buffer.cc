#include "engine/tensor/buffer.h"

#include <cstdlib>
#include <cstring>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"

namespace accel {

absl::StatusOr<Buffer> Buffer::Allocate(size_t bytes, MemoryPool pool, MemoryCategory category,
                                        MemoryLedger* ledger) {
  Buffer b;
  b.pool_ = pool;
  b.category_ = category;
  b.ledger_ = ledger != nullptr ? ledger : MemoryLedger::Default();
  if (bytes == 0) return b;
  // Rounding up must not wrap, and the ledger counts in int64_t.
  if (bytes > static_cast<size_t>(std::numeric_limits<int64_t>::max()) - kAlignment) {
    return absl::ResourceExhaustedError(absl::StrCat("cannot allocate ", bytes, " bytes"));
  }
  size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  b.data_ = std::aligned_alloc(kAlignment, rounded);
  if (b.data_ == nullptr) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "cannot allocate ", bytes, " bytes of ", std::string(MemoryCategoryName(category)),
        " in the ", std::string(MemoryPoolName(pool)), " pool"));
  }
  std::memset(b.data_, 0, rounded);
  b.bytes_ = bytes;
  b.ledger_->Charge(pool, category, static_cast<int64_t>(bytes));
  return b;
}

Buffer::~Buffer() { Reset(); }

Buffer::Buffer(Buffer&& other) noexcept { *this = std::move(other); }

Buffer& Buffer::operator=(Buffer&& other) noexcept {
  if (this != &other) {
    Reset();
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    pool_ = other.pool_;
    category_ = other.category_;
    ledger_ = other.ledger_;
  }
  return *this;
}

void Buffer::Zero() {
  if (data_ != nullptr) std::memset(data_, 0, bytes_);
}

void Buffer::Recategorize(MemoryCategory category) {
  if (data_ != nullptr && category != category_) {
    ledger_->Release(pool_, category_, static_cast<int64_t>(bytes_));
    ledger_->Charge(pool_, category, static_cast<int64_t>(bytes_));
  }
  category_ = category;
}

void Buffer::Reset() {
  if (data_ != nullptr) {
    ledger_->Release(pool_, category_, static_cast<int64_t>(bytes_));
    std::free(data_);
  }
  data_ = nullptr;
  bytes_ = 0;
}

absl::StatusOr<Buffer> AllocateFloats(size_t n, MemoryPool pool, MemoryCategory category,
                                      MemoryLedger* ledger) {
  return Buffer::Allocate(n * sizeof(float), pool, category, ledger);
}

}  // namespace accel
