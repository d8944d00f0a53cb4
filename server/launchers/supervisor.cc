#include "server/launchers/supervisor.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "engine/base/logging.h"
#include "server/launchers/command.h"

namespace accel::server {

Supervisor::Supervisor(Clock* clock) : clock_(clock) {}

Supervisor::~Supervisor() {
  for (auto& [pid, p] : procs_) KillAndReap(*p);
}

void Supervisor::KillAndReap(Proc& p) {
  kill(-p.pid, SIGKILL);
  kill(p.pid, SIGKILL);
  int status;
  while (waitpid(p.pid, &status, 0) < 0 && errno == EINTR) {
  }
}

absl::StatusOr<std::string> Supervisor::Launch(const GangLaunch& gang) {
  std::vector<pid_t> started;
  auto fail = [&](absl::Status s) {
    for (pid_t pid : started) {
      KillAndReap(*procs_[pid]);
      procs_.erase(pid);
    }
    return s;
  };
  for (const RankLaunch& r : gang.ranks) {
    if (r.argv.empty()) return fail(absl::InvalidArgumentError("empty worker command line"));
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(r.log_path).parent_path(), ec);
    int write_fd = open(r.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (write_fd < 0) {
      return fail(absl::UnavailableError(
          absl::StrCat("cannot open worker log ", r.log_path, ": ", strerror(errno))));
    }
    auto proc = std::make_unique<Proc>();
    proc->log.Follow(r.log_path);  // before the child writes: every line of this attempt
    // Everything the child needs is built before fork: it may not allocate afterwards.
    std::vector<char*> argv, envp;
    for (const std::string& a : r.argv) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    for (const std::string& e : r.env) envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
    const pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
      close(write_fd);
      return fail(absl::UnavailableError(absl::StrCat("fork: ", strerror(errno))));
    }
    if (pid == 0) ExecChild(parent, write_fd, write_fd, argv.data(), envp.data());
    setpgid(pid, pid);  // also in the parent, so a Stop right away reaches the group
    close(write_fd);
    proc->job_id = gang.job_id;
    proc->attempt = gang.attempt;
    proc->rank = r.rank;
    proc->pid = pid;
    procs_[pid] = std::move(proc);
    started.push_back(pid);
    ACCEL_LOG(info, "started {} attempt {} rank {}: pid {}", gang.job_id, gang.attempt, r.rank,
              pid);
  }
  return std::string();  // local ranks have no cluster name
}

void Supervisor::Stop(const std::string& job_id, int attempt, absl::Duration grace) {
  const int64_t deadline = clock_->NowMicros() + absl::ToInt64Microseconds(grace);
  for (auto& [pid, p] : procs_) {
    if (p->job_id != job_id || p->attempt != attempt || p->kill_at_us >= 0) continue;
    if (grace <= absl::ZeroDuration()) {
      kill(-pid, SIGKILL);
      p->kill_at_us = 0;
    } else {
      kill(-pid, SIGTERM);
      p->kill_at_us = deadline;
    }
  }
}

void Supervisor::RequestCheckpoint(const std::string& job_id, int attempt) {
  for (auto& [pid, p] : procs_) {
    if (p->job_id != job_id || p->attempt != attempt || p->kill_at_us >= 0) continue;
    // The worker alone: anything it started would die of SIGUSR1's default action.
    kill(pid, kWorkerCheckpointSignal);
  }
}

PollResult Supervisor::Poll() {
  PollResult out;
  const int64_t now = clock_->NowMicros();
  for (auto it = procs_.begin(); it != procs_.end();) {
    Proc& p = *it->second;
    int status = 0;
    pid_t r = waitpid(p.pid, &status, WNOHANG);
    const bool exited = r == p.pid || (r < 0 && errno == ECHILD);
    p.log.Read(exited, [&](std::string line) {
      out.lines.push_back({p.job_id, p.attempt, p.rank, std::move(line)});
    });
    if (!exited) {
      if (p.kill_at_us >= 0 && now >= p.kill_at_us) {
        kill(-p.pid, SIGKILL);
        p.kill_at_us = INT64_MAX;  // sent; wait for the exit
      }
      ++it;
      continue;
    }
    // Whatever the rank left in its process group goes too.
    kill(-p.pid, SIGKILL);
    RankExit e;
    e.job_id = p.job_id;
    e.attempt = p.attempt;
    e.rank = p.rank;
    if (r == p.pid && WIFSIGNALED(status)) {
      e.signal = WTERMSIG(status);
    } else if (r == p.pid && WIFEXITED(status)) {
      e.exit_code = WEXITSTATUS(status);
    } else {
      e.exit_code = -1;  // reaped by someone else: unknown
    }
    e.log_tail = p.log.Tail();
    ACCEL_LOG(info, "{} attempt {} rank {} (pid {}) {}", p.job_id, p.attempt, p.rank, p.pid,
              e.Describe());
    out.exits.push_back(std::move(e));
    it = procs_.erase(it);
  }
  return out;
}

std::vector<pid_t> Supervisor::Pids(const std::string& job_id) const {
  std::vector<pid_t> out;
  for (const auto& [pid, p] : procs_) {
    if (p->job_id == job_id) out.push_back(pid);
  }
  return out;
}

}  // namespace accel::server
