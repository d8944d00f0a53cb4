#include "engine/checkpoint/inspect.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <tuple>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "engine/base/status_macros.h"
#include "engine/checkpoint/checkpoint_metadata.h"
#include "engine/checkpoint/sharded_checkpoint.h"
#include "engine/checkpoint/step_reader.h"
#include "nlohmann/json.hpp"

namespace accel::checkpoint {
namespace {

// Step number of "step_<N>" or "step_<N>.tmp"; -1 for other names.
int64_t StepOfName(const std::string& name, bool* tmp) {
  absl::string_view s = name;
  if (!absl::ConsumePrefix(&s, "step_")) return -1;
  *tmp = absl::ConsumeSuffix(&s, ".tmp");
  int64_t step = -1;
  if (!absl::SimpleAtoi(s, &step) || step < 0 || absl::StrCat(step) != s) return -1;
  return step;
}

StepReport InspectStep(Env* env, const std::string& path, const std::string& name, int64_t step,
                       bool tmp, bool verify) {
  StepReport r;
  r.name = name;
  r.path = path;
  r.step = step;
  absl::StatusOr<std::vector<std::string>> names = env->ListDir(path);
  if (names.ok()) {
    for (const std::string& f : *names) {
      const uint64_t size = env->GetFileSize(JoinPath(path, f)).value_or(0);
      r.files.emplace_back(f, size);
      r.bytes += size;
    }
  }
  if (tmp) {
    r.status = absl::FailedPreconditionError(
        absl::StrCat(path, ": an uncommitted save (no rename to ", name.substr(0, name.size() - 4),
                     " happened); the next save of a later step deletes it"));
    return r;
  }
  absl::StatusOr<std::unique_ptr<StepReader>> reader = StepReader::Open(env, path);
  if (!reader.ok()) {
    r.status = reader.status();
    return r;
  }
  const StepMetadata& m = (*reader)->metadata();
  r.complete = true;
  r.world_size = m.meta.world_size;
  r.strategy = m.meta.strategy;
  r.num_params = m.num_params;
  r.data_position = m.meta.data_position;
  if (m.meta.step != step && step >= 0) {
    r.status = absl::DataLossError(absl::StrCat(path, ": metadata says step ", m.meta.step));
    return r;
  }
  r.step = m.meta.step;
  if (!verify) return r;
  for (size_t rank = 0; rank < m.files.size() && r.status.ok(); ++rank) {
    r.status = (*reader)->VerifyFile(static_cast<int>(rank));
  }
  for (size_t i = 0; i < m.meta.model_files.size() && r.status.ok(); ++i) {
    r.status = VerifyModelFile(env, path, m.meta.model_files[i]);
  }
  r.verified = r.status.ok();
  return r;
}

std::string HumanBytes(uint64_t b) {
  if (b >= (uint64_t{1} << 30)) return absl::StrFormat("%.2f GiB", b / double(1 << 30));
  if (b >= (uint64_t{1} << 20)) return absl::StrFormat("%.2f MiB", b / double(1 << 20));
  if (b >= 1024) return absl::StrFormat("%.1f KiB", b / 1024.0);
  return absl::StrCat(b, " B");
}

}  // namespace

bool InspectReport::ok() const {
  if (!latest_status.ok() && !absl::IsNotFound(latest_status)) return false;
  for (const StepReport& s : steps) {
    if (!s.status.ok() && !absl::EndsWith(s.name, ".tmp")) return false;
  }
  return true;
}

absl::StatusOr<InspectReport> InspectCheckpoints(Env* env, const std::string& dir, bool verify) {
  InspectReport report;
  report.dir = dir;
  if (env->FileExists(JoinPath(dir, kMetadataFileName))) {  // a single step directory
    std::string base = dir;
    while (base.size() > 1 && base.back() == '/') base.pop_back();
    const std::string name = base.substr(base.rfind('/') + 1);
    bool tmp = false;
    const int64_t step = StepOfName(name, &tmp);
    report.latest_status = absl::NotFoundError("a single step directory has no latest pointer");
    report.steps.push_back(InspectStep(env, dir, name, step, /*tmp=*/false, verify));
    return report;
  }
  ACCEL_ASSIGN_OR_RETURN(std::vector<std::string> names, env->ListDir(dir));
  absl::StatusOr<std::string> latest = LatestStepDir(env, dir);
  report.latest_status = latest.status();
  if (latest.ok()) report.latest = latest->substr(latest->rfind('/') + 1);
  for (const std::string& name : names) {
    bool tmp = false;
    const int64_t step = StepOfName(name, &tmp);
    if (step < 0) continue;
    StepReport r = InspectStep(env, JoinPath(dir, name), name, step, tmp, verify);
    r.latest = !tmp && name == report.latest;
    report.steps.push_back(std::move(r));
  }
  std::sort(report.steps.begin(), report.steps.end(), [](const StepReport& a, const StepReport& b) {
    return std::tie(a.step, a.name) < std::tie(b.step, b.name);
  });
  return report;
}

std::string InspectReportToText(const InspectReport& report) {
  std::string out = absl::StrCat("checkpoints in ", report.dir, "\n");
  if (!report.latest.empty()) {
    absl::StrAppend(&out, "latest: ", report.latest, "\n");
  } else if (!absl::IsNotFound(report.latest_status)) {
    absl::StrAppend(&out, "latest: BROKEN: ", report.latest_status.message(), "\n");
  } else {
    absl::StrAppend(&out, "latest: (none)\n");
  }
  absl::StrAppend(&out, absl::StrFormat("%-16s %8s %6s %-14s %12s %12s  %s\n", "STEP", "", "WORLD",
                                        "STRATEGY", "PARAMS", "SIZE", "STATUS"));
  for (const StepReport& s : report.steps) {
    std::string status = s.status.ok() ? (s.verified ? "ok, checksums verified" : "ok")
                                       : std::string(s.status.message());
    absl::StrAppend(
        &out, absl::StrFormat(
                  "%-16s %8s %6s %-14s %12s %12s  %s\n", s.name, s.latest ? "(latest)" : "",
                  s.complete ? absl::StrCat(s.world_size) : "-", s.complete ? s.strategy : "-",
                  s.complete ? absl::StrCat(s.num_params) : "-", HumanBytes(s.bytes), status));
  }
  if (report.steps.empty()) absl::StrAppend(&out, "(no steps)\n");
  return out;
}

std::string InspectReportToJson(const InspectReport& report) {
  nlohmann::ordered_json root;
  root["dir"] = report.dir;
  root["latest"] = report.latest.empty() ? nlohmann::ordered_json(nullptr)
                                         : nlohmann::ordered_json(report.latest);
  if (!report.latest_status.ok() && !absl::IsNotFound(report.latest_status)) {
    root["latest_error"] = std::string(report.latest_status.message());
  }
  root["ok"] = report.ok();
  root["steps"] = nlohmann::ordered_json::array();
  for (const StepReport& s : report.steps) {
    nlohmann::ordered_json j;
    j["name"] = s.name;
    j["path"] = s.path;
    j["step"] = s.step;
    j["complete"] = s.complete;
    j["latest"] = s.latest;
    j["world_size"] = s.world_size;
    j["strategy"] = s.strategy;
    j["num_params"] = s.num_params;
    j["data_position"] = s.data_position;
    j["bytes"] = s.bytes;
    j["files"] = nlohmann::ordered_json::object();
    for (const auto& [name, size] : s.files) j["files"][name] = size;
    j["verified"] = s.verified;
    j["error"] = s.status.ok() ? nlohmann::ordered_json(nullptr)
                               : nlohmann::ordered_json(std::string(s.status.message()));
    if (!s.status.ok()) j["error_code"] = absl::StatusCodeToString(s.status.code());
    root["steps"].push_back(std::move(j));
  }
  return root.dump(2);
}

}  // namespace accel::checkpoint
