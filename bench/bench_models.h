// The benchmarks' models: a preset of any architecture by name, or "small" (GPT-2 L=4, C=256,
// NH=4, V=50257: the llm.c comparison shape), written as a config.json the trainer reads.
#pragma once

#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "engine/model/model_config.h"

namespace accel::bench {

[[nodiscard]] absl::StatusOr<model::ModelConfig> BenchModel(const std::string& name);

// BenchModel(name) written to scratch/accel_bench_<tag>_<name>_config.json; the model and the
// file's path.
[[nodiscard]] absl::StatusOr<std::pair<model::ModelConfig, std::string>> WriteBenchModel(
    const std::string& name, const std::string& scratch, const std::string& tag);

}  // namespace accel::bench
