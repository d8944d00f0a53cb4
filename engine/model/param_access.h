// ParamAccess: how the model reaches its parameters and gradients, one unit at a time.
//
// This is the seam the sharding engine plugs into (DESIGN.md §3.1): before a unit computes, the
// model asks for its full parameters (a sharded engine all-gathers them, or waits for a prefetch);
// after, it says it is done (the engine may free the gathered copy); backward accumulates into the
// unit's full gradient buffer and then says the gradient is ready (the engine reduce-scatters).
// The model calls these in a fixed order:
//   forward:  Params(0) · for l: Params(1+l), Release(1+l, fwd) · (root used again for the head)
//   backward: Params(0) (head) · for l from last: Params(1+l), Grads(1+l), Release(1+l, bwd),
//             GradsReady(1+l) · root: Grads(0), Release(0, bwd), GradsReady(0)
// Pointers stay valid until the matching Release. Units are numbered as in ModelLayout.
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/model/param_specs.h"

namespace accel::model {

enum class Pass { kForward, kBackward };

class ParamAccess {
 public:
  virtual ~ParamAccess() = default;
  // The unit's full parameters (ModelLayout::unit(u).numel floats).
  [[nodiscard]] virtual absl::StatusOr<const float*> Params(int unit, Pass pass) = 0;
  [[nodiscard]] virtual absl::Status Release(int unit, Pass pass) = 0;
  // The same parameters in bf16 when the engine keeps them in bf16 (bf16 mixed precision), else
  // null. Valid between Params(unit, ...) and the matching Release. The model multiplies with
  // them directly (kernels/matmul_bf16.h) when its activations carry bf16 scratch.
  virtual const uint16_t* ParamsBf16(int /*unit*/) { return nullptr; }
  // Where the unit's full gradient accumulates (+=) during backward.
  [[nodiscard]] virtual absl::StatusOr<float*> Grads(int unit) = 0;
  [[nodiscard]] virtual absl::Status GradsReady(int unit) = 0;
};

// Everything in two flat buffers (one process, no sharding). Not owning.
class FlatParamAccess final : public ParamAccess {
 public:
  FlatParamAccess(const ModelLayout* layout, const float* params, float* grads)
      : layout_(layout), params_(params), grads_(grads) {}
  absl::StatusOr<const float*> Params(int unit, Pass) override;
  absl::Status Release(int, Pass) override { return absl::OkStatus(); }
  absl::StatusOr<float*> Grads(int unit) override;
  absl::Status GradsReady(int) override { return absl::OkStatus(); }

 private:
  const ModelLayout* layout_;
  const float* params_;
  float* grads_;
};

}  // namespace accel::model
