#include "engine/config/sample_lowering.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace accel::config {

absl::Status LowerSample(TrainOptions* o, const model::ModelConfig& model, Env* env) {
  SampleOptions& s = o->sample;
  if (!s.enabled() || !s.tokenizer.empty()) return absl::OkStatus();
  s.tokenizer = o->dataset.tokenizer;
  if (s.tokenizer.empty() && !o->model_config.empty()) {
    const std::string beside = JoinPath(DirName(o->model_config), "tokenizer.json");
    if (env->FileExists(beside)) s.tokenizer = beside;
  }
  if (s.tokenizer.empty() && model.vocab_size() != 256) {
    return absl::InvalidArgumentError(absl::StrCat(
        "train.sample_every: samples need a tokenizer to become text: model ", model.name(),
        " has a vocabulary of ", model.vocab_size(),
        " tokens, not 256 bytes, and there is no data.tokenizer (nor a tokenizer.json beside "
        "model.config)"));
  }
  return absl::OkStatus();
}

}  // namespace accel::config
