#include "engine/train/cuda/device_trainer.h"

#include <cuda_runtime.h>

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/comm/in_memory_store.h"
#include "engine/tensor/cuda/device.h"
#include "engine/shard/cuda/nccl_process_groups.h"
#include "engine/train/cuda/cuda_model_runner.h"

namespace accel::train {

absl::Status DeviceTrainer::CheckOptions(const TrainOptions& options) {
  return ValidateTrainOptions(options);
}

absl::StatusOr<std::unique_ptr<DeviceTrainer>> DeviceTrainer::Create(const TrainOptions& options,
                                                                     shard::ProcessGroups groups,
                                                                     int device, Env* env) {
  ACCEL_RETURN_IF_ERROR(CheckOptions(options));
  const std::vector<cuda::DeviceInfo> devices = cuda::ListDevices();
  if (device < 0 || device >= static_cast<int>(devices.size())) {
    return absl::UnavailableError(absl::StrCat("no CUDA device ", device, " (", devices.size(),
                                               " visible)"));
  }
  ACCEL_CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
  std::unique_ptr<DeviceTrainer> t(new DeviceTrainer());
  t->device_ = device;
  ACCEL_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&t->stream_, cudaStreamNonBlocking));
  t->allocator_ =
      std::make_unique<cuda::CachingAllocator>(cuda::CudaRawAllocator(device), &t->ledger_);
  ACCEL_ASSIGN_OR_RETURN(t->blas_, cuda::Blas::Create(&t->ledger_));
  // Mixed precision computes the matmuls in 16 bits; the products left in fp32 (attention's,
  // and under fp16 the linear layers on fp32 copies) may use TF32 tensor cores, which keep more
  // mantissa than either 16-bit type. fp32 training stays exact fp32, matching the CPU.
  t->blas_->set_allow_tf32(options.shard.param_dtype != DType::kF32);
  ACCEL_ASSIGN_OR_RETURN(t->ops_, shard::CudaDeviceOps::Create(t->allocator_.get(), t->stream_));
  if (groups.world == nullptr) {
    comm::InMemoryStore store;
    ACCEL_ASSIGN_OR_RETURN(t->own_groups_, shard::CreateNcclProcessGroups(
                                               &store, "solo", 0, 1, device, options.shard));
    groups = t->own_groups_.view();
  }
  ComputeBackend backend;
  backend.ops = t->ops_.get();
  backend.runner = CudaModelRunnerFactory(t->blas_.get(), t->allocator_.get(), t->stream_);
  backend.device = absl::StrCat("cuda:", device);
  ACCEL_ASSIGN_OR_RETURN(t->trainer_,
                         Trainer::Create(options, groups, env, &t->ledger_, std::move(backend)));
  return t;
}

DeviceTrainer::~DeviceTrainer() {
  if (stream_ == nullptr) return;
  (void)cudaSetDevice(device_);
  (void)cudaStreamSynchronize(stream_);
  trainer_.reset();
  own_groups_ = shard::OwnedProcessGroups();
  ops_.reset();
  blas_.reset();
  allocator_.reset();
  (void)cudaStreamDestroy(stream_);
}

absl::StatusOr<DeviceTrainer::DriverMemory> DeviceTrainer::QueryDriverMemory() const {
  size_t free = 0, total = 0;
  ACCEL_CUDA_RETURN_IF_ERROR(cudaMemGetInfo(&free, &total));
  return DriverMemory{static_cast<int64_t>(total - free), static_cast<int64_t>(total)};
}

}  // namespace accel::train
