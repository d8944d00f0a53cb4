// Memory storage (storage.h): Buffers in a ledger pool, addressed in place.
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "engine/offload/count_only.h"
#include "engine/offload/storage.h"
#include "engine/tensor/buffer.h"

namespace accel::offload {
namespace {

class MemoryStorage final : public Storage {
 public:
  MemoryStorage(MemoryLedger* ledger, MemoryPool pool, Mode mode)
      : ledger_(ledger),
        pool_(pool),
        count_only_(mode == Mode::kCountOnly),
        counted_(ledger, pool) {}

  MemoryPool pool() const override { return pool_; }

  absl::StatusOr<void*> Allocate(size_t bytes, MemoryCategory category) override {
    if (count_only_) return counted_.Allocate(bytes, category);
    absl::StatusOr<Buffer> b = Buffer::Allocate(bytes, pool_, category, ledger_);
    if (!b.ok()) return b.status();
    if (b->empty()) return nullptr;
    void* data = b->data();
    regions_.emplace(data, std::move(*b));
    return data;
  }
  bool Free(void* data) override {
    return count_only_ ? counted_.Free(data) : regions_.erase(data) > 0;
  }
  bool Zero(void*, size_t) override { return false; }
  absl::Status Evict() override { return absl::OkStatus(); }
  absl::Status EvictRange(const void*, size_t) override { return absl::OkStatus(); }
  FileSpan FileOf(const void*) const override { return {}; }

  int64_t PassTile(int64_t n) const override { return n > 0 ? n : 1; }
  bool KeepsGradCopies() const override { return false; }
  bool ZeroesOnFirstWrite() const override { return false; }
  bool KeepsTransientCache() const override { return true; }
  bool StreamsUpdate() const override { return false; }

 private:
  MemoryLedger* ledger_;
  MemoryPool pool_;
  bool count_only_;
  internal::CountOnlyRegions counted_;
  absl::flat_hash_map<void*, Buffer> regions_;  // every region handed out, by its data pointer
};

}  // namespace

std::unique_ptr<Storage> CreateMemoryStorage(MemoryLedger* ledger, MemoryPool pool, Mode mode) {
  return std::make_unique<MemoryStorage>(ledger, pool, mode);
}

const Storage& InPlace() {
  static const MemoryStorage* const kInPlace =
      new MemoryStorage(MemoryLedger::Default(), MemoryPool::kDevice, Mode::kCountOnly);
  return *kInPlace;
}

}  // namespace accel::offload
