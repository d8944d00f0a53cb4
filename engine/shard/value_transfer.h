// MoveValues: the one way values cross between the compute memory and host memory in a sharded
// model — loading weights, saving them, the reduced gradients going to an offloaded optimizer
// and the updated masters coming back. It converts the dtype on the way, on the compute side
// (where a device has the kernels), so each caller states what it wants moved and never which
// copy path that takes.
//
// Rules, all bit-exact (the conversions round as accel::ConvertDType):
//   - both ends on the same side: one Convert there (the compute ops, or the host's);
//   - across, when the compute memory is host memory itself: one Convert;
//   - across a device boundary with one dtype: one ToHost / FromHost;
//   - across with two dtypes: the device converts into (or from) a transient fp32-or-16-bit
//     block of `staging` category, then one ToHost / FromHost.
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "engine/base/memory_ledger.h"
#include "engine/shard/device_ops.h"
#include "engine/tensor/dtype.h"

namespace accel::shard {

// n values at `data` of `dtype`, in the compute memory (on_host false) or in host memory: the
// caller's, or blocks of host or file-backed ops (an offloaded optimizer's).
struct ValueRef {
  const void* data;
  DType dtype;
  bool on_host;
};
struct MutableValueRef {
  void* data;
  DType dtype;
  bool on_host;
};

// Copies n values from `src` to `dst` converting the dtype; `compute` is the compute memory's
// ops. Errors are the ops'.
[[nodiscard]] absl::Status MoveValues(DeviceOps& compute, ValueRef src, MutableValueRef dst,
                                      int64_t n, MemoryCategory staging);

}  // namespace accel::shard
