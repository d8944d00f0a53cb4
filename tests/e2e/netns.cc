#include "tests/e2e/netns.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/base/status_macros.h"

namespace accel::testing {
namespace {

constexpr double kCommandTimeoutS = 20;
constexpr char kLockPath[] = "/run/accel-netns.lock";
constexpr char kSubnetPrefix[] = "10.201.";

std::string FindTool(const std::string& name) {
  for (const char* dir : {"/usr/sbin", "/sbin", "/usr/bin", "/bin"}) {
    const std::string path = absl::StrCat(dir, "/", name);
    if (::access(path.c_str(), X_OK) == 0) return path;
  }
  return "";
}

std::string Base36(uint64_t v) {
  std::string out;
  do {
    out.insert(out.begin(), "0123456789abcdefghijklmnopqrstuvwxyz"[v % 36]);
    v /= 36;
  } while (v > 0);
  return out;
}

// Runs argv (argv[0] a tool name found by FindTool) with stdout and stderr in one pipe; the
// output on exit status 0, else Internal naming the command, its status and its output. Killed
// after kCommandTimeoutS · TimeScale().
absl::StatusOr<std::string> Run(std::vector<std::string> argv) {
  const std::string what = absl::StrJoin(argv, " ");
  argv[0] = FindTool(argv[0]);
  if (argv[0].empty()) return absl::NotFoundError(absl::StrCat(what, ": tool not found"));
  // Built before fork: the child of a threaded process may only call async-signal-safe functions.
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    return absl::InternalError("pipe: " + std::string(strerror(errno)));
  }
  const pid_t pid = ::fork();
  if (pid == 0) {
    // dup2 clears FD_CLOEXEC on the copies, so only the pipe's write end reaches the tool.
    ::dup2(fds[1], 1);
    ::dup2(fds[1], 2);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  std::string output;
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration<double>(kCommandTimeoutS * TimeScale());
  bool timed_out = false;
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    char buf[4096];
    const ssize_t n = ::read(fds[0], buf, sizeof(buf));
    if (n <= 0) break;  // every writer closed: the command has exited (or closed its output)
    output.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  if (timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (timed_out) {
    return absl::DeadlineExceededError(
        absl::StrCat(what, ": no exit within ", kCommandTimeoutS * TimeScale(), " s"));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return absl::InternalError(absl::StrCat(what, ": exit status ", status, ": ", output));
  }
  return output;
}

// Holds /run/accel-netns.lock exclusively (other labs wait; bounded) while a lab picks its
// subnet, so two labs created at once cannot take the same one.
class LabLock {
 public:
  LabLock() {
    fd_ = ::open(kLockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::duration<double>(60 * TimeScale());
    while (fd_ >= 0 && ::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        ::close(fd_);
        fd_ = -1;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  ~LabLock() {
    if (fd_ >= 0) ::close(fd_);  // releases the lock
  }
  bool held() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

bool Alive(pid_t pid) { return ::kill(pid, 0) == 0 || errno != ESRCH; }

// Removes the bridges, veths and namespaces of labs whose process has gone (killed by a
// timeout before its destructor ran). Best effort: a failure leaves them for the next try.
void ReapStale() {
  std::vector<std::string> veths, bridges;
  absl::StatusOr<std::string> links = Run({"ip", "-o", "link", "show"});
  if (links.ok()) {
    static const std::regex kName(
        R"(^\d+: (ax([0-9a-z]{1,5})_[0-9a-z]{1,2}(br|v[0-9a-z]{1,2}))[@:])");
    std::istringstream in(*links);
    for (std::string line; std::getline(in, line);) {
      std::smatch m;
      if (!std::regex_search(line, m, kName)) continue;
      if (Alive(static_cast<pid_t>(std::strtoll(m[2].str().c_str(), nullptr, 36)))) continue;
      (m[3].str() == "br" ? bridges : veths).push_back(m[1].str());
    }
  }
  for (const std::string& v : veths) (void)Run({"ip", "link", "del", v});
  if (DIR* dir = ::opendir("/run/netns")) {
    static const std::regex kNetns(R"(^accel-(\d+)-\d+-n\d+$)");
    std::vector<std::string> stale;
    while (dirent* e = ::readdir(dir)) {
      std::cmatch m;
      if (std::regex_match(e->d_name, m, kNetns) &&
          !Alive(static_cast<pid_t>(std::atoll(m[1].str().c_str())))) {
        stale.push_back(e->d_name);
      }
    }
    ::closedir(dir);
    for (const std::string& n : stale) (void)Run({"ip", "netns", "del", n});
  }
  for (const std::string& b : bridges) (void)Run({"ip", "link", "del", b});
}

// The third octet of the first 10.201.K.0/24 (K in 1..254, starting at `start`) that no
// interface of the root namespace has an address in.
absl::StatusOr<int> FreeSubnet(int start) {
  ACCEL_ASSIGN_OR_RETURN(const std::string addrs, Run({"ip", "-o", "-4", "addr", "show"}));
  std::set<int> used;
  static const std::regex kAddr(R"(inet 10\.201\.(\d+)\.)");
  for (std::sregex_iterator it(addrs.begin(), addrs.end(), kAddr), end; it != end; ++it) {
    used.insert(std::atoi((*it)[1].str().c_str()));
  }
  for (int k = 0; k < 254; ++k) {
    const int octet = 1 + (start + k) % 254;
    if (!used.count(octet)) return octet;
  }
  return absl::ResourceExhaustedError("no free /24 left in 10.201.0.0/16 for a netns lab");
}

}  // namespace

std::string NetnsLab::SkipReason() {
  if (::geteuid() != 0) return "needs root to create network namespaces";
  for (const char* tool : {"ip", "tc", "nsenter"}) {
    if (FindTool(tool).empty()) return absl::StrCat("`", tool, "` is not installed");
  }
  return "";
}

bool NetnsLab::NetemAvailable() {
  static const bool available = [] {
    const std::string a = absl::StrCat("ax", Base36(::getpid()), "_qa"),
                      b = absl::StrCat("ax", Base36(::getpid()), "_qb");
    if (!Run({"ip", "link", "add", a, "type", "veth", "peer", "name", b}).ok()) return false;
    const bool ok = Run({"tc", "qdisc", "add", "dev", a, "root", "netem", "delay", "1ms"}).ok();
    (void)Run({"ip", "link", "del", a});
    return ok;
  }();
  return available;
}

absl::StatusOr<std::unique_ptr<NetnsLab>> NetnsLab::Create(int nodes, const LinkShape& shape) {
  if (nodes < 1 || nodes > 64) {
    return absl::InvalidArgumentError(absl::StrCat("NetnsLab: ", nodes, " nodes (1..64)"));
  }
  if (const std::string why = SkipReason(); !why.empty()) {
    return absl::FailedPreconditionError("NetnsLab: " + why);
  }
  static std::atomic<int> counter{0};
  const int instance = counter++;
  std::unique_ptr<NetnsLab> lab(new NetnsLab());
  lab->tag_ = absl::StrCat("ax", Base36(::getpid()), "_", Base36(instance % 1296));
  lab->bridge_ = lab->tag_ + "br";
  for (int i = 0; i < nodes; ++i) {
    lab->nodes_.push_back(Node{absl::StrCat("accel-", ::getpid(), "-", instance, "-n", i),
                               absl::StrCat(lab->tag_, "v", Base36(i)), ""});
  }
  lab->netns_made_.assign(nodes, false);
  lab->veth_made_.assign(nodes, false);
  absl::Status built = lab->Build(shape);
  if (!built.ok()) return built;  // the destructor removes what was made
  return lab;
}

absl::Status NetnsLab::Build(const LinkShape& shape) {
  {
    LabLock lock;
    if (!lock.held()) {
      return absl::DeadlineExceededError(absl::StrCat("NetnsLab: ", kLockPath, " stayed locked"));
    }
    ReapStale();
    ACCEL_ASSIGN_OR_RETURN(const int octet,
                           FreeSubnet(static_cast<int>(::getpid()) * 7 + 13 * (nodes_.size())));
    const std::string net = absl::StrCat(kSubnetPrefix, octet, ".");
    bridge_address_ = net + "1";
    for (size_t i = 0; i < nodes_.size(); ++i) nodes_[i].address = absl::StrCat(net, 11 + i);
    ACCEL_RETURN_IF_ERROR(Run({"ip", "link", "add", bridge_, "type", "bridge"}).status());
    bridge_made_ = true;
    // Once the bridge holds the address, FreeSubnet in any other lab sees the /24 as taken.
    ACCEL_RETURN_IF_ERROR(
        Run({"ip", "addr", "add", bridge_address_ + "/24", "dev", bridge_}).status());
  }
  ACCEL_RETURN_IF_ERROR(Run({"ip", "link", "set", bridge_, "up"}).status());
  const bool netem = NetemAvailable();
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const Node& n = nodes_[i];
    ACCEL_RETURN_IF_ERROR(Run({"ip", "netns", "add", n.netns}).status());
    netns_made_[i] = true;
    ACCEL_RETURN_IF_ERROR(
        Run({"ip", "link", "add", n.veth, "type", "veth", "peer", "name", "eth0", "netns", n.netns})
            .status());
    veth_made_[i] = true;
    ACCEL_RETURN_IF_ERROR(Run({"ip", "link", "set", n.veth, "master", bridge_, "up"}).status());
    ACCEL_RETURN_IF_ERROR(
        Run({"ip", "-n", n.netns, "addr", "add", n.address + "/24", "dev", "eth0"}).status());
    ACCEL_RETURN_IF_ERROR(Run({"ip", "-n", n.netns, "link", "set", "eth0", "up"}).status());
    ACCEL_RETURN_IF_ERROR(Run({"ip", "-n", n.netns, "link", "set", "lo", "up"}).status());
    // Egress (inside the node) and ingress (the bridge's port towards the node).
    std::vector<std::string> egress = {"tc", "-n", n.netns, "qdisc", "add", "dev", "eth0", "root"};
    std::vector<std::string> ingress = {"tc", "qdisc", "add", "dev", n.veth, "root"};
    std::vector<std::string> out_args, in_args;
    if (netem && (!shape.rate.empty() || !shape.delay.empty())) {
      out_args = {"netem", "limit", "100000"};
      if (!shape.rate.empty()) out_args.insert(out_args.end(), {"rate", shape.rate});
      if (!shape.delay.empty()) out_args.insert(out_args.end(), {"delay", shape.delay});
      if (!shape.rate.empty()) in_args = {"netem", "limit", "100000", "rate", shape.rate};
    } else if (!shape.rate.empty()) {
      // tbf's bucket: 256 KiB holds a few full GSO segments and 2 ms at 1 Gbit/s; the queue
      // may hold 100 ms before dropping, so TCP sees the rate, not losses.
      out_args = in_args = {"tbf", "rate", shape.rate, "burst", "256kb", "latency", "100ms"};
    }
    if (!out_args.empty()) {
      egress.insert(egress.end(), out_args.begin(), out_args.end());
      ACCEL_RETURN_IF_ERROR(Run(egress).status());
    }
    if (!in_args.empty()) {
      ingress.insert(ingress.end(), in_args.begin(), in_args.end());
      ACCEL_RETURN_IF_ERROR(Run(ingress).status());
    }
    if (i == 0) {
      applied_ = out_args.empty() ? "unshaped" : absl::StrJoin(out_args, " ");
      if (!netem && !shape.delay.empty()) {
        absl::StrAppend(&applied_, "; no delay ", shape.delay, " (kernel has no sch_netem)");
      }
    }
  }
  return absl::OkStatus();
}

std::vector<std::string> NetnsLab::Wrap(int i, const std::vector<std::string>& argv) const {
  std::vector<std::string> out = {FindTool("nsenter"), "--net=" + netns_path(i), "--"};
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

ChildProcess NetnsLab::Start(int i, const std::vector<std::string>& argv, const std::string& dir,
                             const std::string& name) const {
  return StartProcess(Wrap(i, argv), dir, name);
}

std::vector<pid_t> NetnsLab::ProcessesIn(int i) const {
  std::vector<pid_t> pids;
  struct stat ns {};
  if (::stat(netns_path(i).c_str(), &ns) != 0) return pids;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return pids;
  while (dirent* e = ::readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (*end != '\0' || pid <= 0) continue;
    struct stat st {};
    // A zombie has no namespaces left: the stat fails and it is not counted.
    if (::stat(absl::StrCat("/proc/", pid, "/ns/net").c_str(), &st) == 0 &&
        st.st_ino == ns.st_ino && st.st_dev == ns.st_dev) {
      pids.push_back(static_cast<pid_t>(pid));
    }
  }
  ::closedir(proc);
  return pids;
}

NetnsLab::~NetnsLab() {
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (!netns_made_[i]) continue;
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::duration<double>(10 * TimeScale());
    for (std::vector<pid_t> left = ProcessesIn(static_cast<int>(i)); !left.empty();
         left = ProcessesIn(static_cast<int>(i))) {
      for (pid_t pid : left) ::kill(pid, SIGKILL);
      if (std::chrono::steady_clock::now() > deadline) break;
      // A killed process leaves the namespace when it becomes a zombie; the test's own
      // WaitProcess (or its exit) reaps it.
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (veth_made_[i]) (void)Run({"ip", "link", "del", nodes_[i].veth});
  }
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (netns_made_[i]) (void)Run({"ip", "netns", "del", nodes_[i].netns});
  }
  if (bridge_made_) (void)Run({"ip", "link", "del", bridge_});
}

}  // namespace accel::testing
