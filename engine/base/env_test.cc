// The Env contract, run against PosixEnv (in a temporary directory) and MemEnv alike, and the
// path helpers. MemEnv's power-loss model and FaultEnv are in env_fault_test.cc.
#include "engine/base/env.h"

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/base/env_test_util.h"
#include "engine/testing/fake_clock.h"
#include "engine/testing/fault_env.h"
#include "engine/testing/mem_env.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accel {
namespace {

using ::accel::testing::Contents;
using ::accel::testing::FakeClock;
using ::accel::testing::FaultEnv;
using ::accel::testing::FaultOp;
using ::accel::testing::MemEnv;
using ::accel::testing::WriteString;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// ---- the contract, for both implementations ----------------------------------------------------

class PosixHarness {
 public:
  static constexpr bool kFakeClock = false;
  PosixHarness() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "accel_env_test_XXXXXX").string();
    root_ = ::mkdtemp(tmpl.data());
    EXPECT_FALSE(root_.empty());
  }
  ~PosixHarness() { EXPECT_TRUE(Env::Default()->DeleteRecursively(root_).ok()); }
  Env* env() { return Env::Default(); }
  const std::string& root() const { return root_; }

 private:
  std::string root_;
};

class MemHarness {
 public:
  static constexpr bool kFakeClock = true;
  MemHarness() { EXPECT_TRUE(env_.CreateDirs(root_).ok()); }
  Env* env() { return &env_; }
  const std::string& root() const { return root_; }

 private:
  MemEnv env_;
  std::string root_ = "/work/test";
};

template <typename Harness>
class EnvContractTest : public ::testing::Test {
 protected:
  Env* env() { return harness_.env(); }
  std::string Path(std::string_view name) { return JoinPath(harness_.root(), name); }
  Harness harness_;
};

using Harnesses = ::testing::Types<PosixHarness, MemHarness>;
class HarnessNames {
 public:
  template <typename T>
  static std::string GetName(int) {
    return std::is_same_v<T, PosixHarness> ? "Posix" : "Mem";
  }
};
TYPED_TEST_SUITE(EnvContractTest, Harnesses, HarnessNames);

TYPED_TEST(EnvContractTest, WriteReadAndSize) {
  Env* env = this->env();
  const std::string path = this->Path("f.bin");
  auto file = env->NewWritableFile(path);
  ASSERT_TRUE(file.ok()) << file.status();
  ASSERT_TRUE((*file)->Append("hello ").ok());
  ASSERT_TRUE((*file)->Append(std::string("w\0rld", 5)).ok());
  ASSERT_TRUE((*file)->Sync().ok());
  ASSERT_TRUE((*file)->Close().ok());
  EXPECT_TRUE(env->FileExists(path));
  auto size = env->GetFileSize(path);
  ASSERT_TRUE(size.ok()) << size.status();
  EXPECT_EQ(*size, 11u);
  EXPECT_EQ(Contents(env, path), std::string("hello w\0rld", 11));

  auto reader = env->NewRandomAccessFile(path);
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_EQ((*reader)->Size(), 11u);
  EXPECT_EQ((*reader)->Path(), path);
  char buf[5];
  ASSERT_TRUE((*reader)->Read(6, 5, buf).ok());
  EXPECT_EQ(std::string(buf, 5), std::string("w\0rld", 5));
  EXPECT_TRUE((*reader)->Read(11, 0, buf).ok());  // empty read at the end is fine
}

TYPED_TEST(EnvContractTest, ReadPastEndIsDataLossNamingPath) {
  const std::string path = this->Path("short");
  ASSERT_TRUE(WriteString(this->env(), path, "0123456789").ok());
  auto reader = this->env()->NewRandomAccessFile(path);
  ASSERT_TRUE(reader.ok());
  char buf[16];
  absl::Status s = (*reader)->Read(8, 3, buf);
  EXPECT_TRUE(absl::IsDataLoss(s)) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr(path));
  EXPECT_THAT(std::string(s.message()), HasSubstr("8"));
  EXPECT_TRUE(absl::IsDataLoss((*reader)->Read(11, 0, buf)));
  EXPECT_TRUE(absl::IsDataLoss((*reader)->Read(uint64_t{1} << 62, 1, buf)));
}

TYPED_TEST(EnvContractTest, ADirectoryHasNoFileSizeAndCannotBeOpenedForReading) {
  const std::string dir = this->Path("d");
  ASSERT_TRUE(this->env()->CreateDirs(dir).ok());
  for (absl::Status s : {this->env()->GetFileSize(dir).status(),
                         this->env()->NewRandomAccessFile(dir).status()}) {
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr(dir + " is a directory, not a file"));
  }
}

TYPED_TEST(EnvContractTest, MissingPathsAreNotFound) {
  Env* env = this->env();
  const std::string missing = this->Path("nope");
  EXPECT_FALSE(env->FileExists(missing));
  absl::Status s = env->NewRandomAccessFile(missing).status();
  EXPECT_TRUE(absl::IsNotFound(s)) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr(missing));
  EXPECT_TRUE(absl::IsNotFound(env->GetFileSize(missing).status()));
  EXPECT_TRUE(absl::IsNotFound(env->ListDir(missing).status()));
  EXPECT_TRUE(absl::IsNotFound(env->DeleteFile(missing)));
  EXPECT_TRUE(absl::IsNotFound(env->RenameFile(missing, this->Path("x"))));
  EXPECT_TRUE(absl::IsNotFound(env->SyncDir(missing)));
  EXPECT_TRUE(absl::IsNotFound(env->NewWritableFile(JoinPath(missing, "f")).status()));
  ASSERT_TRUE(WriteString(env, this->Path("a"), "x").ok());
  EXPECT_TRUE(absl::IsNotFound(env->RenameFile(this->Path("a"), JoinPath(missing, "a"))));
  EXPECT_TRUE(env->DeleteRecursively(missing).ok());  // like rm -rf
}

TYPED_TEST(EnvContractTest, WrongKindIsInvalidArgument) {
  Env* env = this->env();
  const std::string dir = this->Path("d");
  const std::string file = this->Path("f");
  ASSERT_TRUE(env->CreateDirs(dir).ok());
  ASSERT_TRUE(WriteString(env, file, "x").ok());
  EXPECT_TRUE(absl::IsInvalidArgument(env->NewRandomAccessFile(dir).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(env->NewWritableFile(dir).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(env->ListDir(file).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(env->SyncDir(file)));
  EXPECT_TRUE(absl::IsInvalidArgument(env->DeleteFile(dir)));
  EXPECT_TRUE(absl::IsInvalidArgument(env->CreateDirs(JoinPath(file, "sub"))));
  EXPECT_TRUE(absl::IsInvalidArgument(env->CreateDirs(file)));
  EXPECT_TRUE(absl::IsInvalidArgument(env->NewWritableFile(JoinPath(file, "g")).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(env->RenameFile(file, dir)));
  EXPECT_TRUE(env->FileExists(file));
}

TYPED_TEST(EnvContractTest, CreateDirsNestedAndIdempotent) {
  Env* env = this->env();
  const std::string deep = this->Path("a/b/c");
  ASSERT_TRUE(env->CreateDirs(deep).ok());
  EXPECT_TRUE(env->FileExists(this->Path("a")));
  EXPECT_TRUE(env->FileExists(this->Path("a/b")));
  EXPECT_TRUE(env->FileExists(deep));
  EXPECT_TRUE(env->CreateDirs(deep).ok());
  EXPECT_TRUE(env->CreateDirs(this->Path("a/b/c/")).ok());
  ASSERT_TRUE(WriteString(env, JoinPath(deep, "leaf"), "z").ok());
  EXPECT_THAT(*env->ListDir(this->Path("a")), ElementsAre("b"));
  EXPECT_THAT(*env->ListDir(deep), ElementsAre("leaf"));
}

TYPED_TEST(EnvContractTest, ListDirIsSortedAndHasNoDots) {
  Env* env = this->env();
  ASSERT_TRUE(env->CreateDirs(this->Path("d/empty")).ok());
  for (const char* name : {"c2", "b", "c10", "a", "B"}) {
    ASSERT_TRUE(WriteString(env, this->Path(absl::StrCat("d/", name)), name).ok());
  }
  auto names = env->ListDir(this->Path("d"));
  ASSERT_TRUE(names.ok()) << names.status();
  EXPECT_THAT(*names, ElementsAre("B", "a", "b", "c10", "c2", "empty"));
  EXPECT_THAT(*env->ListDir(this->Path("d/empty")), IsEmpty());
}

TYPED_TEST(EnvContractTest, NewWritableFileTruncates) {
  const std::string path = this->Path("t");
  ASSERT_TRUE(WriteString(this->env(), path, "a long first version").ok());
  ASSERT_TRUE(WriteString(this->env(), path, "short").ok());
  EXPECT_EQ(Contents(this->env(), path), "short");
}

TYPED_TEST(EnvContractTest, RenameReplacesTarget) {
  Env* env = this->env();
  ASSERT_TRUE(WriteString(env, this->Path("x"), "old").ok());
  ASSERT_TRUE(WriteString(env, this->Path("y"), "new").ok());
  ASSERT_TRUE(env->RenameFile(this->Path("y"), this->Path("x")).ok());
  EXPECT_EQ(Contents(env, this->Path("x")), "new");
  EXPECT_FALSE(env->FileExists(this->Path("y")));
  EXPECT_THAT(*env->ListDir(this->Path("")), ElementsAre("x"));
  ASSERT_TRUE(env->RenameFile(this->Path("x"), this->Path("x")).ok());  // onto itself: no-op
  EXPECT_EQ(Contents(env, this->Path("x")), "new");
}

TYPED_TEST(EnvContractTest, RenameMovesDirectoryWithContents) {
  Env* env = this->env();
  ASSERT_TRUE(env->CreateDirs(this->Path("step.tmp/sub")).ok());
  ASSERT_TRUE(WriteString(env, this->Path("step.tmp/sub/w"), "weights").ok());
  ASSERT_TRUE(env->RenameFile(this->Path("step.tmp"), this->Path("step")).ok());
  EXPECT_FALSE(env->FileExists(this->Path("step.tmp")));
  EXPECT_EQ(Contents(env, this->Path("step/sub/w")), "weights");
  // Onto an empty directory: replaced.
  ASSERT_TRUE(env->CreateDirs(this->Path("empty")).ok());
  ASSERT_TRUE(env->RenameFile(this->Path("step"), this->Path("empty")).ok());
  EXPECT_EQ(Contents(env, this->Path("empty/sub/w")), "weights");
}

TYPED_TEST(EnvContractTest, DeleteFileAndDeleteRecursively) {
  Env* env = this->env();
  ASSERT_TRUE(env->CreateDirs(this->Path("tree/a/b")).ok());
  ASSERT_TRUE(WriteString(env, this->Path("tree/a/b/f"), "1").ok());
  ASSERT_TRUE(WriteString(env, this->Path("tree/g"), "2").ok());
  ASSERT_TRUE(WriteString(env, this->Path("keep"), "3").ok());
  ASSERT_TRUE(env->DeleteFile(this->Path("tree/g")).ok());
  EXPECT_FALSE(env->FileExists(this->Path("tree/g")));
  ASSERT_TRUE(env->DeleteRecursively(this->Path("tree")).ok());
  EXPECT_FALSE(env->FileExists(this->Path("tree")));
  EXPECT_FALSE(env->FileExists(this->Path("tree/a/b/f")));
  EXPECT_THAT(*env->ListDir(this->Path("")), ElementsAre("keep"));
  ASSERT_TRUE(env->DeleteRecursively(this->Path("keep")).ok());  // a plain file too
  EXPECT_FALSE(env->FileExists(this->Path("keep")));
}

TYPED_TEST(EnvContractTest, WriteFileAtomicReplacesAndLeavesNoTmp) {
  Env* env = this->env();
  const std::string path = this->Path("latest");
  ASSERT_TRUE(WriteFileAtomic(env, path, "step 10").ok());
  EXPECT_EQ(Contents(env, path), "step 10");
  ASSERT_TRUE(WriteFileAtomic(env, path, "step 20").ok());
  EXPECT_EQ(Contents(env, path), "step 20");
  ASSERT_TRUE(WriteFileAtomic(env, this->Path("empty"), "").ok());
  EXPECT_EQ(Contents(env, this->Path("empty")), "");
  EXPECT_THAT(*env->ListDir(this->Path("")), ElementsAre("empty", "latest"));
  EXPECT_TRUE(env->SyncDir(this->Path("")).ok());
}

TYPED_TEST(EnvContractTest, ConcurrentWritersInOneDirectory) {
  Env* env = this->env();
  constexpr int kThreads = 4, kFiles = 25;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kFiles; ++i) {
        std::string name = absl::StrCat("t", t, "_", i);
        EXPECT_TRUE(WriteFileAtomic(env, this->Path(name), name).ok());
      }
    });
  }
  for (std::thread& th : threads) th.join();
  auto names = env->ListDir(this->Path(""));
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(names->size(), size_t{kThreads * kFiles});
  for (const std::string& name : *names) EXPECT_EQ(Contents(env, this->Path(name)), name);
}

TYPED_TEST(EnvContractTest, ClockMovesOnSleep) {
  Env* env = this->env();
  int64_t t0 = env->NowMicros();
  env->SleepForMicros(2000);
  int64_t t1 = env->NowMicros();
  if (TypeParam::kFakeClock) {
    EXPECT_EQ(t1 - t0, 2000);
  } else {
    EXPECT_GE(t1 - t0, 2000);
  }
}

TEST(EnvPathsTest, JoinPathAndDirName) {
  EXPECT_EQ(JoinPath("a", "b"), "a/b");
  EXPECT_EQ(JoinPath("a/", "b"), "a/b");
  EXPECT_EQ(JoinPath("", "b"), "b");
  EXPECT_EQ(JoinPath("a", ""), "a");
  EXPECT_EQ(DirName("/x/y/z"), "/x/y");
  EXPECT_EQ(DirName("/z"), "/");
  EXPECT_EQ(DirName("z"), ".");
}

// A FIFO would block open() and read() forever and a device such as /dev/zero never ends: the
// POSIX Env refuses both before reading a byte, naming the path and what it is.
TEST(PosixEnvTest, FifosAndDevicesAreRefusedWithoutBlocking) {
  const std::string dir = ::testing::TempDir() + "/posix_env_fifo";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string fifo = dir + "/pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  absl::Status s = Env::Default()->NewRandomAccessFile(fifo).status();
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr(fifo + " is a FIFO, not a regular file"));
  s = ReadFileToString(Env::Default(), "/dev/zero").status();
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("/dev/zero is a device, not a regular file"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace accel
