// RecordingAccess (tests): a FlatParamAccess that logs the order in which a model reaches its
// units — the sharding engine's contract (param_access.h) — as "FP1" (forward Params of unit
// 1), "FR1" (its Release), "BP1", "BR1", "G1" (Grads), "D1" (GradsReady). Bf16Access (tests):
// a FlatParamAccess that also offers the parameters in bf16, as the bf16 matmul path reads them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/model/param_access.h"
#include "engine/tensor/dtype.h"

namespace accel::model {

// Records the order in which the model reaches units (the sharding engine's contract).
class RecordingAccess : public ParamAccess {
 public:
  RecordingAccess(const ModelLayout* layout, const float* p, float* g) : flat_(layout, p, g) {}
  absl::StatusOr<const float*> Params(int unit, Pass pass) override {
    log.push_back(std::string(pass == Pass::kForward ? "F" : "B") + "P" + std::to_string(unit));
    return flat_.Params(unit, pass);
  }
  absl::Status Release(int unit, Pass pass) override {
    log.push_back(std::string(pass == Pass::kForward ? "F" : "B") + "R" + std::to_string(unit));
    return absl::OkStatus();
  }
  absl::StatusOr<float*> Grads(int unit) override {
    log.push_back("G" + std::to_string(unit));
    return flat_.Grads(unit);
  }
  absl::Status GradsReady(int unit) override {
    log.push_back("D" + std::to_string(unit));
    return absl::OkStatus();
  }
  std::vector<std::string> log;

 private:
  FlatParamAccess flat_;
};

// FlatParamAccess plus a bf16 copy of the parameters (null when `offer_bf16` is false).
class Bf16Access : public ParamAccess {
 public:
  Bf16Access(const ModelLayout* layout, const float* p, float* g, bool offer_bf16 = true)
      : layout_(layout), flat_(layout, p, g), p16_(layout->num_params()), offer_(offer_bf16) {
    FloatToBf16(p, p16_.data(), p16_.size());
  }
  absl::StatusOr<const float*> Params(int unit, Pass pass) override {
    return flat_.Params(unit, pass);
  }
  absl::Status Release(int unit, Pass pass) override { return flat_.Release(unit, pass); }
  const uint16_t* ParamsBf16(int unit) override {
    return offer_ ? p16_.data() + layout_->unit(unit).offset : nullptr;
  }
  absl::StatusOr<float*> Grads(int unit) override { return flat_.Grads(unit); }
  absl::Status GradsReady(int unit) override { return flat_.GradsReady(unit); }

 private:
  const ModelLayout* layout_;
  FlatParamAccess flat_;
  std::vector<uint16_t> p16_;
  bool offer_;
};

}  // namespace accel::model
