// The rows of the job settings table (settings.h) for samples during training (train.sample_*,
// docs/generate.md "Samples during training"), after the other train.* rows in docs/job.md's
// table. The tokenizer is data.tokenizer's row; the checks that need the model or the tokenizer
// run in the lowering (config/sample_lowering.h, generate/training_sample.h).
#include <vector>

#include "job/settings_rows.h"

// The rows name only the fields they set (designated initializers); the rest keep their
// defaults, which is the point, not an omission.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace accel::job {

namespace {

using accel::v1::JobSpec;
using O = config::TrainOptions;

}  // namespace

void AddSampleRows(std::vector<Setting>& rows) {
  rows.insert(
      rows.end(),
      {
          {.key = "train.sample_every",
           .type = SettingType::kInt,
           .help = "every N steps and after the last, rank 0 writes a sample of the weights into "
                   "the job's events: `sample_prompt` continued greedily (llm.c's samples; "
                   "docs/generate.md). Needs a byte-level model (vocab 256) or a tokenizer "
                   "(`data.tokenizer`, or a `tokenizer.json` beside `model.config`), checked at "
                   "submit. 0 = none",
           .default_value = "0",
           .min = 0,
           .flag = "--sample-every",
           .flag_help = "print a sample of the weights every N steps (0: never)",
           .apply = [](const JobSpec& s, O& o) { o.sample.every = s.train().sample_every(); }},
          {.key = "train.sample_prompt",
           .type = SettingType::kText,
           .help = "the text samples continue, encoded as `accelctl generate --prompt`; at most "
                   "`seq_len` - 1 tokens (checked at submit)",
           .flag = "--sample-prompt",
           .flag_help = "the text samples continue (default: the start token)",
           .flag_shows_default = false,
           .apply = [](const JobSpec& s, O& o) { o.sample.prompt = s.train().sample_prompt(); },
           .doc_default = "the tokenizer's BOS (else EOS); a newline for bytes"},
          {.key = "train.sample_max_new_tokens",
           .type = SettingType::kInt,
           .help = "at most this many new tokens per sample (fewer at the tokenizer's EOS or the "
                   "model's context)",
           .min = 1,
           .flag = "--sample-max-new-tokens",
           .flag_help = "at most this many new tokens per sample",
           .flag_default = "32",
           .apply =
               [](const JobSpec& s, O& o) {
                 if (s.train().has_sample_max_new_tokens())
                   o.sample.max_new_tokens = s.train().sample_max_new_tokens();
               },
           .doc_default = "32"},
          {.key = "train.sample_temperature",
           .type = SettingType::kReal,
           .help = "0 = greedy (the arg max); above 0, softmax(logits / t) drawn with the step as "
                   "the seed",
           .default_value = "0",
           .min = 0,
           .range_error = "must be >= 0 (0: greedy), got {got}",
           .flag = "--sample-temperature",
           .flag_help = "sampling temperature of the samples (0: greedy)",
           .apply =
               [](const JobSpec& s, O& o) { o.sample.temperature = s.train().sample_temperature(); }},
      });
}

}  // namespace accel::job
