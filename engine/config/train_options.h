// TrainOptions: everything the engine takes to train one rank — the model, the data, the loop,
// the optimizer and schedule, the sharding plan, precision, offload, loading and checkpoints.
// It is what the lowering (lower.h) produces from a config file and a job, and what
// train::Trainer consumes; it lives here, below train, because config is the only place where a
// file's settings become engine structs (DESIGN.md §1, "One plan").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/base/env.h"
#include "engine/checkpoint/dir_owner.h"
#include "engine/model/model_config.h"
#include "engine/optim/adamw.h"
#include "engine/optim/loss_scaling_options.h"
#include "engine/optim/lr_schedule.h"
#include "engine/shard/shard_plan.h"

namespace accel::config {

// Evaluation during training (engine/train/evaluation.h, docs/job.md "Evaluation"): the mean
// cross-entropy over the unmasked targets of `data` (a TokenSource path: a token shard, or text
// read as bytes; a prepared dataset's validation.bin) or its first max_batches (B, T) batches.
// Off when `data` is empty.
struct EvalOptions {
  std::string data;
  int64_t every_n_steps = 0;  // after every N-th step; 0: never between steps
  int64_t max_batches = 0;    // 0: every whole batch of the file
  bool at_start = false;      // the starting weights, as step 0 (not again on a resume)
  bool at_end = true;         // after the last step
};

// A dataset prepared from text, JSONL, prompt/completion or chat files (docs/data.md "In a
// job"): the lowering (dataset_lowering.h) points `data` at the prepared train.bin (and an
// evaluation without data of its own at validation.bin) and keeps here what a rank needs to
// prepare it when the cache lacks it. Off (format empty): `data` is a token shard or a file read
// as bytes, as before.
struct DatasetOptions {
  std::string format;              // text | jsonl | prompt_completion | messages; "" = off
  std::string source;              // the job's data.path (a file, or a glob in its file name)
  std::string tokenizer;           // tokenizer.json or its folder; "" = beside model.config
  std::string text_field = "text";
  std::string validation;          // held-out files (a file or a glob), in the same format
  double validation_fraction = 0;  // or this share of the documents, drawn per document
  bool skip_invalid = false;
  std::string cache_dir;           // "" = data::DefaultCacheDir()
  // More weighted sources (data.mix), after `source` (weight 1) when that is set.
  std::vector<std::pair<std::string, double>> mix;
  bool enabled() const { return !format.empty(); }
};

// Samples during training (engine/train/sampling.h, docs/generate.md "Samples during training"):
// every `every` steps and after the last, rank 0 continues `prompt` by up to max_new_tokens
// tokens on the gathered fp32 weights (greedy at temperature 0) and reports the text. Off when
// `every` is 0.
struct SampleOptions {
  int64_t every = 0;
  std::string prompt;          // "" = the tokenizer's BOS (else EOS), or "\n" for bytes
  int64_t max_new_tokens = 32;
  double temperature = 0;      // 0 = greedy
  // tokenizer.json or its folder; "" = bytes (a vocabulary-256 model). The lowering fills it
  // from data.tokenizer or the tokenizer.json beside model.config (sample_lowering.h).
  std::string tokenizer;
  // Not a job key: the longest gap between rank 0's heartbeats while it samples
  // (train/sample_heartbeat.h); it must be well under the communicator's deadline. The worker
  // sets it to a quarter of comm_timeout_s, at most 1 s.
  double heartbeat_s = 1.0;
  // Not a job key: how long the other ranks wait for rank 0's sample at most (a sample that
  // hangs fails the gang after it).
  double limit_s = 1800;
  bool enabled() const { return every > 0; }
};

struct TrainOptions {
  // Model: a preset name, or a Hugging Face config.json (wins when set).
  std::string model = "gpt2-mini";
  std::string model_config;
  // The model, already read: a rank built from its typed plan (job/plan_proto.h) gets it from
  // the plan, and ModelConfigOf returns it without opening config.json or looking up the preset.
  // Unset: ModelConfigOf reads model_config, else the preset.
  std::optional<model::ModelConfig> resolved_model;
  std::string init_weights;  // model.safetensors; empty = seeded GPT-2 init
  std::string data;          // llm.c token shard or raw text
  int64_t batch = 4;
  int64_t seq = 64;
  int64_t steps = 100;
  int64_t grad_accum = 1;
  // Per-block activation checkpointing (Accelerate's fsdp_activation_checkpointing, DeepSpeed's
  // activation_checkpointing section): keep each block's input, recompute its forward in
  // backward. Same results, a fraction of the activation memory (model::ActivationOptions).
  bool activation_checkpointing = false;
  std::optional<uint64_t> shuffle_seed;
  DatasetOptions dataset;  // set: `data` is the prepared train.bin of this dataset
  optim::LrSchedule schedule;  // total_steps is set from `steps`
  optim::AdamWConfig adamw;
  float grad_clip = 1.0f;  // 0 turns clipping off
  uint64_t seed = 1337;
  shard::ShardOptions shard;
  // Rank 0 initialises (or reads --init-weights) and broadcasts to the others; otherwise every
  // rank initialises identically from the seed or reads the file itself.
  bool sync_module_states = false;
  // Sharded checkpoints (engine/checkpoint/sharded_checkpoint.h): saved into checkpoint_dir every
  // checkpoint_every steps (0: never), keeping the newest keep_last (0: all). resume_dir: continue
  // from its `latest` checkpoint (any world size or strategy).
  std::string checkpoint_dir;
  int64_t checkpoint_every = 0;
  int keep_last = 0;
  // Besides the newest keep_last, keep the keep_best steps with the lowest eval loss (a step
  // without one never counts as best). 0: none kept for that reason.
  int keep_best = 0;
  EvalOptions eval;
  SampleOptions sample;
  std::string resume_dir;
  // Who saves into checkpoint_dir (engine/checkpoint/dir_owner.h): the directory must be this
  // owner's or nobody's, keep_last prunes only its steps. The worker sets it (acceld's job and
  // state id, or a standalone run's id); anonymous for library use.
  checkpoint::CheckpointOwner checkpoint_owner;
  // What a checkpoint save writes (Accelerate's fsdp_state_dict_type / DeepSpeed's
  // zero3_save_16bit_model). Every rank always writes its own ranges (exact resume); kFull adds
  // DIR/step_N/model.safetensors in fp32, gathered unit by unit and written by rank 0;
  // save_16bit adds a bf16 model.safetensors instead (f16 when training in fp16). Either is
  // sharded above max_shard_bytes.
  enum class StateDictType { kSharded, kFull };
  StateDictType state_dict_type = StateDictType::kSharded;
  bool save_16bit = false;
  // Model files (full / 16-bit checkpoints, the final weights) larger than this many bytes of
  // tensor data are written in Hugging Face's sharded form (engine/checkpoint/hf_shards.h);
  // unset: checkpoint::kDefaultMaxShardBytes (5 GB, save_pretrained's default); <= 0: one file.
  std::optional<int64_t> max_shard_bytes;
  // Efficient loading of init_weights. cpu_ram_efficient_loading (with sync_module_states): only
  // rank 0 reads the file, unit by unit, and the others receive what they hold. zero3_init:
  // every rank reads only the byte ranges it holds, no broadcast.
  bool cpu_ram_efficient_loading = false;
  bool zero3_init = false;
  // fp16 dynamic loss scaling, used when shard.param_dtype or shard.reduce_dtype is f16.
  optim::LossScalingOptions loss_scaling;
  // Every this many steps (and at the last), the step's record carries every rank's memory,
  // bytes communicated since the previous such record, and collective wait time
  // (StepMetrics::ranks; a small all-gather on the world group). 0: never.
  int64_t rank_stats_every = 0;
  // A run that cannot learn fails: this many steps in a row with a non-finite loss or gradient
  // norm (each skipped) end Train() with FailedPrecondition naming the steps. 0: never. Not
  // under fp16 loss scaling, whose overflow skips are its own business.
  int64_t max_nonfinite_steps = 5;
  // The worker checks the memory plan (engine/train/memory_plan.h) against the machine or its
  // memory cgroup before allocating and refuses a job that cannot fit; this starts it anyway
  // (--ignore-memory-plan, the job's train.ignore_memory_plan).
  bool ignore_memory_plan = false;
};

// InvalidArgument naming the flag for a non-positive batch, seq or accumulation, negative
// steps, no data, or a negative lr, warmup or clip.
[[nodiscard]] absl::Status ValidateTrainOptions(const TrainOptions& options);

// The model of options.resolved_model when set, else of options.model_config (a config.json),
// else of the preset options.model.
[[nodiscard]] absl::StatusOr<model::ModelConfig> ModelConfigOf(Env* env,
                                                              const TrainOptions& options);

// How often this process obtained a model config: every read by ModelConfigOf of a config.json
// or a preset, and every model taken from a typed plan (NoteModelConfigRead). Not counted: a
// resolved_model handed back. A rank built from its plan counts one (issue 29's test).
int64_t ModelConfigReads();
void NoteModelConfigRead();

}  // namespace accel::config
