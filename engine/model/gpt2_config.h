// GPT-2 model shape: presets and Hugging Face config.json files.
//
// Presets: gpt2-tiny (tests), gpt2-mini (the default job on the bundled text; both byte-level,
// vocab 256), gpt2 (124M), gpt2-medium, gpt2-large, gpt2-xl (vocab 50257, 1024 positions).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/base/env.h"
#include "engine/model/model_shape.h"

namespace accel::model {

struct Architecture;  // registry.h

struct Gpt2Config {
  std::string name = "custom";
  int64_t n_layer = 0;
  int64_t n_head = 0;
  int64_t n_embd = 0;
  int64_t vocab_size = 0;
  int64_t n_positions = 0;

  int64_t head_size() const { return n_embd / n_head; }
  // InvalidArgument naming the field: every size > 0 and n_embd divisible by n_head.
  [[nodiscard]] absl::Status Validate() const;
  // Parameter count (tied lm_head counted once).
  int64_t NumParams() const;
  // Training FLOPs per token: 6·N for the matmuls plus 6·L·C·T for attention (PaLM's estimate
  // with causal attention counted in full), at sequence length T.
  double TrainFlopsPerToken(int64_t T) const;
  // The shape in the registry's terms (head_dim 0 while n_head is 0).
  ModelShape Shape() const;
  // The GPT-2 entry of the architecture registry (gpt2_family.cc).
  static const Architecture& Family();
};

std::vector<std::string> Gpt2PresetNames();
// InvalidArgument listing the known presets when the name is unknown.
[[nodiscard]] absl::StatusOr<Gpt2Config> Gpt2Preset(std::string_view name);

// Parses a Hugging Face GPT-2 config.json (n_layer, n_head, n_embd, vocab_size, n_positions;
// the older n_ctx is accepted for n_positions). `source` names the file in errors.
[[nodiscard]] absl::StatusOr<Gpt2Config> Gpt2ConfigFromJson(std::string_view json_text,
                                                            std::string_view source);
[[nodiscard]] absl::StatusOr<Gpt2Config> LoadGpt2Config(Env* env, const std::string& path);
// A config.json Hugging Face's GPT2LMHeadModel.from_pretrained accepts.
std::string Gpt2ConfigToJson(const Gpt2Config& config);

}  // namespace accel::model
