#include "engine/data/record_encoder.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/text/utf8.h"

namespace accel::data {
namespace {

using Json = nlohmann::json;

absl::Status Invalid(std::string_view what) {
  return absl::InvalidArgumentError(std::string(what));
}

// The byte offset of the first ill-formed UTF-8 sequence of `text`.
size_t FirstInvalidByte(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    const size_t n = text::ValidSequenceLength(text, i);
    if (n == 0) return i;
    i += n;
  }
  return i;
}

std::string TypeName(const Json& j) { return j.type_name(); }

absl::Status CheckMessages(const Json& messages, const char* field) {
  if (!messages.is_array()) {
    return Invalid(absl::StrCat("\"", field, "\" must be a list of messages, not ",
                                TypeName(messages)));
  }
  if (messages.empty()) return Invalid(absl::StrCat("\"", field, "\" is an empty list"));
  for (size_t i = 0; i < messages.size(); ++i) {
    const Json& m = messages[i];
    if (!m.is_object()) {
      return Invalid(absl::StrCat("\"", field, "\"[", i, "] must be an object, not ",
                                  TypeName(m)));
    }
    auto role = m.find("role");
    if (role == m.end()) return Invalid(absl::StrCat("\"", field, "\"[", i, "] has no \"role\""));
    if (!role->is_string()) {
      return Invalid(absl::StrCat("\"", field, "\"[", i, "].role must be a string, not ",
                                  TypeName(*role)));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<RecordEncoder> RecordEncoder::Create(const text::Tokenizer* tokenizer,
                                                    EncoderOptions options) {
  if (options.format == DatasetFormat::kTokens) {
    return Invalid("data.format tokens: token shards are read as they are, not encoded");
  }
  std::optional<int32_t> eos = tokenizer->eos_id();
  if (!eos) eos = tokenizer->TokenToId("<|endoftext|>");
  if (!eos) {
    return Invalid(
        "tokenizer has no EOS token (set eos_token in tokenizer_config.json beside it); every "
        "document ends with one");
  }
  return RecordEncoder(tokenizer, std::move(options), *eos);
}

absl::StatusOr<std::string> RecordEncoder::Render(const Json& messages,
                                                  bool add_generation_prompt) const {
  if (!options_.chat) {
    return Invalid("rendering messages needs a chat template, and none is loaded");
  }
  auto rendered = options_.chat(messages, add_generation_prompt);
  if (!rendered.ok()) {
    return Invalid(absl::StrCat("chat template: ", rendered.status().message()));
  }
  return rendered;
}

void RecordEncoder::AppendEos(EncodedDocument* doc, bool eos_counts) const {
  if (!doc->ids.empty() && doc->ids.back() == eos_) {
    if (!doc->mask.empty() && eos_counts) doc->mask.back() = 1;
    return;
  }
  doc->ids.push_back(eos_);
  if (FormatHasMask(options_.format)) doc->mask.push_back(eos_counts ? 1 : 0);
}

absl::StatusOr<EncodedDocument> RecordEncoder::EncodeText(std::string_view text) const {
  EncodedDocument doc;
  ACCEL_ASSIGN_OR_RETURN(doc.ids, tokenizer_->Encode(text, /*add_special_tokens=*/true));
  AppendEos(&doc, true);
  return doc;
}

absl::StatusOr<EncodedDocument> RecordEncoder::EncodePromptCompletion(const Json& record) const {
  auto prompt = record.find("prompt");
  auto completion = record.find("completion");
  if (prompt == record.end()) return Invalid("missing field \"prompt\"");
  if (completion == record.end()) return Invalid("missing field \"completion\"");
  EncodedDocument doc;
  size_t masked = 0;
  if (prompt->is_string() && completion->is_string()) {
    const std::string& p = prompt->get_ref<const std::string&>();
    const std::string& c = completion->get_ref<const std::string&>();
    ACCEL_ASSIGN_OR_RETURN(doc.ids, tokenizer_->Encode(p + c, /*add_special_tokens=*/true));
    ACCEL_ASSIGN_OR_RETURN(std::vector<int32_t> prompt_ids, tokenizer_->Encode(p, true));
    masked = prompt_ids.size();
  } else if (prompt->is_array() && completion->is_array()) {
    ACCEL_RETURN_IF_ERROR(CheckMessages(*prompt, "prompt"));
    ACCEL_RETURN_IF_ERROR(CheckMessages(*completion, "completion"));
    Json all = *prompt;
    all.insert(all.end(), completion->begin(), completion->end());
    ACCEL_ASSIGN_OR_RETURN(std::string p, Render(*prompt, /*add_generation_prompt=*/true));
    ACCEL_ASSIGN_OR_RETURN(std::string f, Render(all, /*add_generation_prompt=*/false));
    ACCEL_ASSIGN_OR_RETURN(doc.ids, tokenizer_->Encode(f, /*add_special_tokens=*/false));
    ACCEL_ASSIGN_OR_RETURN(std::vector<int32_t> prompt_ids, tokenizer_->Encode(p, false));
    masked = prompt_ids.size();
  } else {
    return Invalid(absl::StrCat("\"prompt\" and \"completion\" must both be strings or both "
                                "message lists, not ",
                                TypeName(*prompt), " and ", TypeName(*completion)));
  }
  masked = std::min(masked, doc.ids.size());
  doc.mask.assign(doc.ids.size(), 1);
  std::fill(doc.mask.begin(), doc.mask.begin() + static_cast<std::ptrdiff_t>(masked), 0);
  AppendEos(&doc, true);
  return doc;
}

absl::StatusOr<EncodedDocument> RecordEncoder::EncodeMessages(const Json& messages) const {
  ACCEL_RETURN_IF_ERROR(CheckMessages(messages, "messages"));
  ACCEL_ASSIGN_OR_RETURN(const std::string whole, Render(messages, false));
  EncodedDocument doc;
  ACCEL_ASSIGN_OR_RETURN(doc.ids, tokenizer_->Encode(whole, /*add_special_tokens=*/false));
  doc.mask.assign(doc.ids.size(), 0);
  // The number of ids of the rendering's first `bytes` bytes, where a prefix of `whole` is
  // required: a template that renders a turn differently once later turns follow cannot mark it.
  auto ids_before = [&](const std::string& prefix, size_t turn) -> absl::StatusOr<size_t> {
    if (whole.compare(0, prefix.size(), prefix) != 0) {
      return Invalid(absl::StrCat("chat template: the rendering up to message ", turn,
                                  " is not a prefix of the whole conversation's, so the "
                                  "assistant turn cannot be marked"));
    }
    ACCEL_ASSIGN_OR_RETURN(std::vector<int32_t> ids, tokenizer_->Encode(prefix, false));
    return std::min(ids.size(), doc.ids.size());
  };
  for (size_t k = 0; k < messages.size(); ++k) {
    if (messages[k]["role"] != "assistant") continue;
    const Json before(messages.begin(), messages.begin() + static_cast<std::ptrdiff_t>(k));
    const Json through(messages.begin(), messages.begin() + static_cast<std::ptrdiff_t>(k + 1));
    size_t begin = 0;
    if (k > 0) {
      ACCEL_ASSIGN_OR_RETURN(std::string a, Render(before, /*add_generation_prompt=*/true));
      ACCEL_ASSIGN_OR_RETURN(begin, ids_before(a, k));
    }
    ACCEL_ASSIGN_OR_RETURN(std::string b, Render(through, false));
    ACCEL_ASSIGN_OR_RETURN(size_t end, ids_before(b, k));
    for (size_t i = begin; i < end; ++i) doc.mask[i] = 1;
  }
  AppendEos(&doc, !doc.mask.empty() && doc.mask.back() == 1);
  return doc;
}

absl::StatusOr<EncodedDocument> RecordEncoder::Encode(std::string_view record) const {
  if (!text::IsValidUtf8(record)) {
    return Invalid(absl::StrCat("not valid UTF-8 (byte ", FirstInvalidByte(record) + 1,
                                " of the record)"));
  }
  if (options_.format == DatasetFormat::kText) return EncodeText(record);
  const Json j = Json::parse(record, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Invalid("malformed JSON");
  if (!j.is_object()) return Invalid(absl::StrCat("expected a JSON object, not ", TypeName(j)));
  try {
    switch (options_.format) {
      case DatasetFormat::kJsonl: {
        auto field = j.find(options_.text_field);
        if (field == j.end()) {
          return Invalid(absl::StrCat("missing field \"", options_.text_field,
                                      "\" (data.text_field)"));
        }
        if (!field->is_string()) {
          return Invalid(absl::StrCat("field \"", options_.text_field, "\" must be a string, not ",
                                      TypeName(*field)));
        }
        return EncodeText(field->get_ref<const std::string&>());
      }
      case DatasetFormat::kPromptCompletion:
        return EncodePromptCompletion(j);
      case DatasetFormat::kMessages: {
        auto messages = j.find("messages");
        if (messages == j.end()) return Invalid("missing field \"messages\"");
        return EncodeMessages(*messages);
      }
      default:
        return absl::InternalError("RecordEncoder: unexpected format");
    }
  } catch (const Json::exception& e) {
    return Invalid(absl::StrCat("malformed record: ", e.what()));
  }
}

}  // namespace accel::data
