// Checks shared by the Accelerate YAML and DeepSpeed JSON fuzz targets: what must hold for a
// config that resolved (engine/config/resolve.h), and the lowering acceld runs on config texts.
#pragma once

#include <string>

#include "engine/config/convert.h"
#include "engine/config/document.h"
#include "engine/config/lower.h"
#include "engine/config/plan_json.h"
#include "engine/config/resolve.h"
#include "engine/testing/mem_env.h"
#include "fuzz/fuzz_check.h"
#include "nlohmann/json.hpp"

namespace accel::fuzz {

// The job's settings the configs' "auto" values are filled from (as in fuzz_test.cc).
inline config::ConfigInputs FuzzJob() {
  config::ConfigInputs inputs;
  inputs.job.micro_batch_size = 2;
  inputs.job.hidden_size = 64;
  return inputs;
}

// A resolver's answer: OK or InvalidArgument.
inline void CheckResolved(const absl::StatusOr<config::TrainPlan>& plan) {
  if (!plan.ok()) CheckError(plan.status(), {absl::StatusCode::kInvalidArgument}, "");
}

// Resolves the files a conversion wrote; they must resolve, to the same strategy.
inline void CheckConversion(const config::TrainPlan& plan,
                            const absl::StatusOr<config::Conversion>& conv) {
  if (!conv.ok()) {
    CheckError(conv.status(), {absl::StatusCode::kInvalidArgument}, "");
    return;
  }
  auto yaml = config::ParseYamlDocument(conv->accelerate_yaml, "converted.yaml");
  FUZZ_CHECK(yaml.ok(), "a converted YAML does not parse: " + yaml.status().ToString() + "\n" +
                            conv->accelerate_yaml);
  absl::StatusOr<config::Document> json = absl::InvalidArgumentError("none");
  if (!conv->deepspeed_json.empty()) {
    json = config::ParseJsonDocument(conv->deepspeed_json, "converted.json");
    FUZZ_CHECK(json.ok(), "a converted JSON does not parse: " + json.status().ToString());
  }
  config::ConfigInputs inputs = FuzzJob();
  // What the conversion notes move to the job file, the job supplies.
  inputs.job.gradient_accumulation_steps = plan.gradient_accumulation_steps;
  inputs.job.gradient_clipping = plan.gradient_clipping;
  auto again = config::ResolveDocuments(*yaml, json.ok() ? &*json : nullptr, inputs);
  FUZZ_CHECK(again.ok(), "converted files do not resolve: " + again.status().ToString() +
                             "\n" + conv->accelerate_yaml + "\n" + conv->deepspeed_json);
  FUZZ_CHECK(again->strategy == plan.strategy,
             "a conversion changed the strategy:\n" + conv->accelerate_yaml + "\n" +
                 conv->deepspeed_json);
}

// What a resolved plan promises: its JSON parses, and converting it either says why not or
// writes files that resolve to the same strategy.
inline void CheckPlan(const config::TrainPlan& plan) {
  const std::string text = config::PlanToJsonText(plan);
  FUZZ_CHECK(nlohmann::json::accept(text), "PlanToJsonText is not JSON:\n" + text);
  FUZZ_CHECK(!config::PlanToText(plan).empty(), "PlanToText is empty");
  if (plan.distributed_type == config::DistributedType::kDeepSpeed) {
    CheckConversion(plan, config::ConvertToFsdp(plan));
  } else {
    CheckConversion(plan, config::ConvertToDeepSpeed(plan, "converted.json"));
  }
}

// The lowering acceld runs at submit on a job's config texts (no environment, no files).
inline void CheckLowering(config::ConfigFile accelerate, config::ConfigFile deepspeed) {
  config::LoweringInputs in;
  in.accelerate = std::move(accelerate);
  in.deepspeed = std::move(deepspeed);
  in.check_files = false;
  testing::MemEnv env;
  auto lowered = config::Lower(in, &env);
  if (!lowered.ok()) {
    CheckError(lowered.status(),
               {absl::StatusCode::kInvalidArgument, absl::StatusCode::kNotFound}, "");
    return;
  }
  FUZZ_CHECK(lowered->world_size >= 1, "a lowered job with no ranks");
}

}  // namespace accel::fuzz
