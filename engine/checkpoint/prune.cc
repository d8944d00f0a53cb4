#include "engine/checkpoint/prune.h"

#include <algorithm>
#include <functional>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "engine/base/logging.h"
#include "engine/base/status_macros.h"
#include "engine/checkpoint/checkpoint_metadata.h"

namespace accel::checkpoint {

int64_t ParseStepName(const std::string& name, bool tmp) {
  absl::string_view s = name;
  if (!absl::ConsumePrefix(&s, "step_")) return -1;
  if (tmp != absl::ConsumeSuffix(&s, ".tmp")) return -1;
  int64_t step = -1;
  if (!absl::SimpleAtoi(s, &step) || step < 0 || absl::StrCat(step) != s) return -1;
  return step;
}

absl::StatusOr<StepMetadata> ReadStepMetadata(Env* env, const std::string& step_dir) {
  const std::string path = JoinPath(step_dir, kMetadataFileName);
  ACCEL_ASSIGN_OR_RETURN(std::string text, ReadFileToString(env, path));
  return StepMetadataFromJson(text, path);
}

absl::StatusOr<CheckpointOwner> StepOwner(Env* env, const std::string& step_dir) {
  ACCEL_ASSIGN_OR_RETURN(StepMetadata m, ReadStepMetadata(env, step_dir));
  return m.meta.owner;
}

absl::Status RemoveStepDir(Env* env, const std::string& dir, const std::string& name) {
  const std::string trash = JoinPath(dir, absl::StrCat(kTrashPrefix, name));
  if (env->FileExists(trash)) ACCEL_RETURN_IF_ERROR(env->DeleteRecursively(trash));
  ACCEL_RETURN_IF_ERROR(env->RenameFile(JoinPath(dir, name), trash));
  // The step's name is gone for good before any of its files is.
  ACCEL_RETURN_IF_ERROR(env->SyncDir(dir));
  return env->DeleteRecursively(trash);
}

void Prune(Env* env, const std::string& dir, int64_t step, int keep_last,
           const CheckpointOwner& owner, int keep_best) {
  absl::StatusOr<std::vector<std::string>> names = env->ListDir(dir);
  if (!names.ok()) {
    ACCEL_LOG(warn, "checkpoint: cannot list {} to prune: {}", dir, names.status().ToString());
    return;
  }
  std::vector<std::string> garbage;  // never loadable: deleted directly
  std::vector<int64_t> doomed, kept, foreign;
  std::vector<std::pair<double, int64_t>> evaluated;  // (eval loss, step) of own steps <= step
  for (const std::string& name : *names) {
    if (ParseStepName(name, /*tmp=*/true) >= 0 || absl::StartsWith(name, kTrashPrefix)) {
      garbage.push_back(name);
    }
    const int64_t n = ParseStepName(name, /*tmp=*/false);
    if (n < 0 || keep_last <= 0) continue;
    absl::StatusOr<StepMetadata> wrote = ReadStepMetadata(env, JoinPath(dir, name));
    if (!wrote.ok() || wrote->meta.owner != owner) {
      foreign.push_back(n);
      continue;
    }
    (n > step ? doomed : kept).push_back(n);
    if (n <= step && wrote->meta.eval_loss.has_value()) {
      evaluated.push_back({*wrote->meta.eval_loss, n});
    }
  }
  // The best: lowest loss first, the newer step first among equals.
  std::sort(evaluated.begin(), evaluated.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : a.second > b.second;
  });
  std::vector<int64_t> best;
  for (size_t i = 0; i < evaluated.size() && i < static_cast<size_t>(std::max(keep_best, 0)); ++i) {
    best.push_back(evaluated[i].second);
  }
  std::sort(kept.begin(), kept.end(), std::greater<>());
  for (size_t i = static_cast<size_t>(std::max(keep_last, 0)); i < kept.size(); ++i) {
    if (std::find(best.begin(), best.end(), kept[i]) == best.end()) doomed.push_back(kept[i]);
  }
  if (!foreign.empty()) {
    std::sort(foreign.begin(), foreign.end());
    ACCEL_LOG(info, "checkpoint: keep_last leaves steps {} of {} alone: not written by {}",
              absl::StrJoin(foreign, ", "), dir, DescribeOwner(owner));
  }
  if (garbage.empty() && doomed.empty()) return;
  for (const std::string& name : garbage) {
    absl::Status s = env->DeleteRecursively(JoinPath(dir, name));
    if (!s.ok()) ACCEL_LOG(warn, "checkpoint: cannot remove {}: {}", name, s.ToString());
  }
  for (const int64_t n : doomed) {
    const std::string name = absl::StrCat("step_", n);
    absl::Status s = RemoveStepDir(env, dir, name);
    if (!s.ok()) ACCEL_LOG(warn, "checkpoint: cannot prune {}: {}", name, s.ToString());
  }
  absl::Status s = env->SyncDir(dir);
  if (!s.ok()) ACCEL_LOG(warn, "checkpoint: cannot sync {} after pruning: {}", dir, s.ToString());
}

}  // namespace accel::checkpoint
