#include "engine/model/activation_arena.h"

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"

namespace accel::model::arena {
namespace {

// Parts inside a shared buffer start on 64-byte boundaries, like a buffer of their own.
int64_t Aligned(int64_t floats) { return (floats + 15) / 16 * 16; }

int64_t OverlayFloats(const Overlay& overlay) {
  int64_t n = 0;
  for (size_t i = 0; i < overlay.size(); ++i) {
    n += i + 1 < overlay.size() ? Aligned(overlay[i].floats) : overlay[i].floats;
  }
  return n;
}

int64_t AllocationFloats(const Allocation& a) {
  int64_t n = 0;
  for (const Overlay& o : a.overlays) n = std::max(n, OverlayFloats(o));
  return n;
}

}  // namespace

absl::Status CheckShape(int64_t B, int64_t T, int64_t max_positions) {
  if (B <= 0 || T <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("batch ", B, " x ", T, " must be positive"));
  }
  if (T > max_positions) {
    return absl::InvalidArgumentError(absl::StrCat("sequence length ", T, " exceeds the model's ",
                                                   max_positions, " positions"));
  }
  return absl::OkStatus();
}

int64_t PlannedFloats(const std::vector<Allocation>& allocations) {
  int64_t floats = 0;
  for (const Allocation& a : allocations) floats += AllocationFloats(a);
  return floats;
}

int64_t TotalBytes(const std::vector<Buffer>& storage) {
  int64_t total = 0;
  for (const Buffer& b : storage) total += static_cast<int64_t>(b.bytes());
  return total;
}

absl::StatusOr<std::vector<Buffer>> Allocate(const std::vector<Allocation>& allocations,
                                             MemoryPool pool, MemoryLedger* ledger) {
  std::vector<Buffer> storage;
  for (const Allocation& allocation : allocations) {
    ACCEL_ASSIGN_OR_RETURN(Buffer buffer, AllocateFloats(AllocationFloats(allocation), pool,
                                                         MemoryCategory::kActivations, ledger));
    for (const Overlay& overlay : allocation.overlays) {
      float* p = buffer.as<float>();
      for (const Part& part : overlay) {
        part.set(p);
        p += Aligned(part.floats);
      }
    }
    storage.push_back(std::move(buffer));
  }
  return storage;
}

}  // namespace accel::model::arena
