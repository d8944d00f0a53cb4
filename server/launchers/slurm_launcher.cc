#include "server/launchers/slurm_launcher.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "engine/base/logging.h"

namespace accel::server {
namespace {

constexpr char kPlacementPrefix[] = "slurm job ";

// Writes `text` to `path` with `mode`, replacing it atomically.
absl::Status WriteFile(const std::string& path, const std::string& text, mode_t mode) {
  const std::string tmp = path + ".tmp";
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) {
    return absl::UnavailableError(absl::StrCat("cannot write ", tmp, ": ", strerror(errno)));
  }
  fchmod(fd, mode);
  const bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  if (!ok || rename(tmp.c_str(), path.c_str()) != 0) {
    return absl::UnavailableError(absl::StrCat("cannot write ", path, ": ", strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace

SlurmLauncher::SlurmLauncher(SlurmOptions options, Clock* clock, CommandRunner run)
    : options_(std::move(options)), clock_(clock), run_(run ? std::move(run) : RunCommand) {}

SlurmLauncher::~SlurmLauncher() {
  for (auto& [id, a] : attempts_) Slurm({"scancel", id});
}

absl::StatusOr<std::string> SlurmLauncher::FindConfig(const char* slurm_conf,
                                                     const std::string& default_path) {
  const bool from_env = slurm_conf != nullptr && *slurm_conf != '\0';
  const std::string path = from_env ? std::string(slurm_conf) : default_path;
  const std::string where =
      from_env ? absl::StrCat("SLURM_CONF=", path) : absl::StrCat("SLURM_CONF is unset and ", path);
  std::error_code ec;
  const std::filesystem::file_status st = std::filesystem::status(path, ec);
  if (std::filesystem::is_regular_file(st)) return path;
  return absl::FailedPreconditionError(absl::StrCat(
      "the slurm launcher (--launcher / --enable-launcher slurm) needs a Slurm config: ", where,
      std::filesystem::exists(st) ? " is not a regular file" : " does not exist",
      " (without one sbatch looks for a controller through DNS SRV records); set SLURM_CONF to "
      "the cluster's slurm.conf"));
}

std::string SlurmLauncher::PlacementOf(const std::string& slurm_job_id) {
  return absl::StrCat(kPlacementPrefix, slurm_job_id);
}

std::string SlurmLauncher::SlurmJobIdOf(const std::string& placement) {
  absl::string_view id(placement);
  return absl::ConsumePrefix(&id, kPlacementPrefix) ? std::string(id) : "";
}

bool SlurmLauncher::Slurm(const std::vector<std::string>& argv, std::string* out) {
  absl::StatusOr<CommandResult> r = run_(argv, options_.command_timeout);
  if (!r.ok()) {
    ACCEL_LOG(warn, "{}: {}", argv[0], std::string(r.status().message()));
    return false;
  }
  if (out != nullptr) *out = r->out;
  if (!r->ok()) {
    ACCEL_LOG(warn, "{} {} exited {}: {}", argv[0], argv.back(), r->exit_code,
              std::string(absl::StripAsciiWhitespace(r->err)));
    return false;
  }
  return true;
}

absl::StatusOr<std::string> SlurmLauncher::Launch(const GangLaunch& gang) {
  if (gang.worker_argv.empty() || gang.log_dir.empty()) {
    return absl::InvalidArgumentError("slurm launcher: no worker command or log dir");
  }
  std::error_code ec;
  std::filesystem::create_directories(gang.log_dir, ec);
  if (ec) {
    return absl::UnavailableError(
        absl::StrCat("cannot create ", gang.log_dir, " (the shared log dir): ", ec.message()));
  }
  if (absl::Status s = WriteFile(SlurmTokenPath(gang), gang.token + "\n", 0600); !s.ok()) return s;
  if (absl::Status s = WriteFile(SlurmScriptPath(gang), RenderSlurmBatch(gang, options_), 0700);
      !s.ok()) {
    return s;
  }
  absl::StatusOr<CommandResult> r =
      run_({"sbatch", "--parsable", SlurmScriptPath(gang)}, options_.command_timeout);
  if (!r.ok()) return r.status();
  if (!r->ok()) {
    return absl::UnavailableError(absl::StrCat(
        "sbatch refused the gang (exit ", r->exit_code,
        "): ", std::string(absl::StripAsciiWhitespace(r->err))));
  }
  absl::StatusOr<std::string> id = ParseSbatchJobId(r->out);
  if (!id.ok()) return id.status();
  Attempt a;
  a.job_id = gang.job_id;
  a.attempt = gang.attempt;
  a.slurm_id = *id;
  a.log_dir = gang.log_dir;
  a.ranks = gang.shape.nodes * gang.shape.ranks_per_node;
  a.status.state = "PENDING";
  for (int rank = 0; rank < a.ranks; ++rank) {
    a.logs.push_back(std::make_unique<LogTail>());
    a.logs.back()->Follow(RankLogPath(gang.log_dir, rank));
  }
  ACCEL_LOG(info, "{} attempt {}: submitted as Slurm job {} ({} nodes x {} ranks)", gang.job_id,
            gang.attempt, *id, gang.shape.nodes, gang.shape.ranks_per_node);
  attempts_.emplace(*id, std::move(a));
  return PlacementOf(*id);
}

SlurmLauncher::Attempt* SlurmLauncher::Find(const std::string& job_id, int attempt) {
  return const_cast<Attempt*>(std::as_const(*this).Find(job_id, attempt));
}

const SlurmLauncher::Attempt* SlurmLauncher::Find(const std::string& job_id, int attempt) const {
  for (const auto& [id, a] : attempts_) {
    if (a.job_id == job_id && a.attempt == attempt) return &a;
  }
  return nullptr;
}

void SlurmLauncher::Stop(const std::string& job_id, int attempt, absl::Duration grace) {
  Attempt* a = Find(job_id, attempt);
  if (a == nullptr || a->stopped) return;
  a->stopped = true;
  a->next_poll_us = 0;
  // Slurm's own grace (KillWait) applies between its SIGTERM and SIGKILL.
  Slurm({"scancel", a->slurm_id});
}

void SlurmLauncher::RequestCheckpoint(const std::string& job_id, int attempt) {
  Attempt* a = Find(job_id, attempt);
  if (a == nullptr || a->stopped) return;
  // To the tasks of the job's steps (the workers), not to the batch shell.
  static_assert(kWorkerCheckpointSignal == SIGUSR1, "scancel names the signal");
  Slurm({"scancel", "--signal=USR1", a->slurm_id});
}

void SlurmLauncher::Forget(const std::string& placement) {
  const std::string id = SlurmJobIdOf(placement);
  if (id.empty() || attempts_.count(id) != 0) return;
  ACCEL_LOG(info, "stopping Slurm job {}, left running by an earlier acceld", id);
  Slurm({"scancel", id});
}

bool SlurmLauncher::Pending(const std::string& job_id, int attempt) const {
  const Attempt* a = Find(job_id, attempt);
  return a != nullptr && a->status.pending();
}

int SlurmLauncher::live() const {
  int n = 0;
  for (const auto& [id, a] : attempts_) n += a.ranks;
  return n + static_cast<int>(deferred_.size());
}

PollResult SlurmLauncher::Poll() {
  PollResult out;
  out.exits.swap(deferred_);
  const int64_t now = clock_->NowMicros();
  for (auto it = attempts_.begin(); it != attempts_.end();) {
    Attempt& a = it->second;
    if (now >= a.next_poll_us) {
      a.next_poll_us = now + absl::ToInt64Microseconds(options_.poll_interval);
      std::string line;
      if (Slurm({"scontrol", "show", "job", "-o", a.slurm_id}, &line)) {
        absl::StatusOr<SlurmJobStatus> st = ParseScontrolJob(line);
        if (st.ok()) a.status = *st;
      } else if (a.status.pending() || a.status.state == "RUNNING") {
        // Forgotten by slurmctld (MinJobAge passed, or purged): it has ended, how is unknown.
        a.status.state = "UNKNOWN";
      }
    }
    const bool ended = a.status.ended();
    for (int rank = 0; rank < a.ranks; ++rank) {
      a.logs[rank]->Read(ended, [&](std::string text) {
        out.lines.push_back({a.job_id, a.attempt, rank, std::move(text)});
      });
    }
    if (!ended) {
      ++it;
      continue;
    }
    Ended(a, out);
    it = attempts_.erase(it);
  }
  return out;
}

void SlurmLauncher::Ended(Attempt& a, PollResult& out) {
  // srun's own output: a few lines; absent when the batch step never started.
  const std::string srun_output =
      ReadFileToString(Env::Default(), SlurmOutputPath(a.log_dir, a.slurm_id)).value_or("");
  const std::map<int, TaskEnd> ends = ParseSrunTaskEnds(srun_output);
  const bool completed = a.status.state == "COMPLETED";
  ACCEL_LOG(info, "{} attempt {}: Slurm job {} ended {} (exit {}:{})", a.job_id, a.attempt,
            a.slurm_id, a.status.state, a.status.exit_code, a.status.signal);
  std::vector<RankExit> failed, rest;
  for (int rank = 0; rank < a.ranks; ++rank) {
    RankExit e;
    e.job_id = a.job_id;
    e.attempt = a.attempt;
    e.rank = rank;
    e.log_tail = a.logs[rank]->Tail();
    if (auto it = ends.find(rank); it != ends.end()) {
      e.exit_code = it->second.exit_code;
      e.signal = it->second.signal;
    } else if (!completed && (a.stopped || !ends.empty())) {
      // Stopped with the job: by acceld, or by srun's --kill-on-bad-exit after another task.
      e.signal = SIGTERM;
    } else if (!completed) {
      // Slurm ended it on its own (the batch step could not start, a lost node, a time limit):
      // say so, and where to look.
      e.exit_code = 1;
      e.log_tail += absl::StrCat("Slurm ended job ", a.slurm_id, " ", a.status.state,
                                 a.status.reason.empty() || a.status.reason == "None"
                                     ? ""
                                     : absl::StrCat(" (", a.status.reason, ")"),
                                 " before its tasks reported; see ",
                                 SlurmOutputPath(a.log_dir, a.slurm_id), " and slurmd's log\n");
    }
    (e.signal == SIGTERM || e.ok() ? rest : failed).push_back(std::move(e));
  }
  // JobManager takes the first failure of one poll as the cause (signals first): the ranks
  // srun terminated because of it come one poll later, unless none failed on its own.
  for (RankExit& e : failed) out.exits.push_back(std::move(e));
  for (RankExit& e : rest) (failed.empty() ? out.exits : deferred_).push_back(std::move(e));
}

}  // namespace accel::server
