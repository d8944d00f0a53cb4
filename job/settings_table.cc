// The rows of the job settings table (settings.h) for the model, data and train sections, in the
// order of docs/job.md's "## Keys" table; help strings are that table's "meaning" cells. The
// other sections' rows: settings_table_run.cc.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/config/batch_bounds.h"
#include "engine/config/train_plan.h"
#include "engine/optim/lr_schedule.h"
#include "engine/shard/shard_plan.h"
#include "job/job_placement.h"
#include "job/settings_rows.h"

// The rows name only the fields they set (designated initializers); the rest keep their
// defaults, which is the point, not an omission.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace accel::job {

namespace {

using accel::v1::JobSpec;
using O = config::TrainOptions;

}  // namespace

void AddModelDataTrainRows(std::vector<Setting>& rows) {
  rows.insert(
      rows.end(),
      {
          {.key = "name",
           .type = SettingType::kText,
           .help = "shown by `accelctl list` / `status`",
           .default_value = "job"},
          {.key = "model",
           .type = SettingType::kSection,
           .help = "`model: gpt2-tiny` is short for `{preset: gpt2-tiny}`",
           .short_key = "preset",
           .doc_default = "`{preset: gpt2-mini}`"},
          {.key = "model.preset",
           .type = SettingType::kText,
           .help = "gpt2-tiny, gpt2-mini (byte-level, vocab 256), gpt2, gpt2-medium, gpt2-large, "
                   "gpt2-xl; llama-tiny, llama-mini (byte-level), smollm-135m, tinyllama-1.1b, "
                   "llama3.2-1b (docs/models.md)",
           .default_value = "gpt2-mini",
           .flag = "--model",
           // {presets}: every family's, from the registry (settings_flags.cc).
           .flag_help = "model preset ({presets})",
           .apply =
               [](const JobSpec& s, O& o) {
                 o.model = s.model().preset().empty() ? o.model : s.model().preset();
               }},
          {.key = "model.config",
           .type = SettingType::kPath,
           .help = "a Hugging Face `config.json` (`model_type` gpt2, llama, mistral, qwen2 or "
                   "qwen3; docs/models.md); wins over `preset`",
           .flag = "--model-config",
           .flag_help =
               "Hugging Face config.json, model_type {model_types} (wins over --model)",
           .flag_shows_default = false,
           .apply = [](const JobSpec& s, O& o) { o.model_config = s.model().config(); }},
          {.key = "model.init_weights",
           .type = SettingType::kPath,
           .help =
               "`model.safetensors`, or a sharded checkpoint's `model.safetensors.index.json` "
               "(Hugging Face names) to start from; absent = seeded init. A file: submit checks it "
               "is a readable regular file (`accel-worker --init-weights` also takes the directory "
               "holding either)",
           .flag = "--init-weights",
           .flag_help = "model.safetensors to start from (HF GPT-2 names)",
           .flag_shows_default = false,
           .apply = [](const JobSpec& s, O& o) { o.init_weights = s.model().init_weights(); }},
          {.key = "data.path",
           .type = SettingType::kPath,
           .help =
               "an llm.c token shard (`.bin`, GPT-2 uint16 or Llama 3 uint32 ids) or a text file "
               "read as bytes; formats in `docs/data.md`",
           .flag = "--data",
           .flag_help =
               "llm.c token shard (.bin, GPT-2 uint16 or Llama 3 uint32; docs/data.md) or a "
               "text file read as bytes",
           .apply = [](const JobSpec& s, O& o) { o.data = s.data().path(); },
           .doc_default = "required"},
          {.key = "data.shuffle_seed",
           .type = SettingType::kInt,
           .help = "shuffle the data windows with this seed; absent = llm.c order",
           .apply =
               [](const JobSpec& s, O& o) {
                 if (s.data().has_shuffle_seed()) o.shuffle_seed = s.data().shuffle_seed();
               },
           .doc_default = "absent"},
          {.key = "data.format",
           .type = SettingType::kEnum,
           .help =
               "absent: `data.path` is a token shard, or a file read as bytes. `text`, `jsonl`, "
               "`prompt_completion` or `messages`: a dataset tokenised with `data.tokenizer` "
               "and prepared once into token shards (with a loss mask for the last two) in "
               "`data.cache_dir`; `docs/data.md` \"In a job\"",
           .names = {"text", "jsonl", "prompt_completion", "messages"},
           .flag = "--data-format",
           .flag_help = "text | jsonl | prompt_completion | messages: prepare --data with "
                        "--tokenizer (docs/data.md)",
           .flag_shows_default = false,
           .apply = [](const JobSpec& s, O& o) { o.dataset.format = s.data().format(); },
           .doc_default = "absent"},
          {.key = "data.mix",
           .type = SettingType::kWeightedPaths,
           .help = "with `data.format`: more sources, a mapping of files or globs (in the file "
                   "name) to positive weights, `{chat.jsonl: 3, \"web/*.jsonl\": 1}`: each "
                   "source's documents are drawn in proportion to its weight, a weight below 1 "
                   "subsampling it and above 1 repeating it; `data.path`, when given, is one "
                   "more source of weight 1 (docs/data.md \"Mixtures\")",
           .apply =
               [](const JobSpec& s, O& o) {
                 o.dataset.mix.clear();
                 for (const auto& m : s.data().mix()) {
                   o.dataset.mix.push_back({m.path(), m.weight()});
                 }
               },
           .doc_default = "absent"},
          {.key = "data.tokenizer",
           .type = SettingType::kPath,
           .help = "with `data.format` (or for `train.sample_every`'s text): a `tokenizer.json` "
                   "or the folder holding it (with its "
                   "`tokenizer_config.json`); absent = the `tokenizer.json` beside "
                   "`model.config`. Its vocabulary must fit the model's `vocab_size`",
           .flag = "--tokenizer",
           .flag_help = "tokenizer.json (or its folder) for --data-format",
           .flag_shows_default = false,
           .apply = [](const JobSpec& s, O& o) { o.dataset.tokenizer = s.data().tokenizer(); },
           .doc_default = "model folder's"},
          {.key = "data.text_field",
           .type = SettingType::kText,
           .help = "`jsonl`: the field holding each record's text",
           .default_value = "text",
           .apply = [](const JobSpec& s, O& o) { o.dataset.text_field = s.data().text_field(); }},
          {.key = "data.validation",
           .type = SettingType::kPath,
           .help = "a held-out file in `data.format`, prepared beside the training split: "
                   "evaluation's data (`eval.*`) when `eval.data` is absent",
           .apply = [](const JobSpec& s, O& o) { o.dataset.validation = s.data().validation(); },
           .doc_default = "absent"},
          {.key = "data.validation_fraction",
           .type = SettingType::kReal,
           .help = "or hold out this share of the documents, drawn per document with a fixed "
                   "seed (the same split every time)",
           .min = 0,
           .max = 1,
           .max_exclusive = true,
           .range_error = "must be in [0, 1), got {got}",
           .apply = [](const JobSpec& s, O& o) {
             o.dataset.validation_fraction = s.data().validation_fraction();
           }},
          {.key = "data.skip_invalid",
           .type = SettingType::kBool,
           .help = "skip records that do not parse (counted in the manifest) instead of refusing "
                   "the dataset at the first, named by file and line",
           .default_value = "false",
           .apply = [](const JobSpec& s, O& o) { o.dataset.skip_invalid = s.data().skip_invalid(); }},
          {.key = "data.cache_dir",
           .type = SettingType::kPath,
           .help = "where prepared datasets are kept, by content (`$ACCEL_DATA_CACHE`, else "
                   "`~/.cache/accel/datasets` of acceld's user)",
           .apply = [](const JobSpec& s, O& o) { o.dataset.cache_dir = s.data().cache_dir(); },
           .doc_default = "the default cache"},
          {.key = "train.steps",
           .type = SettingType::kInt,
           .help = "optimizer steps (>= 1)",
           .default_value = "100",
           .min = 1,
           .flag = "--steps",
           .flag_help = "optimizer steps",
           .apply = [](const JobSpec& s, O& o) { o.steps = s.train().steps(); }},
          {.key = "train.micro_batch",
           .type = SettingType::kInt,
           .help = "sequences per rank per micro-step (B), 1 to 2^20 (1048576)",
           .default_value = "4",
           .min = 1,
           .max = static_cast<double>(config::kMaxMicroBatch),
           .max_note = " (2^20)",
           .flag = "--batch",
           .flag_help = "micro-batch size B",
           .apply = [](const JobSpec& s, O& o) { o.batch = s.train().micro_batch(); }},
          {.key = "train.grad_accum",
           .type = SettingType::kInt,
           .help = "micro-steps per optimizer step, 1 to 2^20 (1048576)",
           .default_value = "1",
           .min = 1,
           .max = static_cast<double>(config::kMaxGradAccum),
           .max_note = " (2^20)",
           .flag = "--grad-accum",
           .flag_help = "micro-batches per optimizer step",
           .apply = [](const JobSpec& s, O& o) { o.grad_accum = s.train().grad_accum(); }},
          {.key = "train.seq_len",
           .type = SettingType::kInt,
           .help = "tokens per sequence (T)",
           .default_value = "64",
           .min = 1,
           .flag = "--seq",
           .flag_help = "sequence length T",
           .apply = [](const JobSpec& s, O& o) { o.seq = s.train().seq_len(); }},
          {.key = "train.lr",
           .type = SettingType::kReal,
           .help = "peak learning rate (> 0)",
           .default_value = "3.0e-4",
           .min = 0,
           .min_exclusive = true,
           .range_error = "must be > 0, got {got}",
           .flag = "--lr",
           .flag_help = "peak learning rate",
           .apply = [](const JobSpec& s,
                       O& o) { o.schedule.base_lr = static_cast<float>(s.train().lr()); }},
          {.key = "train.min_lr",
           .type = SettingType::kReal,
           .help = "final learning rate of `linear` / `cosine`",
           .default_value = "0",
           .min = 0,
           .range_error = "must be >= 0",
           .flag = "--min-lr",
           .flag_help = "final learning rate of linear/cosine",
           .apply = [](const JobSpec& s,
                       O& o) { o.schedule.min_lr = static_cast<float>(s.train().min_lr()); }},
          {.key = "train.schedule",
           .type = SettingType::kEnum,
           .help = "`constant`, `linear` or `cosine`",
           .default_value = "cosine",
           .names = {"constant", "linear", "cosine"},
           .apply_checked = [](const JobSpec& s, O& o) -> absl::Status {
             ACCEL_ASSIGN_OR_RETURN(
                 o.schedule.kind,
                 Keyed("train.schedule", optim::ParseScheduleKind(s.train().schedule())));
             return absl::OkStatus();
           }},
          {.key = "train.warmup",
           .type = SettingType::kInt,
           .help = "linear warmup steps",
           .default_value = "0",
           .min = 0,
           .flag = "--warmup",
           .flag_help = "linear warmup steps",
           .apply = [](const JobSpec& s, O& o) { o.schedule.warmup_steps = s.train().warmup(); }},
          {.key = "train.weight_decay",
           .type = SettingType::kReal,
           .help = "AdamW decoupled weight decay (matrices only)",
           .default_value = "0",
           .min = 0,
           .range_error = "must be >= 0",
           .flag = "--weight-decay",
           .flag_help = "AdamW decoupled weight decay (rank >= 2 params)",
           .apply =
               [](const JobSpec& s, O& o) {
                 o.adamw.weight_decay = static_cast<float>(s.train().weight_decay());
               }},
          {.key = "train.beta1",
           .type = SettingType::kReal,
           .help = "AdamW betas, in [0, 1)",
           .default_value = "0.9",
           .min = 0,
           .max = 1,
           .max_exclusive = true,
           .range_error = "must be in [0, 1)",
           .flag = "--beta1",
           .flag_help = "AdamW beta1",
           .apply = [](const JobSpec& s,
                       O& o) { o.adamw.beta1 = static_cast<float>(s.train().beta1()); },
           .doc_key = "`train.beta1`, `train.beta2`",
           .doc_default = "0.9, 0.999"},
          {.key = "train.beta2",
           .type = SettingType::kReal,
           .help = "AdamW beta2, in [0, 1) (shares train.beta1's row)",
           .default_value = "0.999",
           .min = 0,
           .max = 1,
           .max_exclusive = true,
           .range_error = "must be in [0, 1)",
           .flag = "--beta2",
           .flag_help = "AdamW beta2",
           .apply = [](const JobSpec& s,
                       O& o) { o.adamw.beta2 = static_cast<float>(s.train().beta2()); },
           .doc_folded = true},
          {.key = "train.eps",
           .type = SettingType::kReal,
           .help = "AdamW epsilon (> 0)",
           .default_value = "1.0e-8",
           .min = 0,
           .min_exclusive = true,
           .range_error = "must be > 0",
           .flag = "--eps",
           .flag_help = "AdamW epsilon",
           .apply = [](const JobSpec& s,
                       O& o) { o.adamw.eps = static_cast<float>(s.train().eps()); }},
          {.key = "train.grad_clip",
           .type = SettingType::kReal,
           .help = "global-norm clipping threshold; 0 turns it off",
           .default_value = "1.0",
           .min = 0,
           .range_error = "must be >= 0 (0 turns it off)",
           .flag = "--grad-clip",
           .flag_help = "global-norm clipping threshold; 0 turns it off",
           .apply = [](const JobSpec& s,
                       O& o) { o.grad_clip = static_cast<float>(s.train().grad_clip()); }},
          {.key = "train.seed",
           .type = SettingType::kInt,
           .help = "initialisation seed",
           .default_value = "1337",
           .flag = "--seed",
           .flag_help = "initialisation seed",
           .apply = [](const JobSpec& s, O& o) { o.seed = s.train().seed(); }},
          {.key = "train.log_every",
           .type = SettingType::kInt,
           .help = "a metrics event every N steps (and for the first and last step)",
           .default_value = "10",
           .min = 1,
           .flag = "--log-every",
           .flag_help = "print progress every N steps"},
          {.key = "train.max_nonfinite_steps",
           .type = SettingType::kInt,
           .help =
               "a run that cannot learn fails: this many steps in a row with a non-finite loss or "
               "gradient norm (each skipped) end the job FAILED, naming the steps (0: never; fp16 "
               "loss scaling keeps its own overflow rules)",
           .min = 0,
           .flag = "--max-nonfinite-steps",
           .flag_help =
               "fail after this many steps in a row with a non-finite loss or gradient norm (0: "
               "never)",
           .flag_default = "5",
           .apply =
               [](const JobSpec& s, O& o) {
                 if (s.train().has_max_nonfinite_steps())
                   o.max_nonfinite_steps = s.train().max_nonfinite_steps();
               },
           .doc_default = "5"},
          {.key = "train.activation_checkpointing",
           .type = SettingType::kBool,
           .help =
               "per-block activation checkpointing: keep each transformer block's input, recompute "
               "its forward in backward — the same losses and gradients, a fraction of the "
               "activation memory (docs/sharding.md). Also on when the config asks for it "
               "(`fsdp_activation_checkpointing: true`, or a DeepSpeed `activation_checkpointing` "
               "section)",
           .default_value = "false",
           .flag = "--activation-checkpointing",
           .flag_help =
               "keep each block's input and recompute its forward in backward (same results, a "
               "fraction of the activation memory)",
           .apply =
               [](const JobSpec& s, O& o) {
                 o.activation_checkpointing = s.train().activation_checkpointing();
               }},
          {.key = "train.ignore_memory_plan",
           .type = SettingType::kBool,
           .help =
               "start even when the memory plan says the job cannot fit its machine (or its memory "
               "cgroup); the worker otherwise refuses it before allocating (docs/sharding.md)",
           .default_value = "false",
           .flag = "--ignore-memory-plan",
           .flag_help =
               "start even when the memory plan does not fit this machine or its memory cgroup "
               "(the worker refuses such a job before allocating; docs/sharding.md)",
           .apply = [](const JobSpec& s,
                       O& o) { o.ignore_memory_plan = s.train().ignore_memory_plan(); }},
      });
}

}  // namespace accel::job
