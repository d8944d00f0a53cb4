// ModelRunner: the model's forward and backward on the device a rank computes on, for the
// Trainer — the CPU runner of the model's architecture (CreateCpuModelRunner, here) or its CUDA
// runner (engine/train/cuda/cuda_model_runner.h), both made by the architecture's registry
// entry. It owns the activations of one (B, T) and reaches the parameters through ParamAccess
// (the sharded model), whose pointers are the same device's.
//
// ComputeBackend says where a Trainer computes: a DeviceOps for the sharded model and the
// optimizer (null: host memory of the trainer's ledger), and how to build the runner (null:
// the CPU's). The caller keeps what the ops need (a stream, an allocator) alive for the
// Trainer's lifetime. Thread safety: one trainer thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/base/memory_ledger.h"
#include "engine/model/model_runner.h"
#include "engine/model/param_access.h"
#include "engine/model/param_specs.h"
#include "engine/shard/device_ops.h"

namespace accel::train {

// The interface is the model's (engine/model/model_runner.h); each architecture's registry entry
// makes its runners (engine/model/registry.h).
using ModelRunner = model::ModelRunner;

struct ModelRunnerOptions {
  int64_t batch = 0, seq = 0;
  // The engine keeps bf16 parameters: the runner may multiply with ParamsBf16 (then it says so
  // in bf16_matmuls, and the engine's fp32 copies skip the matmul weights).
  bool bf16_params = false;
  // Per-block activation checkpointing (model::ActivationOptions::checkpoint_blocks). A runner
  // without it refuses (Unimplemented) rather than keeping every activation.
  bool checkpoint_blocks = false;
  MemoryLedger* ledger = nullptr;  // activations are charged here (compute pool)
};

struct ModelRunnerResult {
  std::unique_ptr<ModelRunner> runner;
  bool bf16_matmuls = false;
  // With bf16 parameters: how the matmuls run and why, one line for the worker's log
  // (kernels::Bf16MatmulChoice::reason on the CPU); empty otherwise.
  std::string matmuls;
};

using ModelRunnerFactory = std::function<absl::StatusOr<ModelRunnerResult>(
    const model::ModelLayout* layout, const ModelRunnerOptions& options)>;

// The model's architecture's CPU runner (its registry entry); bf16 matmuls where this host's
// choice says so (kernels::ChosenBf16Matmul: bf16 dot products that measured faster than fp32).
[[nodiscard]] absl::StatusOr<ModelRunnerResult> CreateCpuModelRunner(
    const model::ModelLayout* layout, const ModelRunnerOptions& options);

struct ComputeBackend {
  shard::DeviceOps* ops = nullptr;  // null: host memory
  ModelRunnerFactory runner;        // null: CreateCpuModelRunner
  std::string device = "cpu";       // for logs: "cpu", "cuda:0"
};

}  // namespace accel::train
