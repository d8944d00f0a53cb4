// The CPU's ModelRunner: the CPU runner of the layout's architecture (its registry entry, over
// the fast kernels), with its activations (model_runner.h).
#include <memory>

#include "engine/base/status_macros.h"
#include "engine/kernels/matmul_bf16.h"
#include "engine/model/registry.h"
#include "engine/train/model_runner.h"

namespace accel::train {

absl::StatusOr<ModelRunnerResult> CreateCpuModelRunner(const model::ModelLayout* layout,
                                                       const ModelRunnerOptions& options) {
  // bf16 parameters are multiplied as bf16 where the CPU has bf16 dot products (AMX or
  // AVX512_BF16) that measured faster than the fp32 GEMM on this host; elsewhere as fp32 copies.
  const bool bf16_matmuls = options.bf16_params && kernels::Bf16MatmulIsNative();
  const model::CpuRunnerOptions runner_options = {
      .batch = options.batch,
      .seq = options.seq,
      .activations = {.bf16_matmuls = bf16_matmuls, .checkpoint_blocks = options.checkpoint_blocks},
      .ledger = options.ledger};
  ModelRunnerResult result;
  ACCEL_ASSIGN_OR_RETURN(result.runner,
                         layout->config().architecture().cpu_runner(layout, runner_options));
  result.bf16_matmuls = bf16_matmuls;
  if (options.bf16_params) result.matmuls = kernels::ChosenBf16Matmul().reason;
  return result;
}

}  // namespace accel::train
