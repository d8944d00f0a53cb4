#include "tests/e2e/standalone_gang.h"

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>

#include "absl/strings/str_cat.h"
#include "tests/e2e/process.h"

namespace accel::testing {
namespace {

// A loopback port the kernel just handed out and released: free unless something races for it.
int FreeLoopbackPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int port = -1;
  socklen_t len = sizeof(addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

std::string Tail(const std::string& text, size_t n = 2000) {
  return text.size() <= n ? text : text.substr(text.size() - n);
}

}  // namespace

absl::StatusOr<GangOutcome> RunStandaloneGang(const GangRun& run) {
  // A fresh namespace has every port free; loopback is shared with the rest of the machine.
  const int port = run.lab != nullptr ? 29500 : FreeLoopbackPort();
  if (port <= 0) return absl::InternalError("no free loopback port");
  const int per_node = run.lab != nullptr ? run.ranks_per_node : run.world;
  if (run.lab != nullptr && (per_node < 1 || run.world > per_node * run.lab->nodes())) {
    return absl::InvalidArgumentError(
        absl::StrCat(run.world, " ranks do not fit ", run.lab->nodes(), " nodes of ", per_node));
  }
  GangOutcome out;
  out.metrics_path = absl::StrCat(run.dir, "/", run.tag, ".jsonl");
  std::vector<ChildProcess> ranks;
  for (int r = 0; r < run.world; ++r) {
    std::vector<std::string> argv = {
        "/usr/bin/env",
        absl::StrCat("RANK=", r),
        absl::StrCat("LOCAL_RANK=", r % per_node),
        absl::StrCat("WORLD_SIZE=", run.world),
        absl::StrCat("LOCAL_WORLD_SIZE=", per_node),
        absl::StrCat("GROUP_RANK=", r / per_node),
        "MASTER_ADDR=" + (run.lab != nullptr ? run.lab->address(0) : std::string("127.0.0.1")),
        absl::StrCat("MASTER_PORT=", port),
        run.worker,
        "--standalone"};
    argv.insert(argv.end(), run.flags.begin(), run.flags.end());
    argv.insert(argv.end(), {"--metrics-out", out.metrics_path});
    const std::string name = absl::StrCat(run.tag, r);
    ranks.push_back(run.lab != nullptr ? run.lab->Start(r / per_node, argv, run.dir, name)
                                       : StartProcess(argv, run.dir, name));
  }
  absl::Status failed;
  for (int r = 0; r < run.world; ++r) {
    // After a failure the others would only wait for their peer until the comm timeout.
    if (!failed.ok()) ::kill(ranks[r].pid, SIGKILL);
    const int status = WaitProcess(ranks[r], failed.ok() ? run.timeout_s : 10);
    if (status != 0 && failed.ok()) {
      failed = absl::InternalError(absl::StrCat(run.tag, " rank ", r, " exited with ", status,
                                                status == -1 ? " (timed out)" : "", ": ",
                                                Tail(ReadAll(ranks[r].stderr_path))));
      for (int k = r + 1; k < run.world; ++k) ::kill(ranks[k].pid, SIGKILL);
    }
  }
  if (!failed.ok()) return failed;
  std::ifstream f(out.metrics_path);
  for (std::string line; std::getline(f, line);) {
    nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) {
      return absl::InternalError(absl::StrCat(out.metrics_path, ": not JSON: ", line));
    }
    out.records.push_back(std::move(j));
  }
  return out;
}

}  // namespace accel::testing
