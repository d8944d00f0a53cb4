// The samples step of the lowering (lower.h): where a job that asks for samples during training
// (TrainOptions::sample, train.sample_every) gets the text of its tokens. Runs at submit with
// the rest of the lowering; the prompt itself is encoded and checked against train.seq_len by
// generate::OpenTrainingSample (engine/generate/training_sample.h), which needs the tokenizer.
#pragma once

#include "absl/status/status.h"
#include "engine/base/env.h"
#include "engine/config/train_options.h"
#include "engine/model/model_config.h"

namespace accel::config {

// With options->sample on and no tokenizer of its own: data.tokenizer (options->dataset's, as
// LowerDataset resolved it), else the tokenizer.json beside model.config when there is one.
// InvalidArgument naming train.sample_every when the model is not byte-level (vocab_size 256)
// and no tokenizer is found: its samples could not be written as text. Off: nothing changes.
[[nodiscard]] absl::Status LowerSample(TrainOptions* options, const model::ModelConfig& model,
                                       Env* env);

}  // namespace accel::config
