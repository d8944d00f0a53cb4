// The dataset step of the lowering (lower.h): a job whose data is text, JSONL, prompt/completion
// or chat files (TrainOptions::dataset, docs/data.md "In a job") becomes one that reads the
// prepared token shards. Run once, at submit (and by each `accel-worker --standalone` rank): it
// reads and hashes the sources for the cache key, so the typed plan names the train.bin the
// ranks will open; the ranks prepare it first when the cache does not hold it yet
// (train/dataset_phase.h).
#pragma once

#include "absl/status/status.h"
#include "engine/base/env.h"
#include "engine/config/train_options.h"
#include "engine/data/prepare.h"
#include "engine/model/model_config.h"

namespace accel::config {

// With options->dataset on: fills its defaults (the tokenizer beside model_config's
// config.json — tokenizer.json there — and data::DefaultCacheDir()), checks the files, the
// tokenizer and its vocabulary against `model`'s vocab_size and the first records of every
// file (data::CheckDataset), then sets options->data to the prepared train.bin and, when the
// job evaluates without eval.data of its own, options->eval.data to the validation.bin.
// InvalidArgument / NotFound naming the data.* key, the file and line. Off: nothing changes.
[[nodiscard]] absl::Status LowerDataset(TrainOptions* options, const model::ModelConfig& model,
                                        Env* env);

// What data::PrepareDataset takes for a lowered dataset, preparing on `threads` threads.
[[nodiscard]] absl::StatusOr<data::PrepareOptions> PrepareOptionsOf(const DatasetOptions& dataset,
                                                                    int threads);

}  // namespace accel::config
