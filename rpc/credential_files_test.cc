// The token and TLS file reader acceld and accelctl share (rpc/credential_files.h): FIFOs and
// devices refused without blocking, size caps, the token's rules, the PEM markers.
#include "rpc/credential_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accel::rpc {
namespace {

using ::testing::HasSubstr;

std::string FreshDir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::string dir = ::testing::TempDir() + "/credential_files_" + info->name();
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

std::string Write(const std::string& path, const std::string& data) {
  std::ofstream(path, std::ios::binary) << data;
  return path;
}

// Runs `read` with a deadline. A reader that blocks on the FIFO is released by opening the
// FIFO's write end, so the test fails instead of hanging.
absl::Status ReadWithDeadline(const std::string& fifo,
                              std::function<absl::Status()> read) {
  std::future<absl::Status> done = std::async(std::launch::async, std::move(read));
  if (done.wait_for(std::chrono::seconds(10)) == std::future_status::ready) return done.get();
  const int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
  if (fd >= 0) ::close(fd);
  done.wait();
  return absl::DeadlineExceededError("the reader blocked on the FIFO for 10 s");
}

TEST(CredentialFilesTest, AFifoIsRefusedWithoutBlocking) {
  const std::string fifo = FreshDir() + "/pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  absl::Status s = ReadWithDeadline(fifo, [&] { return ReadToken(Env::Default(), fifo).status(); });
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_EQ(s.message(), "token file " + fifo + " is a FIFO, not a regular file");
  s = ReadWithDeadline(fifo, [&] {
    return ReadPemFile(Env::Default(), fifo, "--tls-cert", PemKind::kCertificate).status();
  });
  EXPECT_EQ(s.message(), "--tls-cert " + fifo + " is a FIFO, not a regular file");
}

TEST(CredentialFilesTest, DevicesAndDirectoriesAreRefusedBeforeAByteIsRead) {
  absl::Status s = ReadToken(Env::Default(), "/dev/zero").status();
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_EQ(s.message(), "token file /dev/zero is a device, not a regular file");
  s = ReadPemFile(Env::Default(), "/dev/urandom", "CA file", PemKind::kCertificate).status();
  EXPECT_EQ(s.message(), "CA file /dev/urandom is a device, not a regular file");
  const std::string dir = FreshDir();
  s = ReadToken(Env::Default(), dir).status();
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("token file " + dir + " is a directory"));
}

TEST(CredentialFilesTest, AMissingFileIsNotFoundNamingIt) {
  absl::Status s = ReadToken(Env::Default(), "/nonexistent/token").status();
  EXPECT_TRUE(absl::IsNotFound(s)) << s;
  EXPECT_EQ(s.message(), "token file /nonexistent/token does not exist");
}

TEST(CredentialFilesTest, FilesOverTheirCapAreRefusedByTheirSize) {
  const std::string dir = FreshDir();
  absl::Status s =
      ReadToken(Env::Default(), Write(dir + "/big", std::string(9000, 'x'))).status();
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_EQ(s.message(), "token file " + dir +
                             "/big holds 9000 bytes; it may hold at most 8192: is it the right "
                             "file?");
  s = ReadPemFile(Env::Default(),
                  Write(dir + "/big.pem", "-----BEGIN CERTIFICATE-----\n" +
                                              std::string(kMaxPemFileBytes, 'A')),
                  "--tls-cert", PemKind::kCertificate)
          .status();
  EXPECT_THAT(s.message(), HasSubstr("it may hold at most 1048576"));
}

TEST(CredentialFilesTest, ATokenIsOneLineOfPrintableAsciiAtMost4096Bytes) {
  EXPECT_EQ(*ParseToken("abc123\n", "/t"), "abc123");  // a trailing newline is fine
  EXPECT_EQ(*ParseToken("  abc123 \r\n\t", "/t"), "abc123");
  EXPECT_EQ(ParseToken(std::string(4096, 'x') + "\n", "/t")->size(), 4096u);

  absl::Status s = ParseToken("abc\ndef\n", "/t").status();
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_EQ(s.message(),
            "token file /t holds a character that cannot travel in a header (byte 10 at offset "
            "3; a token is printable ASCII without spaces, on one line)");
  EXPECT_THAT(ParseToken("  two words", "/t").status().message(), HasSubstr("offset 5"));
  EXPECT_THAT(ParseToken("s\xc3\xa9" "cret", "/t").status().message(), HasSubstr("byte 195"));
  EXPECT_THAT(ParseToken(std::string("a\0b", 3), "/t").status().message(),
              HasSubstr("byte 0 at offset 1"));
  s = ParseToken(std::string(4097, 'x'), "/t").status();
  EXPECT_EQ(s.message(),
            "token file /t holds a 4097-byte token; a token is at most 4096 (it travels in a "
            "gRPC header): is it the right file?");
  EXPECT_EQ(ParseToken(" \n", "/t").status().message(), "token file /t is empty");
  EXPECT_EQ(ParseToken("", "/t").status().message(), "token file /t is empty");
}

TEST(CredentialFilesTest, PemFilesMustHoldABlockOfTheirKind) {
  const std::string dir = FreshDir();
  const std::string cert =
      Write(dir + "/cert.pem", "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n");
  const std::string key =
      Write(dir + "/key.pem", "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n");
  const std::string text = Write(dir + "/notes.txt", "not a certificate\n");
  EXPECT_TRUE(ReadPemFile(Env::Default(), cert, "--tls-cert", PemKind::kCertificate).ok());
  EXPECT_TRUE(ReadPemFile(Env::Default(), key, "--tls-key", PemKind::kPrivateKey).ok());

  absl::Status s = ReadPemFile(Env::Default(), text, "CA file", PemKind::kCertificate).status();
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_EQ(s.message(), "CA file " + text +
                             " holds no PEM certificate (no \"-----BEGIN CERTIFICATE-----\" line)");
  // The key given as the certificate, and the other way round.
  EXPECT_THAT(ReadPemFile(Env::Default(), key, "--tls-cert", PemKind::kCertificate)
                  .status()
                  .message(),
              HasSubstr("--tls-cert " + key + " holds no PEM certificate"));
  EXPECT_THAT(ReadPemFile(Env::Default(), cert, "--tls-key", PemKind::kPrivateKey)
                  .status()
                  .message(),
              HasSubstr("--tls-key " + cert + " holds no PEM private key"));
}

}  // namespace
}  // namespace accel::rpc
