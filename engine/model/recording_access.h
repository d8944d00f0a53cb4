// RecordingAccess (tests): a FlatParamAccess that logs the order in which a model reaches its
// units — the sharding engine's contract (param_access.h) — as "FP1" (forward Params of unit
// 1), "FR1" (its Release), "BP1", "BR1", "G1" (Grads), "D1" (GradsReady).
#pragma once

#include <string>
#include <vector>

#include "engine/model/param_access.h"

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

}  // namespace accel::model
