// One acceld per state directory, per port and per unix socket: a second daemon on any of them
// fails at start with a clear message and exit code 2 (or 1 for the port), and leaves the first
// one and other people's files alone.
#include "tests/controlplane/daemon_harness.h"

namespace accel {
namespace {

using namespace controlplane_testing;  // NOLINT: the harness is this test's vocabulary

// Runs a second acceld with `args` to its exit; returns {exit code, stderr}.
std::pair<int, std::string> SecondAcceld(const std::string& dir, std::vector<std::string> args) {
  std::vector<std::string> argv = {ACCELD_BIN, "--worker-bin", ACCEL_WORKER_BIN, "--cpu-slots",
                                   "1"};
  argv.insert(argv.end(), args.begin(), args.end());
  testing::ChildProcess c = testing::StartProcess(argv, dir, "second");
  const int code = testing::WaitProcess(c, 20);
  return {code, testing::ReadAll(c.stderr_path)};
}

TEST(ControlPlaneExclusive, ASecondAcceldOnTheSameStateDirSaysWhoHoldsIt) {
  Daemon d(FreshDir());
  d.Start(1);
  const auto [code, err] = SecondAcceld(
      d.dir(), {"--state-dir", d.dir() + "/state", "--listen", "",
                "--unix-socket", d.dir() + "/second.sock"});
  EXPECT_EQ(code, 2) << err;
  EXPECT_THAT(err, HasSubstr("is in use by acceld pid " + std::to_string(d.child().pid)));
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  // The first one still serves.
  std::string out;
  EXPECT_EQ(d.Accelctl({"list"}, &out), 0);
}

TEST(ControlPlaneExclusive, ATakenPortFailsAtStart) {
  Daemon d(FreshDir());
  d.Start(1);
  const auto [code, err] = SecondAcceld(
      d.dir(), {"--state-dir", d.dir() + "/other", "--listen",
                "127.0.0.1:" + std::to_string(d.port())});
  EXPECT_NE(code, 0) << err;
  EXPECT_THAT(err, HasSubstr("cannot listen on 127.0.0.1:" + std::to_string(d.port())));
  std::string out;
  EXPECT_EQ(d.Accelctl({"list"}, &out), 0);
}

TEST(ControlPlaneExclusive, AUnixSocketPathThatIsAFileIsNotReplaced) {
  const std::string dir = FreshDir();
  const std::string file = dir + "/precious.txt";
  std::ofstream(file) << "keep me";
  const auto [code, err] =
      SecondAcceld(dir, {"--state-dir", dir + "/state", "--listen", "", "--unix-socket", file});
  EXPECT_EQ(code, 2) << err;
  EXPECT_THAT(err, HasSubstr("exists and is not a socket"));
  EXPECT_EQ(testing::ReadAll(file), "keep me");
}

}  // namespace
}  // namespace accel
