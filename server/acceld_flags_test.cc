// acceld's command line (acceld_flags.h) in-process, and the real binary's refusals that only a
// starting daemon can make (zero CPU slots with nothing else to run on, a missing Slurm config):
// each value out of range exits 2 with one line naming the flag and its range.
#include "server/acceld_flags.h"

#include <stdio.h>
#include <sys/wait.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/core/test_util.h"

namespace accel::server {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

struct Parsed {
  int code = 0;
  std::string out, err;
  AcceldOptions options;
};

Parsed Parse(const std::vector<std::string>& args) {
  Parsed p;
  std::ostringstream out, err;
  p.code = ParseAcceldFlags(args, &p.options, out, err);
  p.out = out.str();
  p.err = err.str();
  return p;
}

// Refused with exit 2 and one line that starts with "acceld: <flag>" and holds `what`.
void ExpectRefused(const std::vector<std::string>& args, const std::string& what) {
  const Parsed p = Parse(args);
  const std::string call = absl::StrJoin(args, " ");
  EXPECT_EQ(p.code, 2) << call;
  EXPECT_THAT(p.err, StartsWith("acceld: " + args[0])) << call;
  EXPECT_THAT(p.err, HasSubstr(what)) << call;
  EXPECT_EQ(std::count(p.err.begin(), p.err.end(), '\n'), 1) << call << ": " << p.err;
}

TEST(AcceldFlagsTest, DefaultsAndGoodValuesStart) {
  Parsed p = Parse({});
  ASSERT_EQ(p.code, kStartAcceld) << p.err;
  EXPECT_GE(p.options.cpu_slots, 1);
  EXPECT_EQ(p.options.gpus, -1);
  EXPECT_EQ(p.options.heartbeat_timeout, absl::Seconds(60));
  EXPECT_EQ(p.options.stop_grace, absl::Seconds(10));
  const std::string dir = FreshTestDir();
  p = Parse({"--cpu-slots", "0", "--gpus", "2", "--heartbeat-timeout", "4", "--stop-grace", "0",
             "--address-file", dir + "/addr", "--http-address-file", dir + "/http", "--slurm-time",
             "1-00:00:00"});
  ASSERT_EQ(p.code, kStartAcceld) << p.err;
  EXPECT_EQ(p.options.cpu_slots, 0);  // Acceld::Start judges it against the GPUs it finds
  EXPECT_EQ(p.options.heartbeat_timeout, absl::Seconds(4));
  EXPECT_EQ(p.options.stop_grace, absl::ZeroDuration());
  p = Parse({"--help"});
  EXPECT_EQ(p.code, 0);
  EXPECT_THAT(p.out, HasSubstr("--heartbeat-timeout"));
}

TEST(AcceldFlagsTest, OutOfRangeValuesAreRefusedNamingTheFlagAndItsRange) {
  ExpectRefused({"--cpu-slots", "-1"}, "must be an integer from 0 to 65536");
  ExpectRefused({"--cpu-slots", "100000"}, "must be an integer from 0 to 65536");
  ExpectRefused({"--gpus", "-5"}, "--gpus: must be an integer from -1 to 1024");
  for (const char* v : {"-1", "0", "3.9", "nan", "inf", "-inf", "1e9"}) {
    ExpectRefused({"--heartbeat-timeout", v},
                  "--heartbeat-timeout: must be a number of seconds from 4 to 604800");
  }
  for (const char* v : {"nan", "-1", "inf", "3601"}) {
    ExpectRefused({"--stop-grace", v}, "--stop-grace: must be a number of seconds from 0 to 3600");
  }
  ExpectRefused({"--slurm-time", "99999999-99:99:99"}, "hours 99 is out of range");
  ExpectRefused({"--log-level", "loud"}, "--log-level: must be trace, debug, info, warn or error");
  ExpectRefused({"--finished-job-ttl", "soon"}, "--finished-job-ttl");
}

TEST(AcceldFlagsTest, AddressFilesNeedAnExistingWritableFolder) {
  const std::string dir = FreshTestDir();
  for (const char* flag : {"--address-file", "--http-address-file"}) {
    ExpectRefused({flag, dir + "/missing/addr"},
                  absl::StrCat(flag, ": the folder ", dir, "/missing of ", dir,
                               "/missing/addr does not exist"));
    ExpectRefused({flag, dir}, absl::StrCat(flag, ": ", dir, " is a folder, not a file"));
  }
}

TEST(AcceldFlagsTest, ListenPortsAreInRange) {
  for (const char* flag : {"--listen", "--http-listen"}) {
    for (const char* v : {"127.0.0.1:99999", "127.0.0.1:", "127.0.0.1", ":80", "h:-1", "h:8x"}) {
      ExpectRefused({flag, v}, absl::StrCat(flag, ": must be host:port with a port from 0"));
    }
    EXPECT_EQ(Parse({flag, "127.0.0.1:0"}).code, kStartAcceld);
    EXPECT_EQ(Parse({flag, "[::1]:65535"}).code, kStartAcceld);
  }
}

TEST(AcceldFlagsTest, MalformedFlagsExit2) {
  EXPECT_EQ(Parse({"--cpu-slots", "many"}).code, 2);
  EXPECT_EQ(Parse({"--no-such-flag"}).code, 2);
}

// The real binary: `env PREFIX acceld ARGS` (PREFIX: variables, or a command such as timeout(1)
// that runs acceld), its exit code and output.
int RunAcceld(const std::string& prefix, const std::string& args, std::string* output) {
  const std::string command =
      absl::StrCat("env ", prefix, " ", ACCELD_BIN, " ", args, " 2>&1 </dev/null");
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return -1;
  char buf[4096];
  output->clear();
  for (size_t n; (n = fread(buf, 1, sizeof(buf), pipe)) > 0;) output->append(buf, n);
  const int status = pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

class AcceldBinaryTest : public ::testing::Test {
 protected:
  std::string Base() {
    return absl::StrCat("--listen 127.0.0.1:0 --state-dir ", dir_, "/state --worker-bin /bin/true");
  }
  std::string dir_ = FreshTestDir();
};

TEST_F(AcceldBinaryTest, RefusesFlagsOutOfRangeWithExit2) {
  std::string out;
  EXPECT_EQ(RunAcceld("", Base() + " --heartbeat-timeout nan", &out), 2) << out;
  EXPECT_THAT(out, HasSubstr("acceld: --heartbeat-timeout: must be a number of seconds"));
  EXPECT_EQ(RunAcceld("", Base() + " --address-file " + dir_ + "/no/addr", &out), 2) << out;
  EXPECT_THAT(out, HasSubstr("--address-file: the folder " + dir_ + "/no of"));
}

TEST_F(AcceldBinaryTest, ZeroCpuSlotsNeedGpusOrAClusterLauncher) {
  std::string out;
  EXPECT_EQ(RunAcceld("", Base() + " --cpu-slots 0 --gpus 0", &out), 2) << out;
  EXPECT_THAT(out, HasSubstr("--cpu-slots 0: no CPU slots, no GPUs"));
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
  // With two declared GPUs it serves (and stops on SIGTERM from timeout(1)).
  EXPECT_EQ(RunAcceld("timeout --preserve-status -s TERM 3",
                      Base() + " --cpu-slots 0 --gpus 2 --address-file " + dir_ + "/addr", &out),
            0)
      << out;
  EXPECT_THAT(out, HasSubstr("with 0 cpu slots and 2 GPUs"));
}

TEST_F(AcceldBinaryTest, TheSlurmLauncherNeedsASlurmConfig) {
  std::string out;
  const std::string missing = dir_ + "/etc/slurm.conf";
  EXPECT_EQ(RunAcceld("SLURM_CONF=" + missing, Base() + " --launcher slurm", &out), 2) << out;
  EXPECT_THAT(out, HasSubstr("acceld: error: the slurm launcher (--launcher / --enable-launcher "
                             "slurm) needs a Slurm config: SLURM_CONF=" +
                             missing + " does not exist"));
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
  EXPECT_EQ(RunAcceld("SLURM_CONF=" + missing, Base() + " --enable-launcher slurm", &out), 2);
  EXPECT_THAT(out, HasSubstr("needs a Slurm config"));
  // With a config the check passes: acceld goes on to its next question (--advertise).
  const std::string conf = dir_ + "/slurm.conf";
  std::ofstream(conf) << "ClusterName=test\n";
  EXPECT_EQ(RunAcceld("SLURM_CONF=" + conf, Base() + " --launcher slurm", &out), 2) << out;
  EXPECT_THAT(out, HasSubstr("--advertise"));
  EXPECT_THAT(out, ::testing::Not(HasSubstr("Slurm config")));
}

}  // namespace
}  // namespace accel::server
