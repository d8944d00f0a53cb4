#include "server/core/gpus.h"

#include "absl/strings/str_cat.h"

#if ACCEL_WITH_CUDA
#include "engine/tensor/cuda/device.h"
#endif

namespace accel::server {

std::vector<GpuDevice> DiscoverGpus(int requested) {
  std::vector<GpuDevice> out;
  if (requested >= 0) {
    for (int i = 0; i < requested; ++i) out.push_back({i, absl::StrCat("gpu-", i), 0});
    return out;
  }
#if ACCEL_WITH_CUDA
  for (const cuda::DeviceInfo& d : cuda::ListDevices()) {
    out.push_back({d.index, d.name, d.total_memory_bytes});
  }
#endif
  return out;
}

}  // namespace accel::server
