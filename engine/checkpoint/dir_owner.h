// Who a checkpoint directory belongs to. A directory belongs to one job: the first save there
// records the job in DIR/owner.json (written atomically), every later save checks it, and a
// save for any other job is refused before a byte of it is written. Every step's metadata.json
// names the owner that wrote it, and pruning (keep_last) deletes only the steps of the job that
// saves, so one job never destroys another's checkpoints. Format: docs/checkpoint_format.md,
// "Owner file".
//
// The identity is (job, daemon): an acceld job is ("job-7", "acceld:<state id>") — the state
// id is acceld's, kept in its state database, so it survives acceld restarts and distinguishes
// two acceld's job-7; a standalone run is ("standalone", "standalone:<random run id>"). Both
// empty is the anonymous owner of library use and tests: equal only to itself.
// Thread-compatible.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/base/env.h"

namespace accel::checkpoint {

inline constexpr char kOwnerFileName[] = "owner.json";
inline constexpr char kOwnerFormatName[] = "accel-checkpoint-owner";
inline constexpr int kOwnerFormatVersion = 1;

struct CheckpointOwner {
  std::string job;     // "job-7", "standalone"; empty: anonymous
  std::string daemon;  // "acceld:<state id>", "standalone:<run id>"; empty: anonymous

  bool anonymous() const { return job.empty() && daemon.empty(); }
  bool operator==(const CheckpointOwner&) const = default;
};

// `dir` lexically normalised without a trailing slash ("/a/b/../c/" -> "/a/c"), to compare
// two jobs' checkpoint.dir (symbolic links are not followed).
std::string NormalDirName(std::string_view dir);

// "job job-7 (acceld:1f2e...)", or "an anonymous writer".
std::string DescribeOwner(const CheckpointOwner& owner);

// The owner file's bytes (JSON with format, version and a CRC-32C) and back. DataLoss naming
// `path` for anything else.
std::string OwnerToJson(const CheckpointOwner& owner);
[[nodiscard]] absl::StatusOr<CheckpointOwner> OwnerFromJson(std::string_view text,
                                                           const std::string& path);

// DIR's owner; nullopt when DIR or DIR/owner.json does not exist (a directory nobody saved to
// yet, or one written before owner files existed). DataLoss for a corrupt owner file.
[[nodiscard]] absl::StatusOr<std::optional<CheckpointOwner>> ReadOwner(Env* env,
                                                                      const std::string& dir);

// OK when DIR has no owner yet or `owner` is it; FailedPrecondition naming both otherwise (one
// line: "checkpoint.dir D belongs to job job-3 (...); this is job job-7 (...): ..."). Writes
// nothing.
[[nodiscard]] absl::Status CheckOwner(Env* env, const std::string& dir,
                                      const CheckpointOwner& owner);

// CheckOwner, and when DIR has no owner yet, creates DIR and records `owner` in it (a temporary
// name unique to the owner, fsync, rename, directory fsync), then reads it back: of two writers
// racing for a new directory, the one whose rename lost is refused here; the commit checks
// again before a step becomes visible.
[[nodiscard]] absl::Status ClaimDir(Env* env, const std::string& dir,
                                    const CheckpointOwner& owner);

}  // namespace accel::checkpoint
