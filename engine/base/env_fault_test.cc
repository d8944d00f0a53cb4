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
