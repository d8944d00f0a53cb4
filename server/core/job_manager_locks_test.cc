// JobManager's lock rule (job_manager.h, "Threading"): no state-store write happens with the
// state lock held. A gate in the EventLog's observer (called inside every event write, after
// SQLite committed) holds one write open; meanwhile another thread's calls that take only the
// state lock (the cluster view, worker authentication, a heartbeat, the rendezvous store) must
// complete within a deadline. With the state lock held across the write they would wait for the
// gate, past the deadline (the gate then opens by itself, so a failing test does not hang).
#include <atomic>
#include <future>
#include <thread>

#include "absl/synchronization/notification.h"
#include "server/core/job_manager.h"
#include "server/core/job_manager_test_fixture.h"

namespace accel::server {
namespace {

using testing::JobManagerTest;

constexpr auto kDeadline = std::chrono::seconds(2);
const absl::Duration kGateGivesUp = absl::Seconds(10);

// Blocks the next event write (once armed) until Open(), or kGateGivesUp.
class WriteGate {
 public:
  explicit WriteGate(EventLog* log) {
    log->SetObserver([this](const std::vector<Event>&) {
      if (!armed_.exchange(false)) return;
      entered_.Notify();
      open_.WaitForNotificationWithTimeout(kGateGivesUp);
    });
  }
  void Arm() { armed_ = true; }
  bool WaitEntered() { return entered_.WaitForNotificationWithTimeout(absl::Seconds(5)); }
  void Open() {
    if (!open_.HasBeenNotified()) open_.Notify();
  }

 private:
  std::atomic<bool> armed_{false};
  absl::Notification entered_;
  absl::Notification open_;
};

class JobManagerLocksTest : public JobManagerTest {
 protected:
  // Runs `writer` on a thread of its own with the gate armed; once it is inside the write, runs
  // `probe` on another thread and expects it to finish within kDeadline.
  void ExpectProbeFinishesDuringWrite(const std::function<void()>& writer,
                                      const std::function<void()>& probe) {
    WriteGate& gate = Gate();
    gate.Arm();
    std::thread w(writer);
    ASSERT_TRUE(gate.WaitEntered()) << "the writer never reached the event log";
    std::future<void> done = std::async(std::launch::async, probe);
    const bool in_time = done.wait_for(kDeadline) == std::future_status::ready;
    gate.Open();
    done.get();
    w.join();
    EXPECT_TRUE(in_time) << "a state-lock-only call waited for a state-store write";
  }
  WriteGate& Gate() {
    if (gate_ == nullptr) gate_ = std::make_unique<WriteGate>(log_.get());
    return *gate_;
  }
  void TearDown() override {
    if (gate_ != nullptr) gate_->Open();
  }
  std::unique_ptr<WriteGate> gate_;
};

TEST_F(JobManagerLocksTest, SubmitsWriteDoesNotBlockTheClusterView) {
  Gate();
  ExpectProbeFinishesDuringWrite(
      [&] { EXPECT_TRUE(manager_->Submit(Job(1)).ok()); },
      [&] { EXPECT_EQ(manager_->Cluster().total_slots, 3); });
  EXPECT_EQ(State("job-1"), JobState::kQueued);
}

TEST_F(JobManagerLocksTest, TicksWritesDoNotBlockWorkersOfAnotherJob) {
  Gate();
  auto running = manager_->Submit(Job(1));
  ASSERT_TRUE(running.ok());
  manager_->Tick();
  RegisterAll(running->id);
  ASSERT_EQ(State(running->id), JobState::kRunning);
  const std::string token = manager_->TokenForTest(running->id);
  auto queued = manager_->Submit(Job(2));
  ASSERT_TRUE(queued.ok());
  // The Tick blocks inside the second job's STARTING write.
  ExpectProbeFinishesDuringWrite([&] { manager_->Tick(); }, [&] {
    auto who = manager_->AuthenticateWorker(token);
    ASSERT_TRUE(who.ok()) << who.status();
    EXPECT_TRUE(manager_->Report(*who, 0, {}).ok());  // a heartbeat
    EXPECT_TRUE(manager_->Kv(*who).ok());
    EXPECT_EQ(manager_->TokenForTest(running->id), token);
  });
  EXPECT_EQ(State(queued->id), JobState::kStarting);
}

TEST_F(JobManagerLocksTest, AReportsEventWriteDoesNotBlockHeartbeats) {
  Gate();
  auto job = manager_->Submit(Job(2));
  ASSERT_TRUE(job.ok());
  manager_->Tick();
  RegisterAll(job->id);
  auto who = *manager_->AuthenticateWorker(manager_->TokenForTest(job->id));
  WorkerReport metrics{EventKind::kMetrics, R"({"step":"7"})", std::nullopt, 7};
  ExpectProbeFinishesDuringWrite(
      [&] { EXPECT_TRUE(manager_->Report(who, 0, {metrics}).ok()); },
      [&] { EXPECT_TRUE(manager_->Report(who, 1, {}).ok()); });
  EXPECT_EQ(registry_->Get(job->id)->last_step, 7);
}

TEST_F(JobManagerLocksTest, AnEndingsWriteDoesNotBlockTheClusterView) {
  Gate();
  auto job = manager_->Submit(Job(1));
  ASSERT_TRUE(job.ok());
  manager_->Tick();
  RegisterAll(job->id);
  runner_->Exit(job->id, 1, 0, 0);
  // The Tick blocks inside the SUCCEEDED write; the slot is free and the token gone already.
  ExpectProbeFinishesDuringWrite([&] { manager_->Tick(); }, [&] {
    EXPECT_EQ(manager_->Cluster().free_slots, 3);
    EXPECT_FALSE(manager_->AuthenticateWorker("tok1").ok());
  });
  EXPECT_EQ(State(job->id), JobState::kSucceeded);
}

}  // namespace
}  // namespace accel::server
