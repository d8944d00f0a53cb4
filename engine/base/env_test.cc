// The Env contract, run against PosixEnv (in a temporary directory) and MemEnv alike; then
// MemEnv's power-loss model and FaultEnv's fault injection, ending with the property the
// checkpoint code relies on: WriteFileAtomic interrupted anywhere leaves the old or the new
// content, never a torn file.
#include "engine/base/env.h"

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/testing/fake_clock.h"
#include "engine/testing/fault_env.h"
#include "engine/testing/mem_env.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accel {
namespace {

using ::accel::testing::FakeClock;
using ::accel::testing::FaultEnv;
using ::accel::testing::FaultOp;
using ::accel::testing::MemEnv;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

absl::Status WriteString(Env* env, const std::string& path, std::string_view data,
                         bool sync = false) {
  absl::StatusOr<std::unique_ptr<WritableFile>> file = env->NewWritableFile(path);
  if (!file.ok()) return file.status();
  if (absl::Status s = (*file)->Append(data); !s.ok()) return s;
  if (sync) {
    if (absl::Status s = (*file)->Sync(); !s.ok()) return s;
  }
  return (*file)->Close();
}

// The file's content, or nullopt when it does not exist.
std::optional<std::string> Contents(Env* env, const std::string& path) {
  absl::StatusOr<std::string> data = ReadFileToString(env, path);
  if (absl::IsNotFound(data.status())) return std::nullopt;
  EXPECT_TRUE(data.ok()) << data.status();
  return data.ok() ? std::optional<std::string>(*data) : std::nullopt;
}

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

// ---- MemEnv: what survives a power loss -------------------------------------------------------

class MemEnvPowerLossTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(env_.CreateDirs("/ckpt").ok());
    env_.SyncAll();
  }
  MemEnv env_;
};

TEST_F(MemEnvPowerLossTest, UnsyncedTailIsLostSyncedPrefixKept) {
  auto file = env_.NewWritableFile("/ckpt/log");
  ASSERT_TRUE(file.ok());
  ASSERT_TRUE((*file)->Append("synced;").ok());
  ASSERT_TRUE((*file)->Sync().ok());
  ASSERT_TRUE((*file)->Append("not synced").ok());
  ASSERT_TRUE(env_.SyncDir("/ckpt").ok());
  EXPECT_EQ(Contents(&env_, "/ckpt/log"), "synced;not synced");
  env_.SimulatePowerLoss();
  EXPECT_EQ(Contents(&env_, "/ckpt/log"), "synced;") << env_.DebugString();
  // The process that held the file is gone.
  EXPECT_TRUE(absl::IsFailedPrecondition((*file)->Append("x")));
}

TEST_F(MemEnvPowerLossTest, NeverSyncedFileIsEmpty) {
  ASSERT_TRUE(WriteString(&env_, "/ckpt/f", "data").ok());
  ASSERT_TRUE(env_.SyncDir("/ckpt").ok());
  env_.SimulatePowerLoss();
  EXPECT_EQ(Contents(&env_, "/ckpt/f"), "");
}

TEST_F(MemEnvPowerLossTest, NewFileWithoutSyncDirVanishes) {
  ASSERT_TRUE(WriteString(&env_, "/ckpt/f", "data", /*sync=*/true).ok());
  env_.SimulatePowerLoss();
  EXPECT_FALSE(env_.FileExists("/ckpt/f"));
}

TEST_F(MemEnvPowerLossTest, RenameWithoutSyncDirIsUndone) {
  ASSERT_TRUE(WriteString(&env_, "/ckpt/latest", "old", true).ok());
  ASSERT_TRUE(WriteString(&env_, "/ckpt/latest.tmp", "new", true).ok());
  ASSERT_TRUE(env_.SyncDir("/ckpt").ok());
  ASSERT_TRUE(env_.RenameFile("/ckpt/latest.tmp", "/ckpt/latest").ok());
  EXPECT_EQ(Contents(&env_, "/ckpt/latest"), "new");
  env_.SimulatePowerLoss();
  EXPECT_EQ(Contents(&env_, "/ckpt/latest"), "old");
  EXPECT_EQ(Contents(&env_, "/ckpt/latest.tmp"), "new");

  ASSERT_TRUE(env_.RenameFile("/ckpt/latest.tmp", "/ckpt/latest").ok());
  ASSERT_TRUE(env_.SyncDir("/ckpt").ok());
  env_.SimulatePowerLoss();
  EXPECT_EQ(Contents(&env_, "/ckpt/latest"), "new");
  EXPECT_FALSE(env_.FileExists("/ckpt/latest.tmp"));
}

TEST_F(MemEnvPowerLossTest, DeleteWithoutSyncDirIsUndone) {
  ASSERT_TRUE(WriteString(&env_, "/ckpt/f", "keep me", true).ok());
  ASSERT_TRUE(env_.SyncDir("/ckpt").ok());
  ASSERT_TRUE(env_.DeleteFile("/ckpt/f").ok());
  env_.SimulatePowerLoss();
  EXPECT_EQ(Contents(&env_, "/ckpt/f"), "keep me");
  ASSERT_TRUE(env_.DeleteFile("/ckpt/f").ok());
  ASSERT_TRUE(env_.SyncDir("/ckpt").ok());
  env_.SimulatePowerLoss();
  EXPECT_FALSE(env_.FileExists("/ckpt/f"));
}

TEST_F(MemEnvPowerLossTest, NewDirectoryNeedsParentSyncAndRenameCarriesContents) {
  ASSERT_TRUE(env_.CreateDirs("/ckpt/step.tmp").ok());
  ASSERT_TRUE(WriteString(&env_, "/ckpt/step.tmp/w", "weights", true).ok());
  ASSERT_TRUE(env_.SyncDir("/ckpt/step.tmp").ok());
  env_.SimulatePowerLoss();
  EXPECT_FALSE(env_.FileExists("/ckpt/step.tmp"));  // its parent was never synced

  ASSERT_TRUE(env_.CreateDirs("/ckpt/step.tmp").ok());
  ASSERT_TRUE(WriteString(&env_, "/ckpt/step.tmp/w", "weights", true).ok());
  ASSERT_TRUE(env_.SyncDir("/ckpt/step.tmp").ok());
  ASSERT_TRUE(env_.RenameFile("/ckpt/step.tmp", "/ckpt/step").ok());
  ASSERT_TRUE(env_.SyncDir("/ckpt").ok());
  env_.SimulatePowerLoss();
  EXPECT_EQ(Contents(&env_, "/ckpt/step/w"), "weights") << env_.DebugString();
  EXPECT_THAT(*env_.ListDir("/ckpt"), ElementsAre("step"));
}

TEST_F(MemEnvPowerLossTest, TruncationIsDurableAtOnce) {
  ASSERT_TRUE(WriteString(&env_, "/ckpt/f", "precious", true).ok());
  ASSERT_TRUE(env_.SyncDir("/ckpt").ok());
  ASSERT_TRUE(WriteString(&env_, "/ckpt/f", "rewritten").ok());  // in place, no Sync
  env_.SimulatePowerLoss();
  EXPECT_EQ(Contents(&env_, "/ckpt/f"), "");  // ext4's zero-length file
}

TEST_F(MemEnvPowerLossTest, WriteFileAtomicResultSurvives) {
  ASSERT_TRUE(WriteFileAtomic(&env_, "/ckpt/latest", "step 1").ok());
  ASSERT_TRUE(WriteFileAtomic(&env_, "/ckpt/latest", "step 2").ok());
  env_.SimulatePowerLoss();
  EXPECT_EQ(Contents(&env_, "/ckpt/latest"), "step 2");
  EXPECT_THAT(*env_.ListDir("/ckpt"), ElementsAre("latest"));
}

TEST_F(MemEnvPowerLossTest, DirectoryOnDiskUnderTwoNamesStaysATree) {
  // /ckpt/a/b; move b to /ckpt/b (synced), then a into b (only b synced): on disk, a holds b
  // and b holds a. The power loss must terminate and keep one name for each directory.
  ASSERT_TRUE(env_.CreateDirs("/ckpt/a/b").ok());
  env_.SyncAll();
  ASSERT_TRUE(env_.RenameFile("/ckpt/a/b", "/ckpt/b").ok());
  ASSERT_TRUE(env_.SyncDir("/ckpt").ok());
  ASSERT_TRUE(env_.RenameFile("/ckpt/a", "/ckpt/b/a").ok());
  ASSERT_TRUE(env_.SyncDir("/ckpt/b").ok());
  env_.SimulatePowerLoss();
  EXPECT_TRUE(env_.FileExists("/ckpt/a")) << env_.DebugString();
  EXPECT_NE(env_.FileExists("/ckpt/b"), env_.FileExists("/ckpt/a/b")) << env_.DebugString();
  EXPECT_FALSE(env_.FileExists("/ckpt/a/b/a"));
  EXPECT_FALSE(env_.FileExists("/ckpt/b/a"));
}

TEST(MemEnvTest, PathsAndClock) {
  FakeClock clock(/*start_micros=*/100);
  MemEnv env(&clock);
  ASSERT_TRUE(env.CreateDirs("x//y/./z").ok());
  EXPECT_TRUE(env.FileExists("/x/y/z"));
  ASSERT_TRUE(WriteString(&env, "/x/y/f", "1").ok());
  EXPECT_EQ(Contents(&env, "x/y/f"), "1");
  EXPECT_THAT(*env.ListDir("."), ElementsAre("x"));
  EXPECT_TRUE(absl::IsInvalidArgument(env.CreateDirs("/x/../y")));
  EXPECT_EQ(env.NowMicros(), 100);
  clock.Advance(50);
  env.SleepForMicros(25);
  EXPECT_EQ(env.NowMicros(), 175);
  EXPECT_EQ(env.clock(), &clock);
}

TEST(MemEnvTest, ReaderOfTruncatedFileGetsDataLoss) {
  MemEnv env;
  ASSERT_TRUE(WriteString(&env, "/f", "0123456789").ok());
  auto reader = env.NewRandomAccessFile("/f");
  ASSERT_TRUE(reader.ok());
  ASSERT_TRUE(WriteString(&env, "/f", "01").ok());
  char buf[4];
  absl::Status s = (*reader)->Read(4, 4, buf);
  EXPECT_TRUE(absl::IsDataLoss(s)) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("/f"));
}

// ---- FaultEnv
// ------------------------------------------------------------------------------------

TEST(FaultEnvTest, CountsEveryOperationKind) {
  MemEnv mem;
  FaultEnv env(&mem);
  ASSERT_TRUE(env.CreateDirs("/d").ok());
  ASSERT_TRUE(WriteFileAtomic(&env, "/d/a", "1").ok());
  ASSERT_TRUE(WriteFileAtomic(&env, "/d/b", "2").ok());
  ASSERT_TRUE(env.DeleteFile("/d/a").ok());
  ASSERT_TRUE(env.DeleteRecursively("/d").ok());
  EXPECT_TRUE(env.ListDir("/").ok());  // reads are not counted
  EXPECT_EQ(env.Count(FaultOp::kCreateDirs), 1);
  for (FaultOp op : {FaultOp::kCreate, FaultOp::kAppend, FaultOp::kSync, FaultOp::kClose,
                     FaultOp::kRename, FaultOp::kSyncDir, FaultOp::kDelete}) {
    EXPECT_EQ(env.Count(op), 2) << FaultOpName(op);
  }
  EXPECT_EQ(env.TotalCount(), 15);
  EXPECT_EQ(env.InjectedFailures(), 0);
  env.ResetCounts();
  EXPECT_EQ(env.TotalCount(), 0);
}

TEST(FaultEnvTest, FailNthFailsExactlyThatOccurrence) {
  MemEnv mem;
  FaultEnv env(&mem);
  env.FailNth(FaultOp::kAppend, 1);
  auto file = env.NewWritableFile("/f");
  ASSERT_TRUE(file.ok());
  EXPECT_TRUE((*file)->Append("a").ok());
  absl::Status s = (*file)->Append("b");
  EXPECT_TRUE(absl::IsInternal(s));
  EXPECT_EQ(s.message(), "injected fault: append /f");
  EXPECT_TRUE((*file)->Append("c").ok());
  EXPECT_TRUE((*file)->Close().ok());
  EXPECT_EQ(Contents(&mem, "/f"), "ac");  // the failed append never reached MemEnv
  EXPECT_EQ(env.Count(FaultOp::kAppend), 3);
  EXPECT_EQ(env.InjectedFailures(), 1);
  EXPECT_FALSE(env.crashed());
}

TEST(FaultEnvTest, FailFromFailsEveryLaterOccurrence) {
  MemEnv mem;
  FaultEnv env(&mem);
  env.FailFrom(FaultOp::kCreate, 2);
  EXPECT_TRUE(env.NewWritableFile("/a").ok());
  EXPECT_TRUE(env.NewWritableFile("/b").ok());
  absl::Status s = env.NewWritableFile("/c").status();
  EXPECT_EQ(s.message(), "injected fault: create /c");
  EXPECT_FALSE(env.NewWritableFile("/d").ok());
  EXPECT_FALSE(mem.FileExists("/c"));
  EXPECT_TRUE(env.RenameFile("/a", "/e").ok());  // other ops unaffected
  env.ClearFaults();
  EXPECT_TRUE(env.NewWritableFile("/d").ok());
}

TEST(FaultEnvTest, CrashAfterLetsThatOpThroughThenFailsEveryMutation) {
  MemEnv mem;
  ASSERT_TRUE(WriteFileAtomic(&mem, "/latest", "old").ok());
  FaultEnv env(&mem);
  env.CrashAfter(FaultOp::kRename, 0);
  absl::Status s = WriteFileAtomic(&env, "/latest", "new");
  EXPECT_THAT(std::string(s.message()), HasSubstr("injected fault: sync_dir"));
  EXPECT_TRUE(env.crashed());
  EXPECT_EQ(Contents(&env, "/latest"), "new");  // the rename happened; reads still work
  EXPECT_FALSE(env.CreateDirs("/x").ok());
  EXPECT_FALSE(env.DeleteFile("/latest").ok());
  mem.SimulatePowerLoss();
  EXPECT_EQ(Contents(&mem, "/latest"), "old");  // the rename was never made durable
}

TEST(FaultEnvTest, CrashAfterZeroMutationsFailsTheFirst) {
  MemEnv mem;
  FaultEnv env(&mem);
  env.CrashAfterMutations(1);
  EXPECT_TRUE(env.CreateDirs("/a").ok());
  EXPECT_FALSE(env.CreateDirs("/b").ok());
  env.ClearFaults();
  env.CrashAfterMutations(0);
  EXPECT_FALSE(env.CreateDirs("/c").ok());
  EXPECT_TRUE(env.crashed());
  EXPECT_TRUE(mem.FileExists("/a"));
  EXPECT_FALSE(mem.FileExists("/b"));
}

enum class Injection { kFailNth, kCrashAfter, kCrashAfterMutations };

// Runs WriteFileAtomic(path, "new") over a tree where path holds `old` (or nothing), with one
// injection, then a power loss; returns what is at path afterwards.
std::optional<std::string> AtomicWriteThenPowerLoss(const std::optional<std::string>& old,
                                                    Injection kind, FaultOp op, int64_t n,
                                                    bool* succeeded) {
  MemEnv mem;
  EXPECT_TRUE(mem.CreateDirs("/ckpt").ok());
  if (old) {
    EXPECT_TRUE(WriteFileAtomic(&mem, "/ckpt/latest", *old).ok());
  }
  mem.SyncAll();
  FaultEnv env(&mem);
  switch (kind) {
    case Injection::kFailNth:
      env.FailNth(op, n);
      break;
    case Injection::kCrashAfter:
      env.CrashAfter(op, n);
      break;
    case Injection::kCrashAfterMutations:
      env.CrashAfterMutations(n);
      break;
  }
  *succeeded = WriteFileAtomic(&env, "/ckpt/latest", "new content").ok();
  mem.SimulatePowerLoss();
  return Contents(&mem, "/ckpt/latest");
}

TEST(FaultEnvTest, WriteFileAtomicIsAllOrNothingAtEveryFaultPoint) {
  MemEnv probe_mem;
  FaultEnv probe(&probe_mem);
  ASSERT_TRUE(WriteFileAtomic(&probe, "/latest", "new content").ok());
  ASSERT_EQ(probe.TotalCount(), 6);

  for (std::optional<std::string> old :
       {std::optional<std::string>("old content"), std::optional<std::string>()}) {
    int saw_old = 0, saw_new = 0, points = 0;
    auto check = [&](Injection kind, FaultOp op, int64_t n) {
      bool ok = false;
      std::optional<std::string> got = AtomicWriteThenPowerLoss(old, kind, op, n, &ok);
      std::string where = absl::StrCat("injection ", static_cast<int>(kind), " op ",
                                       std::string(FaultOpName(op)), " n ", n);
      ++points;
      if (got == old) {
        ++saw_old;
        EXPECT_FALSE(ok) << where << ": reported success but the write did not survive";
      } else {
        EXPECT_EQ(got, "new content") << where << ": torn file";
        ++saw_new;
      }
    };
    for (FaultOp op : ::accel::testing::kAllFaultOps) {
      for (int64_t n = 0; n < probe.Count(op); ++n) {
        check(Injection::kFailNth, op, n);
        check(Injection::kCrashAfter, op, n);
      }
    }
    for (int64_t n = 0; n <= probe.TotalCount(); ++n) {
      check(Injection::kCrashAfterMutations, FaultOp::kCreate, n);
    }
    EXPECT_EQ(points, 2 * 6 + 7);
    EXPECT_GT(saw_old, 0);
    EXPECT_GT(saw_new, 0);  // crashing after the final SyncDir keeps the new content
  }
}

// The same harness catches a write that is not crash-safe: overwriting in place.
TEST(FaultEnvTest, InPlaceOverwriteIsCaughtTorn) {
  int torn = 0;
  for (int64_t n = 0; n <= 4; ++n) {
    MemEnv mem;
    ASSERT_TRUE(WriteFileAtomic(&mem, "/latest", "old content").ok());
    mem.SyncAll();
    FaultEnv env(&mem);
    env.CrashAfterMutations(n);
    (void)WriteString(&env, "/latest", "new content", /*sync=*/true);
    mem.SimulatePowerLoss();
    std::optional<std::string> got = Contents(&mem, "/latest");
    if (got != "old content" && got != "new content") ++torn;
  }
  EXPECT_GT(torn, 0);
}

}  // namespace
}  // namespace accel
