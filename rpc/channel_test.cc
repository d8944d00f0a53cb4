// rpc/channel.h: the address forms MakeChannel dials, and its CA file check.
#include "rpc/channel.h"

#include <filesystem>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accel::rpc {
namespace {

using ::testing::HasSubstr;

// Issue 28: "127.0.0.1:99999" dialed port 34463 (gRPC keeps the low 16 bits).
TEST(ChannelTest, AnAddressMustBeHostAndAPortIn1To65535OrAUnixSocket) {
  for (const std::string good : {"127.0.0.1:7070", "localhost:1", "acceld.accel.svc:65535",
                                 "[::1]:7070", "unix:/tmp/acceld.sock", "unix:relative.sock",
                                 "dns:///acceld:7070", "ipv4:127.0.0.1:7070"}) {
    EXPECT_TRUE(CheckServerAddress(good).ok()) << good << ": " << CheckServerAddress(good);
  }
  const std::pair<std::string, std::string> bad[] = {
      {"127.0.0.1:99999", "127.0.0.1:99999: port '99999' is not a number in 1..65535"},
      {"127.0.0.1:0", "port '0' is not a number in 1..65535"},
      {"127.0.0.1:-1", "port '-1' is not"},
      {"127.0.0.1:+80", "port '+80' is not"},
      {"127.0.0.1:0000080", "port '0000080' is not"},
      {"127.0.0.1:", "port '' is not"},
      {"127.0.0.1", "127.0.0.1: no port; give host:port (e.g. 127.0.0.1:7070) or unix:/path"},
      {":7070", ":7070: no host"},
      {"::1:7070", "an IPv6 address goes in brackets, e.g. [::1]:7070"},
      {"[::1]7070", "an IPv6 address is [ADDR]:port"},
      {"[::1]:", "port '' is not"},
      {"host name:70", "the host holds ' '"},
      {"unix:", "no socket path after unix:"},
      {"", "'': empty; give host:port"},
  };
  for (const auto& [address, message] : bad) {
    const absl::Status s = CheckServerAddress(address);
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << address << ": " << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr(message)) << address;
  }
  absl::Status s = MakeChannel("127.0.0.1:99999").status();
  EXPECT_THAT(std::string(s.message()), HasSubstr("server address 127.0.0.1:99999: port"));
}

// Issue 28: a text file as the CA made gRPC say "empty address list" at the first call.
TEST(ChannelTest, ACaFileWithoutAPemCertificateIsRefusedNamingIt) {
  const std::string path = ::testing::TempDir() + "/channel_test_ca.txt";
  std::ofstream(path) << "not a certificate\n";
  absl::Status s = MakeChannel("127.0.0.1:7070", path).status();
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_EQ(s.message(), "CA file " + path +
                             " holds no PEM certificate (no \"-----BEGIN CERTIFICATE-----\" line)");
  EXPECT_EQ(MakeChannel("127.0.0.1:7070", "/dev/zero").status().message(),
            "CA file /dev/zero is a device, not a regular file");
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace accel::rpc
