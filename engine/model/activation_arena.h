// How a model's activations are laid out in memory, shared by every architecture's activations
// (gpt2_activations.cc, llama_activations.cc): one list of allocations serves both the real
// allocation and the memory plan, so a plan and the allocation cannot drift.
//
// An Allocation is one buffer; its Overlays are lists of tensors (Parts) laid out one after
// another from the buffer's start, and are never live at the same time (activation
// checkpointing reuses the logits' memory for one block's working set).
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/base/memory_ledger.h"
#include "engine/tensor/buffer.h"

namespace accel::model::arena {

// One tensor: `floats` elements whose address `set` stores.
struct Part {
  std::function<void(float*)> set;
  int64_t floats;
};
using Overlay = std::vector<Part>;
struct Allocation {
  std::vector<Overlay> overlays;
};

inline Part At(float** slot, int64_t floats) {
  return {[slot](float* p) { *slot = p; }, floats};
}
// A bf16 tensor of `elements`: two per float of the allocation.
inline Part At16(uint16_t** slot, int64_t elements) {
  return {[slot](float* p) { *slot = reinterpret_cast<uint16_t*>(p); }, (elements + 1) / 2};
}

// InvalidArgument unless B and T are positive and T is at most the model's positions.
[[nodiscard]] absl::Status CheckShape(int64_t B, int64_t T, int64_t max_positions);

// Floats all allocations take.
int64_t PlannedFloats(const std::vector<Allocation>& allocations);
// Allocates each (charged as activations to `ledger`, in `pool`) and stores every part's address.
[[nodiscard]] absl::StatusOr<std::vector<Buffer>> Allocate(
    const std::vector<Allocation>& allocations, MemoryPool pool, MemoryLedger* ledger);
// The bytes of the buffers Allocate returned.
int64_t TotalBytes(const std::vector<Buffer>& storage);
// An allocation of its own for one part.
inline void Own(std::vector<Allocation>& out, Part part) {
  out.push_back({{{std::move(part)}}});
}

}  // namespace accel::model::arena
