// The model and tokenizer generation runs on, from the places a user has them:
//   - a sharded checkpoint: DIR/step_N, or DIR for the step DIR/latest names; saved at any world
//     size (the step is read as one flat address space, checkpoint/step_reader.h); its own
//     model config is used, and a config also given must be the same model;
//   - Hugging Face files: weights (model.safetensors, model.safetensors.index.json) with a
//     config.json, or a directory holding both (`--model DIR`).
// The tokenizer: a tokenizer.json (or a directory holding one, with tokenizer_config.json). A
// byte-level model (vocabulary 256) needs none: its text is its bytes.
//
// Errors name the flag and the file: InvalidArgument for input that cannot be used (a
// checkpoint of another model than the config given, weights that are not the config's, a
// tokenizer with more tokens than the model's vocabulary, no tokenizer for a model that is not
// byte-level), NotFound for a missing file, DataLoss for a corrupt checkpoint.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/base/env.h"
#include "engine/model/param_specs.h"
#include "engine/text/tokenizer.h"

namespace accel::generate {

struct ModelSource {
  std::string checkpoint;    // DIR/step_N or DIR
  std::string weights;       // model.safetensors or model.safetensors.index.json
  std::string model_config;  // config.json (with `weights`; with `checkpoint`, a check)
  std::string model_dir;     // a directory holding config.json and the weights
};

struct LoadedModel {
  std::unique_ptr<model::ModelLayout> layout;
  std::vector<float> params;  // layout->num_params(), flat in layout order
  std::string origin;         // where it came from, for messages: "checkpoint DIR/step_8"
};

[[nodiscard]] absl::StatusOr<LoadedModel> LoadModel(Env* env, const ModelSource& source);

// How text becomes ids and back: the tokenizer's, or bytes for a byte-level model.
class TextCodec {
 public:
  // `tokenizer_path` "" for a byte-level model. Checks the tokenizer's vocabulary fits the
  // model's (`vocab`).
  [[nodiscard]] static absl::StatusOr<TextCodec> Open(Env* env, const std::string& tokenizer_path,
                                                      int64_t vocab);
  // add_special_tokens as Hugging Face's encode (a plain prompt: true; a rendered chat: false).
  [[nodiscard]] absl::StatusOr<std::vector<int32_t>> Encode(std::string_view text,
                                                            bool add_special_tokens) const;
  std::string Decode(absl::Span<const int32_t> ids) const;
  // The end-of-sequence ids generation stops at (the tokenizer's EOS; none for bytes).
  std::vector<int32_t> end_ids() const;
  // A token to start a text from: the tokenizer's BOS, else its EOS (GPT-2's <|endoftext|>);
  // none for bytes or a tokenizer with neither.
  std::optional<int32_t> start_id() const;
  // tokenizer_config.json beside the tokenizer ("" for bytes or when there is none).
  const std::string& tokenizer_config_path() const { return config_path_; }

 private:
  std::shared_ptr<const text::Tokenizer> tokenizer_;  // null: bytes
  std::string config_path_;
};

}  // namespace accel::generate
