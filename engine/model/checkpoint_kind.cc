// What a config.json says the checkpoint is: a causal LM, another task's head, quantized.
#include "engine/model/checkpoint_kind.h"

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/model/config_json.h"

namespace accel::model {
namespace {

// The heads of Hugging Face's task classes that are not a causal LM, with what they are.
struct Head {
  std::string_view suffix;
  std::string_view what;
};
constexpr Head kOtherHeads[] = {
    {"ForSequenceClassification", "a sequence-classification (reward model) head"},
    {"ForTokenClassification", "a token-classification head"},
    {"ForQuestionAnswering", "a question-answering head"},
    {"ForMultipleChoice", "a multiple-choice head"},
    {"ForMaskedLM", "a masked-LM head"},
    {"ForConditionalGeneration", "an encoder-decoder or multimodal head"},
    {"ForImageClassification", "an image-classification head"},
    {"DoubleHeadsModel", "a second (multiple-choice) head"},
    {"RewardModel", "a reward head"},
};

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// A class name is named in a note only when it looks like one (an identifier), since the file may
// be a client's (config_json.h); anything else is described by its kind.
std::string ClassShown(std::string_view cls) {
  bool identifier = !cls.empty() && cls.size() <= 100;
  for (char ch : cls) {
    identifier = identifier && ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                                (ch >= '0' && ch <= '9') || ch == '_');
  }
  return identifier ? std::string(cls) : "a class";
}

}  // namespace

absl::Status CheckCheckpointKind(const nlohmann::json& j, std::string_view source,
                                 std::vector<std::string>* notes) {
  const std::string src(source);
  if (j.contains("quantization_config") && !j["quantization_config"].is_null()) {
    return absl::InvalidArgumentError(absl::StrCat(
        src, ": quantization_config: a quantized checkpoint (GPTQ, AWQ, bitsandbytes, ...) is "
             "not supported: this engine trains the weights as stored, and a quantized "
             "checkpoint's are not the model's values; use the unquantized model"));
  }
  if (!j.contains("architectures") || !j["architectures"].is_array()) return absl::OkStatus();
  for (const nlohmann::json& c : j["architectures"]) {
    if (!c.is_string()) continue;
    const std::string cls = c.get<std::string>();
    if (EndsWith(cls, "ForCausalLM") || EndsWith(cls, "LMHeadModel")) continue;
    for (const Head& head : kOtherHeads) {
      if (EndsWith(cls, head.suffix)) {
        return absl::InvalidArgumentError(absl::StrCat(
            src, ": architectures: ", ClassShown(cls), " has ", std::string(head.what),
            ", not a causal language model's; this engine trains *ForCausalLM / *LMHeadModel "
            "models (use the base model's config.json)"));
      }
    }
    notes->push_back(absl::StrCat(
        src, ": architectures: ", ClassShown(cls),
        " is not a class this engine knows (*ForCausalLM, *LMHeadModel); ignored: trained as ",
        "a causal LM of its model_type, without the class's own heads, if any"));
  }
  return absl::OkStatus();
}

std::vector<std::string> CheckpointKindNotes(Env* env, const std::string& path) {
  std::vector<std::string> notes;
  absl::StatusOr<std::string> text = ReadFileToString(env, path);
  if (!text.ok()) return notes;
  absl::StatusOr<nlohmann::json> j = ParseConfigJson(*text, path);
  if (j.ok()) (void)CheckCheckpointKind(*j, path, &notes);
  return notes;
}

}  // namespace accel::model
