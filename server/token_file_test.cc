#include "server/token_file.h"

#include <sys/stat.h>

#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/test_util.h"

namespace accel::server {
namespace {

TEST(TokenFileTest, CreatesAPrivateRandomTokenOnceAndRereadsIt) {
  const std::string path = FreshTestDir() + "/sub/token";
  auto first = EnsureTokenFile(path);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->size(), 64u);
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600);
  auto again = EnsureTokenFile(path);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *first);
  EXPECT_NE(*EnsureTokenFile(FreshTestDir() + "/other"), *first);
}

TEST(TokenFileTest, RefusesATokenOthersCanRead) {
  const std::string path = FreshTestDir() + "/token";
  std::ofstream(path) << "secret\n";
  chmod(path.c_str(), 0644);
  auto t = EnsureTokenFile(path);
  EXPECT_EQ(t.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(t.status().message()), ::testing::HasSubstr("chmod 600"));
  chmod(path.c_str(), 0600);
  EXPECT_EQ(*EnsureTokenFile(path), "secret");
}

// A probe of issue 16: a 1 MB token failed every call with a bare gRPC metadata error.
TEST(TokenFileTest, RefusesATokenThatCannotTravelInAHeader) {
  const std::string path = FreshTestDir() + "/token";
  std::ofstream(path) << std::string(1 << 20, 'x') << "\n";
  chmod(path.c_str(), 0600);
  auto t = EnsureTokenFile(path);
  EXPECT_EQ(t.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(t.status().message()),
              ::testing::HasSubstr("holds 1048576 bytes; a token is at most 4096"));
  std::ofstream(path) << "two words\n";
  EXPECT_THAT(std::string(EnsureTokenFile(path).status().message()),
              ::testing::HasSubstr("cannot travel in a header"));
}

}  // namespace
}  // namespace accel::server
