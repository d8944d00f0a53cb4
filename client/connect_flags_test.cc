// accelctl's connection flags (--server, --token-file, --tls-ca) through RunAccelctl: each bad
// one is refused before a call is made, in one line naming the flag or file, with exit code 2
// (issue 28). Nothing here needs an acceld: every case stops at the door.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>

#include "client/accelctl.h"
#include "client/config_command.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accel::client {
namespace {

using ::testing::HasSubstr;

struct Outcome {
  int code;
  std::string out, err;
};

Outcome Accelctl(std::vector<std::string> args) {
  std::ostringstream out, err;
  const int code = RunAccelctl(args, {}, out, err);
  return {code, out.str(), err.str()};
}

class ConnectFlagsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = ::testing::TempDir() + "/accelctl_connect_" + info->name();
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    token_ = Write("token", "secret-token-0123456789\n");
  }
  std::string Write(const std::string& name, const std::string& data) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path, std::ios::binary) << data;
    chmod(path.c_str(), 0600);
    return path;
  }
  // One line: what the user reads, and what scripts grep.
  static void ExpectOneLine(const Outcome& r, const std::string& line) {
    EXPECT_EQ(r.code, kExitInvalid) << r.err;
    EXPECT_EQ(r.err, "accelctl: " + line + "\n");
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }

  std::string dir_, token_;
};

// Issue 28: a FIFO as --token-file blocked accelctl forever.
TEST_F(ConnectFlagsTest, AFifoTokenFileIsRefusedWithoutBlocking) {
  const std::string fifo = dir_ + "/pipe";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  std::future<Outcome> run = std::async(std::launch::async, [&] {
    return Accelctl({"--server", "127.0.0.1:1", "--token-file", fifo, "list"});
  });
  if (run.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    const int fd = open(fifo.c_str(), O_WRONLY | O_NONBLOCK);  // releases a blocked reader
    if (fd >= 0) close(fd);
    FAIL() << "accelctl blocked on a FIFO --token-file for 10 s";
  }
  ExpectOneLine(run.get(), "token file " + fifo + " is a FIFO, not a regular file");
}

// Issue 28: /dev/zero as --token-file grew accelctl to 2.5 GB.
TEST_F(ConnectFlagsTest, ADeviceTokenFileIsRefusedBeforeAByteIsRead) {
  ExpectOneLine(Accelctl({"--server", "127.0.0.1:1", "--token-file", "/dev/zero", "list"}),
                "token file /dev/zero is a device, not a regular file");
}

// Issue 28: a newline inside the token aborted accelctl (exit 134, gRPC's metadata assertion).
TEST_F(ConnectFlagsTest, ATokenWithANewlineInsideIsRefusedNamingTheFile) {
  const std::string token = Write("two_lines", "abc\ndef\n");
  ExpectOneLine(Accelctl({"--server", "127.0.0.1:1", "--token-file", token, "list"}),
                "token file " + token +
                    " holds a character that cannot travel in a header (byte 10 at offset 3; a "
                    "token is printable ASCII without spaces, on one line)");
  const std::string big = Write("big", std::string(9000, 'x'));
  ExpectOneLine(Accelctl({"--server", "127.0.0.1:1", "--token-file", big, "list"}),
                "token file " + big + " holds 9000 bytes; it may hold at most 8192: is it the "
                "right file?");
}

// Issue 28: 127.0.0.1:99999 dialed port 34463.
TEST_F(ConnectFlagsTest, AServerPortOutOfRangeIsRefusedNamingTheFlag) {
  ExpectOneLine(Accelctl({"--server", "127.0.0.1:99999", "--token-file", token_, "list"}),
                "--server 127.0.0.1:99999: port '99999' is not a number in 1..65535");
  ExpectOneLine(Accelctl({"--server", "localhost", "--token-file", token_, "status", "job-1"}),
                "--server localhost: no port; give host:port (e.g. 127.0.0.1:7070) or "
                "unix:/path");
}

// Issue 28: a text file as --tls-ca failed the first call with "empty address list".
TEST_F(ConnectFlagsTest, ATlsCaWithoutAPemCertificateIsRefusedNamingIt) {
  const std::string ca = Write("ca.txt", "not a certificate\n");
  ExpectOneLine(
      Accelctl({"--server", "127.0.0.1:1", "--token-file", token_, "--tls-ca", ca, "list"}),
      "CA file " + ca + " holds no PEM certificate (no \"-----BEGIN CERTIFICATE-----\" line)");
  ExpectOneLine(Accelctl({"--server", "127.0.0.1:1", "--token-file", token_, "--tls-ca",
                          "/dev/zero", "list"}),
                "CA file /dev/zero is a device, not a regular file");
}

}  // namespace
}  // namespace accel::client
