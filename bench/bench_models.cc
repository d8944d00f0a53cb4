#include "bench/bench_models.h"

#include "absl/strings/str_cat.h"
#include "engine/base/env.h"
#include "engine/base/status_macros.h"

namespace accel::bench {

absl::StatusOr<model::ModelConfig> BenchModel(const std::string& name) {
  if (name == "small") return model::ModelConfig(model::Gpt2Config{"small", 4, 4, 256, 50257, 1024});
  return model::ModelPreset(name);
}

absl::StatusOr<std::pair<model::ModelConfig, std::string>> WriteBenchModel(
    const std::string& name, const std::string& scratch, const std::string& tag) {
  ACCEL_ASSIGN_OR_RETURN(model::ModelConfig config, BenchModel(name));
  const std::string path = absl::StrCat(scratch, "/accel_bench_", tag, name, "_config.json");
  ACCEL_RETURN_IF_ERROR(WriteFileAtomic(Env::Default(), path, model::ModelConfigToJson(config)));
  return std::make_pair(std::move(config), path);
}

}  // namespace accel::bench
