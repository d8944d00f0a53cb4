// Samples during training (train.sample_every; docs/generate.md "Samples during training"): the
// text of the job's prompt continued by the weights being trained, as llm.c prints one every N
// steps. The trainer gathers the full parameters (train/sampling.h); this part turns them into
// text with the same decoder and token loop as `accelctl generate`, so a sample is
// token-identical to `accelctl generate --prompt P --max-new-tokens M` on the same weights.
//
// The prompt: sample.prompt encoded as `accelctl generate --prompt` encodes it (the tokenizer's
// special tokens added), or, when empty, one start token: the tokenizer's BOS, else its EOS (a
// GPT-2 tokenizer's <|endoftext|>, llm.c's start), or "\n" for a byte-level model. It must leave
// a position to generate within train.seq_len: at most seq_len - 1 tokens.
// Decoding: fp32 on the CPU, from the fp32 values the gather gives (the master weights under
// mixed precision), capacity prompt + max_new_tokens (capped at the model's positions), greedy
// at temperature 0; at a temperature > 0 the draws are seeded with the step. Generation stops at
// the tokenizer's EOS too.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/base/env.h"
#include "engine/config/train_options.h"
#include "engine/generate/generator.h"
#include "engine/generate/load_model.h"
#include "engine/model/param_specs.h"

namespace accel::generate {

// A sample as one line of text: `step N sample: "TEXT"`, TEXT escaped as C escapes it (\n, \",
// \\, control bytes in octal) with UTF-8 kept: what `accelctl watch` and a standalone run print.
std::string SampleLine(int64_t step, std::string_view text);

class TrainingSampler {
 public:
  // Opens sample.tokenizer ("" = bytes) and encodes the prompt. InvalidArgument naming
  // data.tokenizer when the tokenizer cannot be used for `model`, train.sample_prompt when the
  // prompt is longer than seq_len - 1 tokens or there is no start token for an empty one.
  [[nodiscard]] static absl::StatusOr<TrainingSampler> Open(Env* env,
                                                            const config::SampleOptions& sample,
                                                            const model::ModelConfig& model,
                                                            int64_t seq_len);

  // The continuation of the prompt by `params` (layout order, fp32, the caller's; read only).
  // `step` seeds the draws at a temperature > 0.
  [[nodiscard]] absl::StatusOr<GenerateResult> Run(const model::ModelLayout& layout,
                                                   const float* params, int64_t step) const;

  const std::vector<int32_t>& prompt_ids() const { return prompt_ids_; }

 private:
  TrainingSampler(config::SampleOptions o, TextCodec codec) : options_(o), codec_(codec) {}
  config::SampleOptions options_;
  TextCodec codec_;
  std::vector<int32_t> prompt_ids_;
};

}  // namespace accel::generate
