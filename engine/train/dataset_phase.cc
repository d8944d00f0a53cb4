#include "engine/train/dataset_phase.h"

#include <algorithm>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/base/logging.h"
#include "engine/base/status_macros.h"
#include "engine/config/dataset_lowering.h"
#include "engine/data/prepare.h"

namespace accel::train {
namespace {

bool Prepared(Env* env, const std::string& train_path) {
  return env->FileExists(train_path) && env->FileExists(JoinPath(DirName(train_path), "manifest.json"));
}

}  // namespace

absl::Status PrepareDatasetIfMissing(const config::TrainOptions& options, int rank, Env* env,
                                     absl::Duration wait) {
  if (!options.dataset.enabled() || Prepared(env, options.data)) return absl::OkStatus();
  if (rank != 0) {
    ACCEL_LOG(info, "rank {}: waiting for rank 0 to prepare {}", rank, options.data);
    const int64_t deadline = env->NowMicros() + absl::ToInt64Microseconds(wait);
    while (!Prepared(env, options.data)) {
      if (env->NowMicros() >= deadline) {
        return absl::DeadlineExceededError(absl::StrCat(
            "data: rank 0 did not prepare ", options.data, " within ", absl::FormatDuration(wait)));
      }
      env->SleepForMicros(100'000);
    }
    return absl::OkStatus();
  }
  const int threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  ACCEL_ASSIGN_OR_RETURN(data::PrepareOptions prepare,
                         config::PrepareOptionsOf(options.dataset, threads));
  ACCEL_LOG(info, "preparing data: {} ({}, {} threads) into {}", options.dataset.source,
            options.dataset.format, threads, DirName(options.data));
  int last_decile = -1;
  auto progress = [&](const data::PrepareProgress& p) {
    if (p.bytes_total <= 0) return;
    const int decile = static_cast<int>(10 * p.bytes_done / p.bytes_total);
    if (decile == last_decile) return;
    last_decile = decile;
    ACCEL_LOG(info, "preparing data: {}% ({} of {} bytes, {} documents)", 10 * decile,
              p.bytes_done, p.bytes_total, p.documents);
  };
  ACCEL_ASSIGN_OR_RETURN(data::PrepareResult done, data::PrepareDataset(env, prepare, progress));
  if (done.train_path != options.data) {
    return absl::FailedPreconditionError(absl::StrCat(
        "data: the sources of ", options.dataset.source, " changed since the job was submitted "
        "(they now prepare to ", done.train_path, ", the plan names ", options.data,
        "); submit the job again"));
  }
  ACCEL_LOG(info, "prepared data: {} documents, {} tokens{}", done.train_documents,
            done.train_tokens,
            done.skipped_records > 0 ? absl::StrCat(", ", done.skipped_records, " records skipped")
                                     : std::string());
  return absl::OkStatus();
}

}  // namespace accel::train
