#include "job/job_paths.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/base/env.h"
#include "engine/base/status_macros.h"
#include "engine/checkpoint/hf_model_file.h"
#include "engine/data/prepare.h"
#include "engine/model/param_specs.h"

namespace accel::job {

absl::Status CheckJobPaths(const accel::v1::JobSpec& spec, const FileAccess& access) {
  std::vector<std::pair<const char*, std::string>> paths = {
      {"data.path", spec.data().path()},
      {"data.tokenizer", spec.data().tokenizer()},
      {"data.validation", spec.data().validation()},
      {"data.cache_dir", spec.data().cache_dir()},
      {"model.config", spec.model().config()},
      {"model.init_weights", spec.model().init_weights()},
      {"checkpoint.dir", spec.checkpoint().dir()}};
  for (const auto& m : spec.data().mix()) paths.push_back({"data.mix", m.path()});
  // The configs travel as texts (job::LowerJobSpec opens no config path): their paths are only
  // names. A job_file's configs were checked when ParseJobFile read them.
  for (const auto& [key, path] : paths) {
    if (path.empty()) continue;
    if (path[0] != '/') {
      return absl::InvalidArgumentError(absl::StrCat(
          key,
          ": must be an absolute path (acceld opens it, from its own working directory), "
          "got \"",
          path, "\""));
    }
    ACCEL_RETURN_IF_ERROR(access.Check(key, path));
  }
  // A dataset source may be a glob: the glob's folder was checked above; each file it matches
  // could be a symlink out of the roots, so each is checked too.
  if (!access.roots.empty()) {
    for (const auto& [key, path] : paths) {
      const bool source = key == std::string("data.path") || key == std::string("data.mix") ||
                          key == std::string("data.validation");
      if (!source || path.find_first_of("*?[") == std::string::npos) continue;
      absl::StatusOr<std::vector<std::string>> files = data::ExpandSource(Env::Default(), path);
      if (!files.ok()) continue;  // the dataset check names a glob that matches nothing
      for (const std::string& f : *files) ACCEL_RETURN_IF_ERROR(access.Check(key, f));
    }
  }
  // The index and the shards it names are opened too; each one a symlink could take outside.
  if (!access.roots.empty() && !spec.model().init_weights().empty()) {
    // The index is checked before it is read for the shards' names.
    absl::StatusOr<std::string> resolved =
        checkpoint::ResolveHfWeightsPath(Env::Default(), spec.model().init_weights());
    if (!resolved.ok()) return absl::OkStatus();  // ValidateJobSpec names what is wrong
    ACCEL_RETURN_IF_ERROR(access.Check("model.init_weights", *resolved));
    absl::StatusOr<std::vector<std::string>> files =
        checkpoint::HfWeightsFiles(Env::Default(), *resolved);
    if (files.ok()) {  // else ValidateJobSpec names what is wrong with them
      for (const std::string& f : *files) {
        ACCEL_RETURN_IF_ERROR(access.Check("model.init_weights", f));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status CheckWeightsFit(const config::LoweredJob& job, Env* env) {
  if (job.options.init_weights.empty()) return absl::OkStatus();
  ACCEL_ASSIGN_OR_RETURN(model::ModelLayout layout, model::ModelLayout::Create(job.model));
  absl::StatusOr<std::unique_ptr<checkpoint::HfModelFile>> weights =
      checkpoint::HfModelFile::Open(env, job.options.init_weights, &layout);
  if (!weights.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("model.init_weights: ", weights.status().message()));
  }
  return absl::OkStatus();
}

}  // namespace accel::job
