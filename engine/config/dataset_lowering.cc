#include "engine/config/dataset_lowering.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/data/dataset_check.h"
#include "engine/data/records.h"

namespace accel::config {

absl::StatusOr<data::PrepareOptions> PrepareOptionsOf(const DatasetOptions& d, int threads) {
  data::PrepareOptions p;
  absl::StatusOr<data::DatasetFormat> format = data::ParseDatasetFormat(d.format);
  if (!format.ok()) return Annotate(format.status(), "data.format");
  p.format = *format;
  if (!d.source.empty()) p.sources.push_back({d.source, 1.0});
  for (const auto& [path, weight] : d.mix) p.sources.push_back({path, weight});
  p.tokenizer = d.tokenizer;
  p.text_field = d.text_field;
  if (!d.validation.empty()) p.validation_files = {d.validation};
  p.validation_fraction = d.validation_fraction;
  p.skip_invalid = d.skip_invalid;
  p.cache_dir = d.cache_dir;
  p.threads = threads;
  return p;
}

absl::Status LowerDataset(TrainOptions* o, const model::ModelConfig& model, Env* env) {
  DatasetOptions& d = o->dataset;
  if (!d.enabled()) return absl::OkStatus();
  if (d.format == "tokens") {
    return absl::InvalidArgumentError(
        "data.format: tokens is the default for token shards; leave data.format out for them");
  }
  if (d.source.empty()) d.source = o->data;
  if (d.tokenizer.empty()) {
    if (o->model_config.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "data.tokenizer: required with data.format ", d.format, " (model ", o->model,
          " is a preset, so there is no model folder holding a tokenizer.json)"));
    }
    d.tokenizer = JoinPath(DirName(o->model_config), "tokenizer.json");
    if (!env->FileExists(d.tokenizer)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "data.tokenizer: required with data.format ", d.format, ": no tokenizer.json beside "
          "model.config (", d.tokenizer, ")"));
    }
  }
  if (d.cache_dir.empty()) d.cache_dir = data::DefaultCacheDir();
  if (d.cache_dir.empty()) {
    return absl::InvalidArgumentError(
        "data.cache_dir: required (no ACCEL_DATA_CACHE, XDG_CACHE_HOME or HOME to default to)");
  }
  ACCEL_ASSIGN_OR_RETURN(data::PrepareOptions prepare, PrepareOptionsOf(d, 1));
  ACCEL_RETURN_IF_ERROR(data::CheckDataset(env, prepare, model.vocab_size()));
  ACCEL_ASSIGN_OR_RETURN(data::PreparedLocation where, data::LocatePrepared(env, prepare));
  o->data = where.train_path;
  if (o->eval.data.empty() && !where.validation_path.empty()) {
    o->eval.data = where.validation_path;
  }
  return absl::OkStatus();
}

}  // namespace accel::config
