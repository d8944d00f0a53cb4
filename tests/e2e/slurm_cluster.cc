#include "tests/e2e/slurm_cluster.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <functional>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/ascii.h"
#include "absl/strings/strip.h"
#include "engine/base/env.h"
#include "engine/base/status_macros.h"

namespace accel::testing {
namespace {

constexpr char kHostsFile[] = "/etc/hosts";
constexpr char kHostsLock[] = "/run/accel-slurm-hosts.lock";
constexpr char kHostsMarker[] = "# accel-slurm-";  // + "<pid>-<counter>"
constexpr double kStartTimeoutS = 30;
constexpr double kStopTimeoutS = 15;

std::atomic<int> instances{0};

std::string ShortHostName() {
  char name[256] = {};
  ::gethostname(name, sizeof(name) - 1);
  std::string s = name;
  return s.substr(0, s.find('.'));
}

std::string Tail(const std::string& path, size_t bytes = 1500) {
  const std::string all = ReadAll(path);
  return all.size() <= bytes ? all : all.substr(all.size() - bytes);
}

// The daemons die with the test process even when it is killed (ctest's timeout): the parent
// death signal survives the exec of nsenter and of the daemon.
std::vector<std::string> DieWithTest(std::vector<std::string> argv) {
  argv.insert(argv.begin(), {"/usr/bin/setpriv", "--pdeathsig", "KILL", "--"});
  return argv;
}

// Rewrites /etc/hosts in place (it may be a bind mount, so no rename) under an exclusive lock,
// keeping the lines `keep` accepts and appending `add`.
void EditHosts(const std::function<bool(const std::string&)>& keep, const std::string& add) {
  const int lock = ::open(kHostsLock, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock >= 0) ::flock(lock, LOCK_EX);
  std::vector<std::string> lines;
  {
    std::ifstream in(kHostsFile);
    for (std::string line; std::getline(in, line);) {
      if (keep(line)) lines.push_back(line);
    }
  }
  std::ofstream out(kHostsFile, std::ios::trunc);
  for (const std::string& line : lines) out << line << "\n";
  out << add;
  out.close();
  if (lock >= 0) ::close(lock);
}

// Lines this helper added for a process that no longer exists (a test killed mid-run).
bool StaleHostsLine(const std::string& line) {
  const size_t at = line.find(kHostsMarker);
  if (at == std::string::npos) return false;
  const std::string rest = line.substr(at + sizeof(kHostsMarker) - 1);
  int pid = 0;
  if (!absl::SimpleAtoi(rest.substr(0, rest.find('-')), &pid) || pid <= 0) return false;
  return ::kill(pid, 0) != 0 && errno == ESRCH;
}

}  // namespace

std::string SlurmCluster::SkipReason() {
  if (::geteuid() != 0) return "not root: a Slurm cluster in network namespaces needs root";
  for (const char* bin : {"/usr/sbin/slurmctld", "/usr/sbin/slurmd", "/usr/sbin/munged",
                          "/usr/sbin/mungekey", "/usr/bin/munge", "/usr/bin/srun",
                          "/usr/bin/squeue", "/usr/bin/scancel", "/usr/bin/scontrol",
                          "/usr/bin/sinfo", "/usr/bin/setpriv"}) {
    if (::access(bin, X_OK) != 0) {
      return absl::StrCat(bin, " is missing (scripts/install-deps.sh installs slurm-wlm and munge)");
    }
  }
  return NetnsLab::SkipReason();
}

SlurmCluster::SlurmCluster(std::string base)
    : base_(std::move(base)),
      tag_(absl::StrCat(::getpid(), "-", instances.fetch_add(1))) {}

SlurmCluster::~SlurmCluster() { Down(); }

std::vector<std::string> SlurmCluster::env() const { return {"SLURM_CONF=" + conf_}; }

std::vector<std::string> SlurmCluster::WithEnv(const std::vector<std::string>& argv) const {
  std::vector<std::string> out = {"/usr/bin/env"};
  for (const std::string& e : env()) out.push_back(e);
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

ChildProcess SlurmCluster::StartClient(const std::vector<std::string>& argv,
                                       const std::string& name) const {
  return StartProcess(WithEnv(argv), base_ + "/log", name);
}

SlurmCluster::Result SlurmCluster::Client(const std::vector<std::string>& argv,
                                          double timeout_s) const {
  const ChildProcess c = StartClient(argv, absl::StrCat("client", client_count_++));
  Result r;
  r.status = WaitProcess(c, timeout_s);
  r.output = ReadAll(c.stdout_path) + ReadAll(c.stderr_path);
  ::unlink(c.stdout_path.c_str());
  ::unlink(c.stderr_path.c_str());
  return r;
}

absl::Status SlurmCluster::WaitFor(const std::string& what, double timeout_s,
                                   const std::function<bool()>& ready,
                                   const std::string& log) const {
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration<double>(timeout_s * TimeScale());
  while (!ready()) {
    if (std::chrono::steady_clock::now() > deadline) {
      return absl::DeadlineExceededError(absl::StrCat(what, ": not ready after ",
                                                      timeout_s * TimeScale(), " s; ", log,
                                                      ": ", Tail(log)));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return absl::OkStatus();
}

absl::Status SlurmCluster::WriteConfig(int cpus_per_node, int port) {
  const std::string b = base_;
  std::string text = absl::StrCat(
      "ClusterName=c", tag_.substr(0, tag_.find('-')), "\n",
      "SlurmctldHost=", ShortHostName(), "(", lab_->bridge_address(), ")\n",
      "SlurmctldPort=", port, "\n",
      "AuthType=auth/munge\nCredType=cred/munge\n",
      "AuthInfo=socket=", munge_socket_, "\n",
      "SlurmUser=root\n",
      "StateSaveLocation=", b, "/state\n",
      "SlurmdSpoolDir=", b, "/spool/%n\n",
      "SlurmdPidFile=", b, "/run/slurmd-%n.pid\n",
      "SlurmdLogFile=", b, "/log/slurmd-%n.log\n",
      "SlurmctldPidFile=", b, "/run/slurmctld.pid\n",
      "SlurmctldLogFile=", b, "/log/slurmctld.log\n",
      "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n",
      "SelectType=select/cons_tres\nSelectTypeParameters=CR_Core\n",
      "SchedulerParameters=batch_sched_delay=0\n",
      "SlurmdParameters=config_overrides\n",
      "ReturnToService=2\nMpiDefault=none\nMailProg=/bin/true\n",
      "JobAcctGatherType=jobacct_gather/none\nAccountingStorageType=accounting_storage/none\n",
      "KillWait=5\nSlurmdTimeout=20\n");
  for (int i = 0; i < nodes(); ++i) {
    absl::StrAppend(&text, "NodeName=", node_names_[i], " NodeAddr=", lab_->address(i),
                    " CPUs=", cpus_per_node, " Sockets=1 CoresPerSocket=", cpus_per_node,
                    " ThreadsPerCore=1 RealMemory=1000\n");
  }
  absl::StrAppend(&text, "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n");
  return WriteFileAtomic(Env::Default(), conf_, text);
}

absl::Status SlurmCluster::Up(int nodes, int cpus_per_node) {
  if (!daemons_.empty()) return absl::FailedPreconditionError("the cluster is up already");
  Env* env = Env::Default();
  conf_ = base_ + "/etc/slurm.conf";
  const std::string munge_dir = base_ + "/munge";
  munge_socket_ = munge_dir + "/munge.sock";
  const std::string node_prefix = absl::StrCat("s", absl::StrReplaceAll(tag_, {{"-", "x"}}), "n");
  node_names_.clear();
  for (int i = 1; i <= nodes; ++i) node_names_.push_back(absl::StrCat(node_prefix, i));
  for (const char* d : {"etc", "state", "log", "run", "munge"}) {
    ACCEL_RETURN_IF_ERROR(env->CreateDirs(absl::StrCat(base_, "/", d)));
  }
  for (const std::string& n : node_names_) {
    ACCEL_RETURN_IF_ERROR(env->CreateDirs(base_ + "/spool/" + n));
  }
  ::chmod(munge_dir.c_str(), 0755);  // munged: "execute permissions for all required"
  absl::Status s = [&]() -> absl::Status {
    // 1. munged with a private key and socket.
    const Result key = Client({"/usr/sbin/mungekey", "--create", "--force",
                               "--keyfile=" + munge_dir + "/munge.key"}, kStartTimeoutS);
    if (key.status != 0) return absl::InternalError("mungekey: " + key.output);
    daemons_.push_back(StartProcess(
        DieWithTest({"/usr/sbin/munged", "--foreground", "--key-file=" + munge_dir + "/munge.key",
                     "--socket=" + munge_socket_, "--pid-file=" + munge_dir + "/munged.pid",
                     "--seed-file=" + munge_dir + "/munged.seed",
                     "--log-file=" + munge_dir + "/munged.log"}),
        base_ + "/log", "munged"));
    ACCEL_RETURN_IF_ERROR(WaitFor("munged", kStartTimeoutS, [&] {
      return Client({"/usr/bin/munge", "-S", munge_socket_, "-n"}, 5).status == 0;
    }, munge_dir + "/munged.log"));
    // 2. the nodes' namespaces on a bridge.
    ACCEL_ASSIGN_OR_RETURN(lab_, NetnsLab::Create(nodes));
    const int port = FreePort();
    if (port <= 0) return absl::InternalError("no free port for slurmctld");
    ACCEL_RETURN_IF_ERROR(WriteConfig(cpus_per_node, port));
    // 3. slurmctld on the bridge address, fresh state (-c).
    daemons_.push_back(StartProcess(
        DieWithTest({"/usr/sbin/slurmctld", "-D", "-c", "-f", conf_}), base_ + "/log",
        "slurmctld"));
    ACCEL_RETURN_IF_ERROR(WaitFor("slurmctld", kStartTimeoutS, [&] {
      return absl::StrContains(Client({"scontrol", "ping"}, 5).output, "is UP");
    }, base_ + "/log/slurmctld.log"));
    // 4. one slurmd per namespace, named by -N (every namespace has the same hostname).
    for (int i = 0; i < nodes; ++i) {
      const ChildProcess d = lab_->Start(
          i, DieWithTest({"/usr/sbin/slurmd", "-D", "-f", conf_, "-N", node_names_[i]}),
          base_ + "/log", "slurmd-" + node_names_[i]);
      daemons_.push_back(d);
      slurmd_pids_.push_back(d.pid);
    }
    ACCEL_RETURN_IF_ERROR(WaitFor("slurmd", kStartTimeoutS, [&] {
      return absl::StripAsciiWhitespace(
                 Client({"sinfo", "-h", "-t", "idle", "-o", "%D"}, 5).output) ==
             std::to_string(nodes);
    }, base_ + "/log/slurmd-" + node_names_[0] + ".log"));
    AddHosts();
    return absl::OkStatus();
  }();
  if (!s.ok()) Down();
  return s;
}

void SlurmCluster::AddHosts() {
  std::string add;
  for (int i = 0; i < nodes(); ++i) {
    absl::StrAppend(&add, lab_->address(i), " ", node_names_[i], " ", kHostsMarker, tag_, "\n");
  }
  EditHosts([](const std::string& line) { return !StaleHostsLine(line); }, add);
  hosts_added_ = true;
}

void SlurmCluster::RemoveHosts() {
  if (!hosts_added_) return;
  const std::string mine = absl::StrCat(kHostsMarker, tag_);
  EditHosts([&](const std::string& line) { return !absl::EndsWith(line, mine); }, "");
  hosts_added_ = false;
}

std::vector<std::string> SlurmCluster::Jobs() const {
  if (conf_.empty()) return {};
  const Result r = Client({"squeue", "-h", "-o", "%i"}, 10);
  if (r.status != 0) return {};
  std::vector<std::string> ids;
  for (absl::string_view id : absl::StrSplit(r.output, '\n', absl::SkipWhitespace())) {
    ids.emplace_back(absl::StripAsciiWhitespace(id));
  }
  return ids;
}

std::vector<pid_t> SlurmCluster::TaskProcesses() const {
  std::vector<pid_t> out;
  if (!lab_) return out;
  for (int i = 0; i < lab_->nodes(); ++i) {
    for (pid_t p : lab_->ProcessesIn(i)) {
      if (std::find(slurmd_pids_.begin(), slurmd_pids_.end(), p) == slurmd_pids_.end()) {
        out.push_back(p);
      }
    }
  }
  return out;
}

void SlurmCluster::Down() {
  if (daemons_.empty() && !lab_ && !hosts_added_) return;
  // Jobs first, while slurmctld and the slurmds can still end them.
  if (!daemons_.empty()) {
    std::vector<std::string> jobs = Jobs();
    if (!jobs.empty()) {
      std::vector<std::string> argv = {"scancel", "--quiet", "--full"};
      argv.insert(argv.end(), jobs.begin(), jobs.end());
      (void)Client(argv, 10);
      const auto deadline = std::chrono::steady_clock::now() +
                            std::chrono::duration<double>(kStopTimeoutS * TimeScale());
      while (!Jobs().empty() && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
  }
  // Every daemon at once (each takes 1-2 s to stop), then a bounded wait (SIGKILL after it).
  for (const ChildProcess& d : daemons_) ::kill(d.pid, SIGTERM);
  for (const ChildProcess& d : daemons_) (void)WaitProcess(d, kStopTimeoutS);
  daemons_.clear();
  slurmd_pids_.clear();
  lab_.reset();  // kills what is left in the namespaces (slurmstepd, tasks), removes links
  RemoveHosts();
}

}  // namespace accel::testing
