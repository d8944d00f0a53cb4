#include "engine/shard/value_transfer.h"

#include "engine/base/status_macros.h"

namespace accel::shard {

absl::Status MoveValues(DeviceOps& compute, ValueRef src, MutableValueRef dst, int64_t n,
                        MemoryCategory staging) {
  if (n <= 0) return absl::OkStatus();
  if (src.on_host && dst.on_host) {
    ConvertDType(src.data, src.dtype, dst.data, dst.dtype, static_cast<size_t>(n));
    return absl::OkStatus();
  }
  if (src.on_host == dst.on_host || compute.host_addressable()) {
    return compute.Convert(src.data, src.dtype, dst.data, dst.dtype, n);
  }
  if (src.dtype == dst.dtype) {
    const size_t bytes = n * DTypeSize(src.dtype);
    return dst.on_host ? compute.ToHost(dst.data, src.data, bytes)
                       : compute.FromHost(dst.data, src.data, bytes);
  }
  if (dst.on_host) {  // convert on the device, then down
    ACCEL_ASSIGN_OR_RETURN(DeviceBlock staged,
                           compute.Acquire(n * DTypeSize(dst.dtype), staging, /*zero=*/false));
    ACCEL_RETURN_IF_ERROR(compute.Convert(src.data, src.dtype, staged.data(), dst.dtype, n));
    ACCEL_RETURN_IF_ERROR(compute.ToHost(dst.data, staged.data(), staged.bytes()));
    compute.Recycle(std::move(staged));
    return absl::OkStatus();
  }
  // up, then convert on the device
  ACCEL_ASSIGN_OR_RETURN(DeviceBlock staged,
                         compute.Acquire(n * DTypeSize(src.dtype), staging, /*zero=*/false));
  ACCEL_RETURN_IF_ERROR(compute.FromHost(staged.data(), src.data, staged.bytes()));
  ACCEL_RETURN_IF_ERROR(compute.Convert(staged.data(), src.dtype, dst.data, dst.dtype, n));
  compute.Recycle(std::move(staged));
  return absl::OkStatus();
}

}  // namespace accel::shard
