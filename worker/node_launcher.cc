#include "worker/node_launcher.h"

#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <map>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "worker/daemon.h"

namespace accel::worker {

absl::StatusOr<std::vector<LaunchVars>> NodeRankVars(const LaunchVars& vars, int nproc,
                                                     const std::optional<MultiNodeKeys>& config) {
  if (nproc < 1) {
    return absl::InvalidArgumentError(absl::StrCat("--nproc-per-node ", nproc, " is below 1"));
  }
  if (auto it = vars.find("RANK"); it != vars.end() && !it->second.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--nproc-per-node: RANK=", it->second,
        " is set, so this process is one rank already (its launcher started the ranks)"));
  }
  // The node's own place: as its rank 0 would see it.
  LaunchVars node = vars;
  node["LOCAL_RANK"] = "0";
  ACCEL_ASSIGN_OR_RETURN(LaunchEnv e, ResolveLaunchEnv(node, config));
  if (e.source == "slurm" && e.local_world_size != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--nproc-per-node: Slurm runs ", e.local_world_size,
        " tasks on this node; run one task per node (--ntasks-per-node=1)"));
  }
  if ((e.source == "kubernetes" || e.source == "accelerate config") &&
      e.local_world_size != nproc) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--nproc-per-node ", nproc, " but ",
        e.source == "kubernetes" ? "ACCEL_RANKS_PER_NODE" : "num_processes / num_machines",
        " is ", e.local_world_size));
  }
  std::vector<LaunchVars> ranks;
  for (int i = 0; i < nproc; ++i) {
    LaunchVars r = {{"LOCAL_RANK", std::to_string(i)},
                    {"RANK", std::to_string(e.node_rank * nproc + i)},
                    {"WORLD_SIZE", std::to_string(e.num_nodes * nproc)},
                    {"LOCAL_WORLD_SIZE", std::to_string(nproc)},
                    {"GROUP_RANK", std::to_string(e.node_rank)},
                    {"MASTER_PORT", std::to_string(e.master_port)}};
    if (!e.master_addr.empty()) r["MASTER_ADDR"] = e.master_addr;
    ranks.push_back(std::move(r));
  }
  return ranks;
}

std::vector<std::string> RankArgv(const std::vector<std::string>& argv) {
  std::vector<std::string> out;
  for (size_t i = 0; i < argv.size(); ++i) {
    if (argv[i] == "--nproc-per-node") {
      ++i;  // and its value
      continue;
    }
    if (absl::StartsWith(argv[i], "--nproc-per-node=")) continue;
    out.push_back(argv[i]);
  }
  return out;
}

int RunNodeLauncher(const std::vector<std::string>& argv, const std::vector<LaunchVars>& ranks,
                    absl::Duration grace) {
  // Signals are taken synchronously (sigtimedwait) so forwarding never races a fork or a reap;
  // each rank gets the original mask back before its exec.
  sigset_t set, old;
  sigemptyset(&set);
  for (int s : {SIGTERM, SIGINT, SIGUSR1, SIGCHLD}) sigaddset(&set, s);
  sigprocmask(SIG_BLOCK, &set, &old);
  const std::vector<std::string> rank_argv = RankArgv(argv);
  std::map<pid_t, int> live;  // pid -> rank index
  for (size_t i = 0; i < ranks.size(); ++i) {
    const pid_t pid = fork();
    if (pid == 0) {
      sigprocmask(SIG_SETMASK, &old, nullptr);
      for (const auto& [k, v] : ranks[i]) setenv(k.c_str(), v.c_str(), 1);
      std::vector<char*> args;
      for (const std::string& a : rank_argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      execv("/proc/self/exe", args.data());
      std::fprintf(stderr, "accel-worker: cannot start local rank %zu: exec failed\n", i);
      _exit(127);
    }
    if (pid < 0) {
      std::fprintf(stderr, "accel-worker: fork failed for local rank %zu\n", i);
      break;
    }
    live[pid] = static_cast<int>(i);
  }
  int first_failure = live.size() == ranks.size() ? -1 : 1;
  if (first_failure > 0) {
    for (const auto& [pid, rank] : live) kill(pid, SIGTERM);
  }
  bool checkpointed = false;
  absl::Time kill_at = first_failure > 0 ? absl::Now() + grace : absl::InfiniteFuture();
  bool killed = false;
  while (!live.empty()) {
    const timespec poll = {0, 100'000'000};
    const int sig = sigtimedwait(&set, nullptr, &poll);
    if (sig == SIGTERM || sig == SIGINT || sig == SIGUSR1) {
      for (const auto& [pid, rank] : live) kill(pid, sig);
    }
    int status = 0;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
      auto it = live.find(pid);
      if (it == live.end()) continue;
      const int local = it->second;
      live.erase(it);
      const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      if (code == kExitCheckpointed) {
        checkpointed = true;
      } else if (code != 0 && first_failure < 0) {
        first_failure = code;
        std::fprintf(stderr,
                     "accel-worker: local rank %d exited with code %d; stopping the other %zu\n",
                     local, code, live.size());
        for (const auto& [other, r] : live) kill(other, SIGTERM);
        kill_at = absl::Now() + grace;
      }
    }
    if (!killed && absl::Now() > kill_at) {
      for (const auto& [other, r] : live) kill(other, SIGKILL);
      killed = true;
    }
  }
  sigprocmask(SIG_SETMASK, &old, nullptr);
  if (first_failure > 0) return first_failure;
  return checkpointed ? kExitCheckpointed : 0;
}

}  // namespace accel::worker
