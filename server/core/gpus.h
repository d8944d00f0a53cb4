// The GPUs acceld schedules: found through the CUDA runtime when acceld is built with CUDA
// (engine/tensor/cuda/device.h), or declared with `acceld --gpus N` (N fake devices named
// "gpu-<i>", memory unknown), which also lets CPU-only machines test the GPU scheduling path.
// Each GPU is one slot of device kind "cuda"; a rank placed on slot s sees only that GPU
// (CUDA_VISIBLE_DEVICES = GpuDevice::index of slot s).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace accel::server {

struct GpuDevice {
  int index = 0;            // the CUDA device ordinal (what CUDA_VISIBLE_DEVICES names)
  std::string name;         // "NVIDIA H100 80GB HBM3", or "gpu-<i>" when declared
  int64_t memory_bytes = 0;  // 0: unknown
};

// requested < 0: the devices the CUDA runtime lists (none without CUDA, a driver or a device).
// requested >= 0: that many declared devices, indices 0..requested-1, no discovery.
std::vector<GpuDevice> DiscoverGpus(int requested);

}  // namespace accel::server
