// Samples during training (issue 31; train.sample_every, docs/generate.md "Samples during
// training"): every sample.every steps and after the last step — llm.c's rule, never at step 0 —
// the job's prompt continued by the weights of that step.
//
// Every rank takes part in one gather of the full parameters: the unit-by-unit gather a full
// checkpoint save makes (Trainer::GatherUnits; the fp32 master values under mixed precision,
// read back from host or files under offload). Rank 0 copies the units into one fp32 buffer
// (the model's size, in the host pool, for the sample's duration), builds a decoder on it and
// generates (generate::TrainingSampler); the other ranks hold one unit at a time and go on.
// Nothing a step keeps changes: no forward of the training model runs, gradients, optimizer
// state, the loss scaler and the data position are not touched.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/config/train_options.h"

namespace accel::train {

struct SampleResult {
  int64_t step = 0;            // steps done before it
  std::string prompt;          // sample.prompt as given ("" = the start token)
  std::vector<int32_t> prompt_ids;
  std::string text;            // the new text (the prompt not repeated), invalid UTF-8 replaced
  std::vector<int32_t> ids;    // the new tokens
  std::string stop_reason;     // "eos", "length", "context"
  double seconds = 0;          // generation only (the gather not counted)
  double tokens_per_s = 0;     // new tokens per second of generation
};

// Whether a sample is due once `steps_done` of `total_steps` are done: every N-th step, and the
// last one.
bool SampleDue(const config::SampleOptions& sample, int64_t steps_done, int64_t total_steps);

// One JSON object: {"step":..,"prompt":..,"text":..,"ids":[..],"stop_reason":..,...}.
std::string SampleResultToJson(const SampleResult& s);

}  // namespace accel::train
