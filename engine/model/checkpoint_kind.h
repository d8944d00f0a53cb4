// What a Hugging Face config.json says its checkpoint is, checked for every family by
// ModelConfigFromJson before the family's reader (docs/config.md §11):
//   *ForCausalLM, *LMHeadModel in `architectures`   trained (what this engine trains)
//   another task's head (*ForSequenceClassification, *ForTokenClassification,
//     *ForQuestionAnswering, *DoubleHeadsModel, ...)  InvalidArgument naming `architectures`
//   any other class (a custom causal class)          a note naming it: trained as a causal LM
//   `quantization_config` (GPTQ, AWQ, bitsandbytes)  InvalidArgument naming the key: we train
//                                                    the weights as stored, and a quantized
//                                                    checkpoint's are not the model's values
// The file may be a client's (config_json.h): a class is named only when it is an identifier.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "engine/base/env.h"
#include "nlohmann/json.hpp"

namespace accel::model {

// The refusals above as InvalidArgument "SOURCE: KEY: ..."; each note appended to `notes`.
[[nodiscard]] absl::Status CheckCheckpointKind(const nlohmann::json& config,
                                               std::string_view source,
                                               std::vector<std::string>* notes);

// The notes of the config.json at `path` (none when it cannot be read: its reader says why).
// Lower adds them to the job's warnings.
std::vector<std::string> CheckpointKindNotes(Env* env, const std::string& path);

}  // namespace accel::model
