// Test helper: simulated machines on one host. NetnsLab makes a Linux bridge and N network
// namespaces ("nodes"), each with a veth into the bridge, its own IPv4 address on a private /24
// and `lo` up, optionally shaped like a NIC (rate, one-way delay), and starts processes inside a
// node. Ranks on one node talk over that node's loopback (unshaped, like shared memory or
// NVLink); ranks on different nodes cross the bridge through both nodes' veths.
//
// Names and subnets are unique per instance: interface names carry this process's pid and an
// instance counter (at most 15 characters, the kernel's limit), and the /24 is the first one in
// 10.201.0.0/16 that no interface of the root namespace holds, chosen under an exclusive lock on
// /run/accel-netns.lock so that tests run in parallel (ctest -j) never pick the same one. Bridges,
// veths and namespaces left by a process that no longer exists (a test killed by its timeout)
// are removed when the next lab is created.
//
// Shaping (per node, both directions): a node's egress is shaped on its eth0 inside the
// namespace and its ingress on the veth's root-namespace end (the bridge's egress towards the
// node), so each node has a full-duplex link of `rate` per direction, as a NIC does; the delay
// is added once, on egress, so the one-way delay between two nodes is `delay` and the round
// trip 2·delay. With `tc netem` the egress qdisc is `netem rate R delay D` and the ingress
// `netem rate R`. Kernels without sch_netem (this project's CI VM has htb/tbf but no netem)
// get `tbf rate R` both ways and no delay; applied() says which, so a test or bench can print
// what its link really was.
//
// Processes: Wrap(i, argv) returns argv prefixed with `nsenter --net=/run/netns/NAME --`, which
// joins only the network namespace and then execs the program, so the pid StartProcess returns
// is the program's own and WaitProcess / kill work as for any child. (Not `ip netns exec`: it
// remounts /sys, which hides the cgroup mounts; reference/slurm.md "Pitfalls".)
//
// Teardown (destructor): kills whatever still runs in the namespaces (SIGKILL; bounded wait),
// deletes each veth (synchronous, unlike the veth freed by `ip netns del`), then the
// namespaces, then the bridge. Every command runs with a deadline (scaled by TimeScale()).
// Needs root, `ip`, `tc` and `nsenter`; SkipReason() says in one line when they are missing.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tests/e2e/process.h"

namespace accel::testing {

struct LinkShape {
  std::string rate;   // tc's syntax ("1gbit", "100mbit"); "" = unshaped
  std::string delay;  // one-way, tc's syntax ("1ms"); "" = none
};

class NetnsLab {
 public:
  // Why this machine cannot build a lab (not root, a tool missing), or "" when it can.
  static std::string SkipReason();
  // Whether the kernel has sch_netem (delay): probed once on a throwaway veth pair.
  static bool NetemAvailable();

  // 1..64 nodes, each shaped by `shape`. On failure whatever was made is removed again.
  static absl::StatusOr<std::unique_ptr<NetnsLab>> Create(int nodes, const LinkShape& shape = {});
  ~NetnsLab();
  NetnsLab(const NetnsLab&) = delete;
  NetnsLab& operator=(const NetnsLab&) = delete;

  int nodes() const { return static_cast<int>(nodes_.size()); }
  const std::string& address(int i) const { return nodes_[i].address; }  // "10.201.K.(11+i)"
  const std::string& bridge_address() const { return bridge_address_; }  // "10.201.K.1"
  const std::string& netns_name(int i) const { return nodes_[i].netns; }
  std::string netns_path(int i) const { return "/run/netns/" + nodes_[i].netns; }
  // What shaping was applied, e.g. "netem rate 1gbit delay 1ms" or
  // "tbf rate 1gbit; no delay (kernel has no sch_netem)"; "unshaped".
  const std::string& applied() const { return applied_; }

  // argv run inside node i's network namespace (see above).
  std::vector<std::string> Wrap(int i, const std::vector<std::string>& argv) const;
  // StartProcess(Wrap(i, argv), dir, name).
  ChildProcess Start(int i, const std::vector<std::string>& argv, const std::string& dir,
                     const std::string& name) const;
  // Pids of the processes whose network namespace is node i's.
  std::vector<pid_t> ProcessesIn(int i) const;

 private:
  struct Node {
    std::string netns, veth, address;
  };
  NetnsLab() = default;
  absl::Status Build(const LinkShape& shape);

  std::string tag_;  // "ax<pid base 36>_<counter base 36>"
  std::string bridge_, bridge_address_, applied_;
  std::vector<Node> nodes_;
  bool bridge_made_ = false;
  std::vector<bool> netns_made_, veth_made_;
};

}  // namespace accel::testing
