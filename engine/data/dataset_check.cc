#include "engine/data/dataset_check.h"

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/data/record_encoder.h"
#include "engine/data/tokenizer_files.h"

namespace accel::data {

absl::Status CheckDataset(Env* env, const PrepareOptions& options, int64_t model_vocab_size,
                          int records_per_file) {
  ACCEL_ASSIGN_OR_RETURN(TokenizerFiles tok, LoadTokenizerFiles(env, options.tokenizer));
  const int64_t vocab = tok.tokenizer->vocab_size();
  if (model_vocab_size > 0 && vocab > model_vocab_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "data.tokenizer: its vocabulary (", vocab, " ids, ", options.tokenizer,
        ") does not fit the model's vocab_size (", model_vocab_size, ")"));
  }
  EncoderOptions eo{options.format, options.text_field, options.chat};
  if (!eo.chat && options.format == DatasetFormat::kMessages) {
    ACCEL_ASSIGN_OR_RETURN(eo.chat, LoadChatRenderer(env, tok.config_path));
  }
  ACCEL_ASSIGN_OR_RETURN(RecordEncoder encoder, RecordEncoder::Create(tok.tokenizer.get(), eo));
  std::vector<std::string> patterns;
  for (const DataSource& s : options.sources) patterns.push_back(s.path);
  patterns.insert(patterns.end(), options.validation_files.begin(), options.validation_files.end());
  for (const std::string& pattern : patterns) {
    ACCEL_ASSIGN_OR_RETURN(std::vector<std::string> files, ExpandSource(env, pattern));
    for (const std::string& path : files) {
      ACCEL_ASSIGN_OR_RETURN(std::string contents, ReadFileToString(env, path));
      const std::vector<Record> records = SplitRecords(options.format, contents);
      absl::Status first_error;
      int good = 0, checked = 0;
      for (const Record& r : records) {
        if (checked++ == records_per_file) break;
        absl::StatusOr<EncodedDocument> doc = encoder.Encode(r.text);
        if (doc.ok()) {
          ++good;
        } else if (first_error.ok()) {
          first_error = absl::Status(doc.status().code(), absl::StrCat(path, ":", r.line, ": ",
                                                                       doc.status().message()));
        }
      }
      if (!first_error.ok() && (!options.skip_invalid || good == 0)) return first_error;
    }
  }
  return absl::OkStatus();
}

}  // namespace accel::data
