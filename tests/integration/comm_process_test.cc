// Ranks as separate processes (fork) over gloo TCP on 127.0.0.1, meeting through a FileStore:
// the cross-process rendezvous works, and a peer killed with SIGKILL turns the survivors'
// operations into Unavailable well within the deadline instead of a hang.
//
// Every test forks before it creates any thread, and children report through their exit code
// (no gtest in a child).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "engine/comm/communicator.h"
#include "engine/comm/file_store.h"
#include "engine/comm/gloo_communicator.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accel::comm {
namespace {

using ::testing::HasSubstr;

constexpr absl::Duration kTimeout = absl::Seconds(5);

std::string FreshDir() {
  std::string tmpl = ::testing::TempDir() + "/comm_process_test_XXXXXX";
  EXPECT_NE(::mkdtemp(tmpl.data()), nullptr);
  return tmpl;
}

// Children that are SIGKILLed and reaped if a test ends early.
class Children {
 public:
  ~Children() {
    for (pid_t pid : pids_) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
  // Runs body in a child process, which exits with body's return value.
  pid_t Spawn(const std::function<int()>& body) {
    pid_t pid = ::fork();
    if (pid == 0) ::_exit(body());
    if (pid > 0) pids_.push_back(pid);
    return pid;
  }
  // Exit code, or 128 + signal number.
  int Reap(pid_t pid) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    pids_.erase(std::remove(pids_.begin(), pids_.end(), pid), pids_.end());
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  void Kill(pid_t pid) { ::kill(pid, SIGKILL); }

 private:
  std::vector<pid_t> pids_;
};

absl::StatusOr<std::unique_ptr<Communicator>> Join(const std::string& dir, int rank, int size,
                                                   std::unique_ptr<FileStore>* store) {
  absl::StatusOr<std::unique_ptr<FileStore>> opened = FileStore::Open(dir);
  if (!opened.ok()) return opened.status();
  *store = *std::move(opened);
  GlooOptions options;
  options.timeout = kTimeout;
  return CreateGlooCommunicator(store->get(), "job", rank, size, options);
}

// All ranks contribute rank + 1 to every element, so the sum is size·(size+1)/2 everywhere.
absl::Status AllReduceAndCheck(Communicator& comm) {
  std::vector<float> buf(1001, static_cast<float>(comm.rank() + 1));
  absl::Status st = comm.AllReduce(buf.data(), buf.size(), DType::kF32)->Wait();
  if (!st.ok()) return st;
  const float want = comm.size() * (comm.size() + 1) / 2.f;
  for (float v : buf) {
    if (v != want) return absl::InternalError("wrong sum");
  }
  return absl::OkStatus();
}

TEST(CommProcessTest, TwoProcessesRendezvousThroughAFileStoreAndAllReduce) {
  const std::string dir = FreshDir();
  Children children;
  pid_t child = children.Spawn([&] {
    std::unique_ptr<FileStore> store;
    auto comm = Join(dir, 1, 2, &store);
    if (!comm.ok()) return 10;
    if (!AllReduceAndCheck(**comm).ok()) return 11;
    std::vector<uint16_t> half(5, FloatToBf16(0.5f));
    if (!(*comm)->AllReduce(half.data(), half.size(), DType::kBF16)->Wait().ok()) return 12;
    return Bf16ToFloat(half[4]) == 1.f ? 0 : 13;
  });
  ASSERT_GT(child, 0);
  std::unique_ptr<FileStore> store;
  auto comm = Join(dir, 0, 2, &store);
  ASSERT_TRUE(comm.ok()) << comm.status();
  EXPECT_TRUE(AllReduceAndCheck(**comm).ok());
  std::vector<uint16_t> half(5, FloatToBf16(0.5f));
  ASSERT_TRUE((*comm)->AllReduce(half.data(), half.size(), DType::kBF16)->Wait().ok());
  EXPECT_EQ(Bf16ToFloat(half[0]), 1.f);
  EXPECT_EQ(children.Reap(child), 0);
}

// Three ranks; rank 2 is SIGKILLed while ranks 0 and 1 are inside an all-reduce that needs it.
// Both survivors fail with Unavailable long before the 5 s deadline, and rank 0 stays broken.
TEST(CommProcessTest, PeerKilledMidOperationGivesUnavailableBeforeTheDeadline) {
  const std::string dir = FreshDir();
  Children children;
  pid_t survivor = children.Spawn([&] {
    std::unique_ptr<FileStore> store;
    auto comm = Join(dir, 1, 3, &store);
    if (!comm.ok()) return 20;
    if (!AllReduceAndCheck(**comm).ok()) return 21;
    absl::Time start = absl::Now();
    absl::Status st = AllReduceAndCheck(**comm);
    if (st.code() != absl::StatusCode::kUnavailable) return 22;
    if (absl::Now() - start >= kTimeout) return 23;
    return 0;
  });
  pid_t victim = children.Spawn([&] {
    std::unique_ptr<FileStore> store;
    auto comm = Join(dir, 2, 3, &store);
    if (!comm.ok()) return 30;
    if (!AllReduceAndCheck(**comm).ok()) return 31;
    if (!store->Set("victim_ready", "1").ok()) return 32;
    ::pause();  // never joins the second all-reduce
    return 33;
  });
  ASSERT_GT(survivor, 0);
  ASSERT_GT(victim, 0);

  std::unique_ptr<FileStore> store;
  auto comm = Join(dir, 0, 3, &store);
  ASSERT_TRUE(comm.ok()) << comm.status();
  ASSERT_TRUE(AllReduceAndCheck(**comm).ok());
  std::vector<float> buf(1001, 1.f);
  std::shared_ptr<Work> work = (*comm)->AllReduce(buf.data(), buf.size(), DType::kF32);
  ASSERT_TRUE(store->Wait({"victim_ready"}, kTimeout).ok());
  absl::SleepFor(absl::Milliseconds(200));
  EXPECT_FALSE(work->Done());  // stuck on the victim, as intended
  absl::Time killed = absl::Now();
  children.Kill(victim);
  absl::Status st = work->Wait(kTimeout + absl::Seconds(2));
  const absl::Duration took = absl::Now() - killed;
  EXPECT_EQ(st.code(), absl::StatusCode::kUnavailable) << st;
  EXPECT_THAT(st.message(), HasSubstr("rank 2")) << st;
  EXPECT_LT(took, absl::Seconds(2)) << "the deadline is " << kTimeout;

  absl::Time again = absl::Now();
  EXPECT_EQ((*comm)->Barrier()->Wait(), st);
  EXPECT_LT(absl::Now() - again, absl::Milliseconds(500));

  EXPECT_EQ(children.Reap(victim), 128 + SIGKILL);
  EXPECT_EQ(children.Reap(survivor), 0) << "22: not Unavailable, 23: not before the deadline";
}

// A peer that died between operations: the next operation fails at once.
TEST(CommProcessTest, PeerKilledBetweenOperationsFailsTheNextOneAtOnce) {
  const std::string dir = FreshDir();
  Children children;
  pid_t victim = children.Spawn([&] {
    std::unique_ptr<FileStore> store;
    auto comm = Join(dir, 1, 2, &store);
    if (!comm.ok()) return 40;
    if (!AllReduceAndCheck(**comm).ok()) return 41;
    ::pause();
    return 42;
  });
  ASSERT_GT(victim, 0);
  std::unique_ptr<FileStore> store;
  auto comm = Join(dir, 0, 2, &store);
  ASSERT_TRUE(comm.ok()) << comm.status();
  ASSERT_TRUE(AllReduceAndCheck(**comm).ok());
  children.Kill(victim);
  EXPECT_EQ(children.Reap(victim), 128 + SIGKILL);
  absl::Time start = absl::Now();
  absl::Status st = AllReduceAndCheck(**comm);
  EXPECT_EQ(st.code(), absl::StatusCode::kUnavailable) << st;
  EXPECT_THAT(st.message(), HasSubstr("rank 1"));
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
}

}  // namespace
}  // namespace accel::comm
