// The GPU's ModelRunner (engine/train/model_runner.h): Gpt2Cuda with its activations on one
// stream, bf16 matmuls whenever the engine keeps bf16 parameters (tensor cores; the CPU runner
// needs native bf16 dot products for that, the device always has them).
#pragma once

#include <cuda_runtime_api.h>

#include "engine/kernels/cuda/blas.h"
#include "engine/tensor/cuda/caching_allocator.h"
#include "engine/train/model_runner.h"

namespace accel::train {

// Not owning: `blas`, `allocator` and `stream` must outlive every runner the factory makes.
ModelRunnerFactory CudaModelRunnerFactory(cuda::Blas* blas, cuda::CachingAllocator* allocator,
                                          cudaStream_t stream);

}  // namespace accel::train
