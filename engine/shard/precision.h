// Precision: what the model computes on, given the parameters' dtype (DESIGN.md §3.2) — one of:
//   - fp32 (CreateFp32Precision): the gathered or resident parameters are the model's fp32
//     parameters themselves;
//   - mixed (CreateMixedPrecision; 16-bit parameters or gradients, with fp32 masters or, under low
//     precision, without): the model gets an fp32 copy of exactly the 16-bit values for the
//     time it uses a unit (a transient block charged as params), and in bf16 the gathered bf16
//     parameters too, which its matmuls read directly (Bf16).
// The root's copy, used at both ends of a pass, lives until ReleaseAll (the end of the step).
// Also what the other parts ask about dtypes: whether gradients are reduced in place (fp32
// throughout), and the dtypes of every buffer class for logs.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/shard/shard_context.h"

namespace accel::shard {

class Precision {
 public:
  virtual ~Precision() = default;

  // fp32 parameters for the model from unit u's full parameters (param_dtype, padded_numel),
  // valid until Release(u).
  [[nodiscard]] virtual absl::StatusOr<const float*> ComputeParams(int unit,
                                                                   const void* full) = 0;
  // The same parameters in bf16 when they are bf16, else null.
  virtual const uint16_t* Bf16(const void* full) const = 0;
  // The model is done with unit u for this pass (the root's copy stays until ReleaseAll).
  virtual void Release(int unit) = 0;
  virtual void ReleaseAll() = 0;
  // For a model that reads some ranges of a unit only through Bf16 (ShardedModel::SkipFp32Copy):
  // their fp32 copy is left unconverted. Ignored unless the parameters are bf16.
  virtual void SkipFp32Copy(std::vector<std::vector<std::pair<int64_t, int64_t>>> ranges) = 0;

  // fp32 parameters and gradients throughout: local gradients are reduced where they are.
  virtual bool fp32() const = 0;
  // bf16 parameters updated without fp32 masters (ShardOptions::master_dtype bf16).
  bool low_precision() const { return options_.master_dtype != DType::kF32; }
  // {"params":"bf16","grads":"bf16","master":"f32","optimizer":"f32"}.
  std::string DTypesJson() const;

 protected:
  explicit Precision(const ShardOptions& options) : options_(options) {}
  const ShardOptions& options_;
};

std::unique_ptr<Precision> CreateFp32Precision(ShardContext* ctx);
std::unique_ptr<Precision> CreateMixedPrecision(ShardContext* ctx);

}  // namespace accel::shard
