// The GPT-2 and Llama-family KvDecoders (kv_decoder.h), which their registry entries hand out
// as Architecture::decoder.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "engine/model/kv_decoder.h"
#include "engine/model/param_specs.h"

namespace accel::model {

// layout: a GPT-2 config's; params: layout->num_params() floats. Both outlive the decoder.
[[nodiscard]] absl::StatusOr<std::unique_ptr<KvDecoder>> MakeGpt2Decoder(
    const ModelLayout* layout, const float* params, const DecoderOptions& options);
// layout: a Llama-family config's.
[[nodiscard]] absl::StatusOr<std::unique_ptr<KvDecoder>> MakeLlamaDecoder(
    const ModelLayout* layout, const float* params, const DecoderOptions& options);

}  // namespace accel::model
