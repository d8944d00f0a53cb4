#include "server/launchers/slurm_script.h"

#include <signal.h>

#include <cctype>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace accel::server {
namespace {

// POSIX shell single quoting: 'it'\''s'.
std::string Quote(const std::string& s) {
  std::string out = "'";
  for (char ch : s) {
    if (ch == '\'') {
      out += "'\\''";
    } else {
      out += ch;
    }
  }
  return out + "'";
}

std::string Setting(const GangLaunch& gang, const std::string& key, const std::string& fallback) {
  auto it = gang.settings.find(key);
  return it != gang.settings.end() ? it->second : fallback;
}

// The value after `key=` in scontrol's one-line output, up to the next space.
std::string Field(const std::string& line, const std::string& key) {
  size_t at = 0;
  while ((at = line.find(key + "=", at)) != std::string::npos) {
    if (at == 0 || line[at - 1] == ' ') {
      const size_t start = at + key.size() + 1;
      return line.substr(start, line.find(' ', start) - start);
    }
    at += key.size();
  }
  return "";
}

// srun's signal names for tasks ("Killed", "Terminated", "Segmentation fault", ...).
int SignalNamed(const std::string& what) {
  for (int sig = 1; sig < 32; ++sig) {
    const char* name = strsignal(sig);
    if (name != nullptr && what == name) return sig;
  }
  return 0;
}

}  // namespace

std::string SlurmScriptPath(const GangLaunch& gang) { return gang.log_dir + "/job.sbatch"; }
std::string SlurmTokenPath(const GangLaunch& gang) { return gang.log_dir + "/worker.token"; }
std::string SlurmOutputPattern(const GangLaunch& gang) { return gang.log_dir + "/slurm-%j.out"; }
std::string SlurmOutputPath(const std::string& log_dir, const std::string& slurm_job_id) {
  return absl::StrCat(log_dir, "/slurm-", slurm_job_id, ".out");
}
std::string RankLogPath(const std::string& log_dir, int rank) {
  return absl::StrCat(log_dir, "/rank-", rank, ".log");
}

std::string RenderSlurmBatch(const GangLaunch& gang, const SlurmOptions& defaults) {
  std::string s = "#!/bin/sh\n";
  absl::StrAppend(&s, "#SBATCH --job-name=accel-", gang.job_id, "-a", gang.attempt, "\n");
  absl::StrAppend(&s, "#SBATCH --nodes=", gang.shape.nodes, "\n");
  absl::StrAppend(&s, "#SBATCH --ntasks-per-node=", gang.shape.ranks_per_node, "\n");
  if (gang.shape.device == "cuda") absl::StrAppend(&s, "#SBATCH --gpus-per-task=1\n");
  absl::StrAppend(&s, "#SBATCH --output=", SlurmOutputPattern(gang), "\n");
  absl::StrAppend(&s, "#SBATCH --chdir=", gang.log_dir, "\n");
  // acceld restarts a failed attempt itself, from the latest checkpoint, within max_restarts.
  absl::StrAppend(&s, "#SBATCH --no-requeue\n");
  for (const auto& [key, fallback] :
       {std::pair<std::string, std::string>{"partition", defaults.partition},
        {"account", defaults.account},
        {"time", defaults.time},
        {"constraint", defaults.constraint}}) {
    const std::string v = Setting(gang, key, fallback);
    if (!v.empty()) absl::StrAppend(&s, "#SBATCH --", key, "=", v, "\n");
  }
  absl::StrAppend(&s, "# acceld: job ", gang.job_id, " attempt ", gang.attempt, ", ",
                  gang.shape.nodes, " nodes x ", gang.shape.ranks_per_node,
                  " ranks. Each rank takes RANK, LOCAL_RANK and WORLD_SIZE from Slurm's\n"
                  "# variables and reaches acceld at $ACCEL_COORDINATOR with the attempt's token.\n");
  for (const std::string& kv : gang.shared_env) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos) continue;
    absl::StrAppend(&s, "export ", kv.substr(0, eq), "=", Quote(kv.substr(eq + 1)), "\n");
  }
  absl::StrAppend(&s, "ACCEL_WORKER_TOKEN=$(cat ", Quote(SlurmTokenPath(gang)),
                  ") || exit 1\nexport ACCEL_WORKER_TOKEN\n");
  absl::StrAppend(&s, "exec srun --kill-on-bad-exit=1 --export=ALL --output=",
                  Quote(gang.log_dir + "/rank-%t.log"));
  for (const std::string& a : gang.worker_argv) absl::StrAppend(&s, " ", Quote(a));
  absl::StrAppend(&s, "\n");
  return s;
}

bool SlurmJobStatus::ended() const {
  return !state.empty() && !pending() && state != "RUNNING" && state != "COMPLETING" &&
         state != "SUSPENDED" && state != "STOPPED" && state != "RESIZING" &&
         state != "SIGNALING" && state != "STAGE_OUT";
}

bool SlurmJobStatus::pending() const {
  return state == "PENDING" || state == "CONFIGURING" || state == "REQUEUED" ||
         state == "REQUEUE_HOLD" || state == "REQUEUE_FED";
}

absl::StatusOr<SlurmJobStatus> ParseScontrolJob(const std::string& line) {
  SlurmJobStatus st;
  st.state = Field(line, "JobState");
  if (st.state.empty()) {
    return absl::DataLossError(absl::StrCat("scontrol printed no JobState: ", line.substr(0, 200)));
  }
  st.reason = Field(line, "Reason");
  const std::string exit = Field(line, "ExitCode");
  std::vector<std::string> parts = absl::StrSplit(exit, ':');
  if (parts.size() == 2) {
    (void)absl::SimpleAtoi(parts[0], &st.exit_code);
    (void)absl::SimpleAtoi(parts[1], &st.signal);
  }
  return st;
}

std::map<int, TaskEnd> ParseSrunTaskEnds(const std::string& output) {
  std::map<int, TaskEnd> ends;
  for (absl::string_view raw : absl::StrSplit(output, '\n')) {
    std::string line(raw);
    size_t at = line.find(": task ");
    size_t skip = 7;
    if (at == std::string::npos) {
      at = line.find(": tasks ");
      skip = 8;
    }
    if (at == std::string::npos) continue;
    const size_t colon = line.find(": ", at + skip);
    if (colon == std::string::npos) continue;
    const std::string ranks = line.substr(at + skip, colon - at - skip);
    const std::string what = line.substr(colon + 2);
    TaskEnd end;
    int code = 0;
    if (absl::StartsWith(what, "Exited with exit code ") &&
        absl::SimpleAtoi(what.substr(22), &code)) {
      end.exit_code = code;
    } else if (int sig = SignalNamed(what); sig != 0) {
      end.signal = sig;
    } else {
      continue;  // another message about tasks
    }
    for (absl::string_view part : absl::StrSplit(ranks, ',')) {
      std::vector<std::string> range = absl::StrSplit(part, '-');
      int lo = 0, hi = 0;
      if (!absl::SimpleAtoi(range[0], &lo)) continue;
      hi = lo;
      if (range.size() == 2 && !absl::SimpleAtoi(range[1], &hi)) continue;
      for (int r = lo; r <= hi && r - lo < 65536; ++r) ends[r] = end;
    }
  }
  return ends;
}

absl::StatusOr<std::string> ParseSbatchJobId(const std::string& out) {
  std::string id = std::string(absl::StripAsciiWhitespace(out));
  id = id.substr(0, id.find(';'));
  uint64_t n = 0;
  if (id.empty() || !absl::SimpleAtoi(id, &n)) {
    return absl::DataLossError(absl::StrCat("sbatch answered '", out.substr(0, 200),
                                            "', not a job id"));
  }
  return id;
}

}  // namespace accel::server
