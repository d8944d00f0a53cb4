#include "engine/train/loss_scaler.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "nlohmann/json.hpp"

namespace accel::train {

LossScaler::LossScaler(const LossScalingOptions& options)
    : options_(options),
      enabled_(true),
      scale_(std::ldexp(1.0, options.initial_scale_power)),
      hysteresis_left_(std::max(options.hysteresis, 1)) {}

bool LossScaler::Update(bool finite) {
  if (!enabled_) return !finite;
  if (finite) {
    if (++good_steps_ >= options_.window) {
      scale_ *= 2;
      good_steps_ = 0;
      // DeepSpeed restores the hysteresis budget only when the scale grows again.
      hysteresis_left_ = std::max(options_.hysteresis, 1);
    }
    return false;
  }
  ++overflows_;
  good_steps_ = 0;
  if (--hysteresis_left_ <= 0) {
    scale_ = std::max(scale_ / 2, options_.min_scale);
    hysteresis_left_ = 1;  // after the first halving every further overflow halves again
  }
  return true;
}

std::string LossScaler::ToJson() const {
  nlohmann::json j = {{"enabled", enabled_},
                      {"scale", scale_},
                      {"good_steps", good_steps_},
                      {"hysteresis_left", hysteresis_left_},
                      {"overflows", overflows_}};
  return j.dump();
}

absl::Status LossScaler::FromJson(const std::string& json) {
  nlohmann::json j = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::DataLossError(absl::StrCat("loss scaler state is not a JSON object: ", json));
  }
  auto number = [&](const char* key, auto* out) -> absl::Status {
    auto it = j.find(key);
    if (it == j.end() || !it->is_number()) {
      return absl::DataLossError(absl::StrCat("loss scaler state lacks number \"", key, "\""));
    }
    *out = it->get<std::remove_pointer_t<decltype(out)>>();
    return absl::OkStatus();
  };
  double scale = 0;
  int64_t good = 0, overflows = 0;
  int hysteresis = 0;
  ACCEL_RETURN_IF_ERROR(number("scale", &scale));
  ACCEL_RETURN_IF_ERROR(number("good_steps", &good));
  ACCEL_RETURN_IF_ERROR(number("hysteresis_left", &hysteresis));
  ACCEL_RETURN_IF_ERROR(number("overflows", &overflows));
  if (!(scale > 0)) return absl::DataLossError(absl::StrCat("loss scale ", scale, " is not > 0"));
  scale_ = scale;
  good_steps_ = good;
  hysteresis_left_ = hysteresis;
  overflows_ = overflows;
  return absl::OkStatus();
}

}  // namespace accel::train
