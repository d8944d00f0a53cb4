#include "engine/comm/file_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accel::comm {
namespace {

using ::testing::HasSubstr;

std::string FreshDir() {
  std::string tmpl = ::testing::TempDir() + "/file_store_test_XXXXXX";
  EXPECT_NE(::mkdtemp(tmpl.data()), nullptr);
  return tmpl;
}

std::set<std::string> ListDir(const std::string& dir) {
  std::set<std::string> names;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return names;
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name != "." && name != "..") names.insert(name);
  }
  ::closedir(d);
  return names;
}

TEST(FileStoreTest, EncodeKeyEscapesEverythingButSafeCharacters) {
  EXPECT_EQ(FileStore::EncodeKey("rank_0-a"), "k_rank_0-a");
  EXPECT_EQ(FileStore::EncodeKey("job/3"), "k_job%2F3");
  EXPECT_EQ(FileStore::EncodeKey(".."), "k_%2E%2E");
  EXPECT_EQ(FileStore::EncodeKey(""), "k_");
  EXPECT_EQ(FileStore::EncodeKey("%"), "k_%25");
  EXPECT_EQ(FileStore::EncodeKey("\xc3\xa9"), "k_%C3%A9");
}

TEST(FileStoreTest, AwkwardKeysStayInsideTheDirectoryAndRoundTrip) {
  std::string dir = FreshDir();
  auto store = FileStore::Open(dir);
  ASSERT_TRUE(store.ok()) << store.status();
  const std::vector<std::string> keys = {"../escape", "a/b/c", "", ".", "sp ace", "%2F", "\n"};
  for (size_t i = 0; i < keys.size(); ++i) {
    ASSERT_TRUE((*store)->Set(keys[i], std::to_string(i)).ok()) << keys[i];
  }
  for (size_t i = 0; i < keys.size(); ++i) {
    EXPECT_EQ(*(*store)->Get(keys[i], absl::Seconds(1)), std::to_string(i)) << keys[i];
  }
  // One plain file per key, nothing else (no temporary files left, nothing outside).
  std::set<std::string> names = ListDir(dir);
  EXPECT_EQ(names.size(), keys.size());
  for (const std::string& name : names) EXPECT_EQ(name.rfind("k_", 0), 0u) << name;
  EXPECT_TRUE(ListDir(dir + "/..").count("escape") == 0);
}

TEST(FileStoreTest, OverlongKeyIsInvalidArgument) {
  auto store = FileStore::Open(FreshDir());
  ASSERT_TRUE(store.ok());
  absl::Status st = (*store)->Set(std::string(300, 'x'), "v");
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("limit"));
}

TEST(FileStoreTest, OpenCreatesMissingParentsAndRejectsAFile) {
  std::string dir = FreshDir() + "/a/b/c";
  auto store = FileStore::Open(dir);
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_TRUE((*store)->Set("k", "v").ok());
  std::string file = FreshDir() + "/plain";
  std::ofstream(file) << "x";
  EXPECT_EQ(FileStore::Open(file).status().code(), absl::StatusCode::kInvalidArgument);
}

// Two processes share one directory: values set by one are seen by the other, and Add stays
// atomic between them (each process adds 200 times; no increment may be lost).
TEST(FileStoreTest, TwoProcessesShareValuesAndCounters) {
  const std::string dir = FreshDir();
  constexpr int kAdds = 200;
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Child: no gtest assertions; report through the exit code.
    auto store = FileStore::Open(dir);
    if (!store.ok()) ::_exit(10);
    if (!(*store)->Wait({"parent_ready"}, absl::Seconds(10)).ok()) ::_exit(11);
    if (!(*store)->Set("child_value", "from child").ok()) ::_exit(12);
    for (int i = 0; i < kAdds; ++i) {
      if (!(*store)->Add("counter", 1).ok()) ::_exit(13);
    }
    ::_exit(0);
  }
  auto store = FileStore::Open(dir);
  ASSERT_TRUE(store.ok());
  ASSERT_TRUE((*store)->Set("parent_ready", "1").ok());
  for (int i = 0; i < kAdds; ++i) ASSERT_TRUE((*store)->Add("counter", 1).ok());
  absl::StatusOr<std::string> value = (*store)->Get("child_value", absl::Seconds(10));
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);
  ASSERT_TRUE(value.ok()) << value.status();
  EXPECT_EQ(*value, "from child");
  EXPECT_EQ(*(*store)->Get("counter", absl::Seconds(1)), std::to_string(2 * kAdds));
}

// A process killed while holding a counter's lock does not wedge it: flock locks die with
// their process.
TEST(FileStoreTest, KilledLockHolderDoesNotWedgeAdd) {
  const std::string dir = FreshDir();
  auto store = FileStore::Open(dir);
  ASSERT_TRUE(store.ok());
  ASSERT_EQ(*(*store)->Add("c", 1), 1);
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    int fd = ::open((dir + "/l_c").c_str(), O_RDWR);
    if (fd < 0 || ::flock(fd, LOCK_EX) != 0) ::_exit(1);
    char b = 1;
    (void)!::write(ready[1], &b, 1);
    ::pause();
    ::_exit(0);
  }
  char b = 0;
  ASSERT_EQ(::read(ready[0], &b, 1), 1);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  EXPECT_EQ(*(*store)->Add("c", 1), 2);
  ::close(ready[0]);
  ::close(ready[1]);
}

}  // namespace
}  // namespace accel::comm
