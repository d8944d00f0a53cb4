// The fault-injection matrix: a failure or a crash (with and without a power loss after it) at
// every mutating call of a save leaves `latest` naming a complete checkpoint, the old or the
// new one, whose every file verifies; and the next save after it succeeds.
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/checkpoint/checkpoint_test_util.h"
#include "engine/checkpoint/sharded_checkpoint.h"
#include "engine/checkpoint/step_reader.h"
#include "engine/testing/fault_env.h"
#include "engine/testing/mem_env.h"
#include "gtest/gtest.h"

namespace accel::checkpoint {
namespace {

using namespace ::accel::checkpoint::testing;  // NOLINT: the helpers of this test family
using ::accel::testing::FaultEnv;
using ::accel::testing::FaultOp;
using ::accel::testing::FaultOpName;
using ::accel::testing::kAllFaultOps;
using ::accel::testing::MemEnv;

constexpr char kDir[] = "/ckpt";

struct Scenario {
  std::function<void(Env*)> setup;                    // the durable start state
  std::function<absl::Status(Env*)> save;             // the save under test
  std::vector<std::pair<int64_t, State>> acceptable;  // (step, state) latest may hold after it
  int64_t new_step;
  State new_state;
};

// What `latest` names in `env` must be complete: metadata, every file verifying, contents one
// of the acceptable states.
void ExpectLatestComplete(Env* env, const Scenario& sc, const std::string& where) {
  const model::ModelLayout layout = SmallLayout();
  auto step_dir = LatestStepDir(env, kDir);
  ASSERT_TRUE(step_dir.ok()) << where << ": " << step_dir.status();
  auto reader = StepReader::Open(env, *step_dir);
  ASSERT_TRUE(reader.ok()) << where << ": " << reader.status();
  for (int r = 0; r < (*reader)->metadata().meta.world_size; ++r) {
    ASSERT_TRUE((*reader)->VerifyFile(r).ok()) << where << ": " << (*reader)->VerifyFile(r);
  }
  auto state = LoadAll(env, *step_dir, layout);
  ASSERT_TRUE(state.ok()) << where << ": " << state.status();
  bool matched = false;
  for (const auto& [step, want] : sc.acceptable) {
    if (*step_dir == StepDir(kDir, step) && *state == want) matched = true;
  }
  EXPECT_TRUE(matched) << where << ": latest is " << *step_dir << " with unexpected contents";
}

// After whatever happened, a plain save of the new step succeeds and becomes latest.
void ExpectNextSaveSucceeds(MemEnv* mem, const Scenario& sc, const std::string& where) {
  ASSERT_TRUE(sc.save(mem).ok()) << where;
  auto latest = LatestStepDir(mem, kDir);
  ASSERT_TRUE(latest.ok()) << where << ": " << latest.status();
  EXPECT_EQ(*latest, StepDir(kDir, sc.new_step)) << where;
  auto state = LoadAll(mem, *latest, SmallLayout());
  ASSERT_TRUE(state.ok()) << where << ": " << state.status();
  EXPECT_TRUE(*state == sc.new_state) << where;
}

int64_t ProbeMutations(const Scenario& sc) {
  MemEnv mem;
  sc.setup(&mem);
  mem.SyncAll();
  FaultEnv probe(&mem);
  EXPECT_TRUE(sc.save(&probe).ok());
  EXPECT_EQ(*LatestStepDir(&mem, kDir), StepDir(kDir, sc.new_step));
  return probe.TotalCount();
}

void RunCrashMatrix(const Scenario& sc) {
  const int64_t total = ProbeMutations(sc);
  ASSERT_GT(total, 20);
  for (int64_t n = 0; n <= total; ++n) {
    for (bool power_loss : {false, true}) {
      const std::string where = absl::StrCat("crash after ", n, " of ", total, " mutations",
                                             power_loss ? " + power loss" : "");
      MemEnv mem;
      sc.setup(&mem);
      mem.SyncAll();
      FaultEnv env(&mem);
      env.CrashAfterMutations(n);
      const absl::Status s = sc.save(&env);
      // A crash while pruning (the last mutations) is logged, not returned: the save is done.
      if (n >= total) {
        EXPECT_TRUE(s.ok()) << where << ": " << s;
      }
      if (power_loss) mem.SimulatePowerLoss();
      ExpectLatestComplete(&mem, sc, where);
      if (::testing::Test::HasFailure()) return;
      // A save that returned OK is durable: nothing of it may be lost.
      if (s.ok()) {
        EXPECT_EQ(LatestStepDir(&mem, kDir).value(), StepDir(kDir, sc.new_step)) << where;
      }
      ExpectNextSaveSucceeds(&mem, sc, where);
      if (::testing::Test::HasFailure()) return;
    }
  }
}

void RunFailureMatrix(const Scenario& sc) {
  MemEnv probe_mem;
  sc.setup(&probe_mem);
  FaultEnv probe(&probe_mem);
  ASSERT_TRUE(sc.save(&probe).ok());
  int64_t points = 0;
  for (FaultOp op : kAllFaultOps) {
    for (int64_t i = 0; i < probe.Count(op); ++i, ++points) {
      const std::string where = absl::StrCat("failed ", std::string(FaultOpName(op)), " #", i);
      MemEnv mem;
      sc.setup(&mem);
      mem.SyncAll();
      FaultEnv env(&mem);
      env.FailNth(op, i);
      (void)sc.save(&env);  // may succeed: a failed prune is logged, not returned
      ExpectLatestComplete(&mem, sc, where);
      if (::testing::Test::HasFailure()) return;
      mem.SimulatePowerLoss();
      ExpectLatestComplete(&mem, sc, where + " + power loss");
      ExpectNextSaveSucceeds(&mem, sc, where);
      if (::testing::Test::HasFailure()) return;
    }
  }
  EXPECT_EQ(points, probe.TotalCount());
}

// Step 1 saved by 2 ranks; the save under test is step 2 by 3 ranks with keep_last 1, so the
// matrix covers the rank files, the commit, `latest` and the pruning of step 1.
Scenario NextStep() {
  const model::ModelLayout layout = SmallLayout();
  const State old_state(layout.num_params(), 1), new_state(layout.num_params(), 2);
  Scenario sc;
  sc.setup = [=](Env* env) { ASSERT_TRUE(SaveAll(env, kDir, layout, old_state, 1, 2, 1).ok()); };
  sc.save = [=](Env* env) { return SaveAll(env, kDir, layout, new_state, 2, 3, 1); };
  sc.acceptable = {{1, old_state}, {2, new_state}};
  sc.new_step = 2;
  sc.new_state = new_state;
  return sc;
}

// Steps 1 and 2 saved, latest = 2; a run resumed from step 1 saves step 2 again with other
// data: `latest` may name step 1, the old step 2 or the new one, never a torn directory.
Scenario SameStepAgain() {
  const model::ModelLayout layout = SmallLayout();
  const State s1(layout.num_params(), 1), old2(layout.num_params(), 2),
      new2(layout.num_params(), 22);
  Scenario sc;
  sc.setup = [=](Env* env) {
    ASSERT_TRUE(SaveAll(env, kDir, layout, s1, 1, 2, 0).ok());
    ASSERT_TRUE(SaveAll(env, kDir, layout, old2, 2, 2, 0).ok());
  };
  sc.save = [=](Env* env) { return SaveAll(env, kDir, layout, new2, 2, 4, 0); };
  sc.acceptable = {{1, s1}, {2, old2}, {2, new2}};
  sc.new_step = 2;
  sc.new_state = new2;
  return sc;
}

TEST(CheckpointCrashTest, CrashAtEveryPointOfASave) { RunCrashMatrix(NextStep()); }
TEST(CheckpointCrashTest, FailureAtEveryPointOfASave) { RunFailureMatrix(NextStep()); }
TEST(CheckpointCrashTest, CrashAtEveryPointOfReplacingTheLatestStep) {
  RunCrashMatrix(SameStepAgain());
}
TEST(CheckpointCrashTest, FailureAtEveryPointOfReplacingTheLatestStep) {
  RunFailureMatrix(SameStepAgain());
}

// The first save into a new checkpoint directory (its parent exists): before it completes
// there is no `latest`; once it returns, a power loss keeps it.
TEST(CheckpointCrashTest, FirstSaveIsDurableOnceItReturns) {
  const model::ModelLayout layout = SmallLayout();
  const State state(layout.num_params(), 3);
  MemEnv probe_mem;
  FaultEnv probe(&probe_mem);
  ASSERT_TRUE(SaveAll(&probe, "/a/ckpt", layout, state, 4, 2).ok());
  for (int64_t n = 0; n <= probe.TotalCount(); ++n) {
    MemEnv mem;
    ASSERT_TRUE(mem.CreateDirs("/a").ok());
    mem.SyncAll();
    FaultEnv env(&mem);
    env.CrashAfterMutations(n);
    const absl::Status s = SaveAll(&env, "/a/ckpt", layout, state, 4, 2);
    mem.SimulatePowerLoss();
    auto latest = LatestStepDir(&mem, "/a/ckpt");
    if (s.ok()) {
      ASSERT_TRUE(latest.ok()) << "n " << n << ": " << latest.status();
    }
    if (latest.ok()) {
      EXPECT_TRUE(*LoadAll(&mem, *latest, layout) == state) << "n " << n;
    } else {
      EXPECT_EQ(latest.status().code(), absl::StatusCode::kNotFound) << latest.status();
    }
  }
}

}  // namespace
}  // namespace accel::checkpoint
