#include "engine/generate/training_sample.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/model/registry.h"

namespace accel::generate {

std::string SampleLine(int64_t step, std::string_view text) {
  return absl::StrCat("step ", step, " sample: \"",
                      absl::Utf8SafeCEscape(absl::string_view(text.data(), text.size())), "\"");
}

absl::StatusOr<TrainingSampler> TrainingSampler::Open(Env* env,
                                                      const config::SampleOptions& sample,
                                                      const model::ModelConfig& model,
                                                      int64_t seq_len) {
  absl::StatusOr<TextCodec> codec = TextCodec::Open(env, sample.tokenizer, model.vocab_size());
  if (!codec.ok()) {
    return absl::Status(codec.status().code(),
                        absl::StrCat("data.tokenizer (the text of train.sample_every's samples): ",
                                     codec.status().message()));
  }
  TrainingSampler s(sample, *std::move(codec));
  if (!sample.prompt.empty()) {
    absl::StatusOr<std::vector<int32_t>> ids =
        s.codec_.Encode(sample.prompt, /*add_special_tokens=*/true);
    if (!ids.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("train.sample_prompt: ", ids.status().message()));
    }
    s.prompt_ids_ = *std::move(ids);
  } else if (sample.tokenizer.empty()) {
    s.prompt_ids_ = {'\n'};
  } else if (std::optional<int32_t> start = s.codec_.start_id(); start.has_value()) {
    s.prompt_ids_ = {*start};
  }
  if (s.prompt_ids_.empty()) {
    return absl::InvalidArgumentError(
        "train.sample_prompt: required: the tokenizer has no BOS or EOS token to start an empty "
        "prompt from");
  }
  const int64_t n = static_cast<int64_t>(s.prompt_ids_.size());
  if (n > seq_len - 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "train.sample_prompt: ", n, " tokens; at most train.seq_len - 1 = ", seq_len - 1,
        " (a sample continues the prompt within the context the model trains on)"));
  }
  return s;
}

absl::StatusOr<GenerateResult> TrainingSampler::Run(const model::ModelLayout& layout,
                                                    const float* params, int64_t step) const {
  const model::ModelConfig& config = layout.config();
  GenerateOptions options;
  options.max_new_tokens = options_.max_new_tokens;
  options.sampling.temperature = options_.temperature;
  options.sampling.seed = static_cast<uint64_t>(step);
  options.end_ids = codec_.end_ids();
  // The same cache as `accelctl generate` (client/generate_command.cc) sizes for one call.
  const int64_t max_pos = config.max_positions();
  const int64_t capacity = std::min<int64_t>(
      max_pos, static_cast<int64_t>(prompt_ids_.size()) +
                   std::clamp<int64_t>(options.max_new_tokens, 1, max_pos));
  ACCEL_ASSIGN_OR_RETURN(std::unique_ptr<model::KvDecoder> decoder,
                         config.architecture().decoder(&layout, params,
                                                       {.capacity = capacity, .bf16 = false}));
  return Generate(*decoder, config.vocab_size(), prompt_ids_, options,
                  [this](absl::Span<const int32_t> ids) { return codec_.Decode(ids); });
}

}  // namespace accel::generate
