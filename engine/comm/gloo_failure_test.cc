// Deadlines and failure: a peer that never joins, a silent peer, Work::Wait timeouts, broken
// communicators, destruction mid-operation, and ranks that disagree on an operation. Every
// failure must come back as a Status within the deadline, never as a hang or a crash.
#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "engine/comm/gloo_communicator.h"
#include "engine/comm/gloo_test_util.h"
#include "engine/comm/in_memory_store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accel::comm {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;
using testing::UniqueGroup;

GlooOptions WithTimeout(absl::Duration timeout) {
  GlooOptions options;
  options.timeout = timeout;
  return options;
}

// Two communicators of one group, created concurrently (creation is collective).
struct Pair {
  std::unique_ptr<Communicator> comm[2];
};

Pair MakePair(absl::Duration timeout0, absl::Duration timeout1) {
  InMemoryStore store;
  const std::string group = UniqueGroup("pair");
  Pair pair;
  absl::Status status[2];
  std::thread t([&] {
    auto c = CreateGlooCommunicator(&store, group, 1, 2, WithTimeout(timeout1));
    status[1] = c.status();
    if (c.ok()) pair.comm[1] = *std::move(c);
  });
  auto c = CreateGlooCommunicator(&store, group, 0, 2, WithTimeout(timeout0));
  status[0] = c.status();
  if (c.ok()) pair.comm[0] = *std::move(c);
  t.join();
  EXPECT_TRUE(status[0].ok()) << status[0];
  EXPECT_TRUE(status[1].ok()) << status[1];
  return pair;
}

TEST(GlooFailureTest, BadArgumentsAreInvalidArgument) {
  InMemoryStore store;
  EXPECT_EQ(CreateGlooCommunicator(nullptr, "g", 0, 1).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CreateGlooCommunicator(&store, "g", 2, 2).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CreateGlooCommunicator(&store, "g", 0, 0).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CreateGlooCommunicator(&store, "", 0, 1).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      CreateGlooCommunicator(&store, "g", 0, 1, WithTimeout(absl::ZeroDuration())).status().code(),
      absl::StatusCode::kInvalidArgument);
}

// Rank 3 of 4 never creates its communicator: the others' creation fails with
// DeadlineExceeded naming rank 3, within the deadline plus scheduling slack.
TEST(GlooFailureTest, PeerThatNeverJoinsFailsCreationWithinTheDeadline) {
  InMemoryStore store;
  const std::string group = UniqueGroup("absent");
  const absl::Duration timeout = absl::Milliseconds(1500);
  std::vector<absl::Status> status(3);
  std::vector<absl::Duration> took(3);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < 3; ++rank) {
    threads.emplace_back([&, rank] {
      absl::Time start = absl::Now();
      status[rank] = CreateGlooCommunicator(&store, group, rank, 4, WithTimeout(timeout)).status();
      took[rank] = absl::Now() - start;
    });
  }
  for (auto& t : threads) t.join();
  for (int rank = 0; rank < 3; ++rank) {
    EXPECT_EQ(status[rank].code(), absl::StatusCode::kDeadlineExceeded) << status[rank];
    EXPECT_THAT(status[rank].message(), HasSubstr("rank 3 did not join")) << status[rank];
    EXPECT_LT(took[rank], timeout + absl::Seconds(2)) << "rank " << rank;
  }
}

// Rank 1 joins but never issues the operation: rank 0's all-reduce ends DeadlineExceeded at its
// deadline, naming rank 1; rank 0 is then broken (later operations fail at once with the same
// error), and rank 1, whose own deadline is far away, learns of it at once (Unavailable) because
// the failed rank closes its connections.
TEST(GlooFailureTest, SilentPeerGivesDeadlineExceededAndBreaksTheGroup) {
  Pair pair = MakePair(absl::Seconds(1), absl::Seconds(20));
  ASSERT_TRUE(pair.comm[0] && pair.comm[1]);
  std::vector<float> buf(1000, 1.f);
  absl::Time start = absl::Now();
  absl::Status st = pair.comm[0]->AllReduce(buf.data(), buf.size(), DType::kF32)->Wait();
  absl::Duration took = absl::Now() - start;
  EXPECT_EQ(st.code(), absl::StatusCode::kDeadlineExceeded) << st;
  EXPECT_THAT(st.message(), HasSubstr("rank 1"));
  EXPECT_GE(took, absl::Milliseconds(900));
  EXPECT_LT(took, absl::Seconds(3));

  start = absl::Now();
  absl::Status later = pair.comm[0]->Barrier()->Wait();
  EXPECT_LT(absl::Now() - start, absl::Milliseconds(500));
  EXPECT_EQ(later, st);

  start = absl::Now();
  absl::Status peer = pair.comm[1]->AllReduce(buf.data(), buf.size(), DType::kF32)->Wait();
  EXPECT_EQ(peer.code(), absl::StatusCode::kUnavailable) << peer;
  EXPECT_THAT(peer.message(), HasSubstr("rank 0"));
  EXPECT_LT(absl::Now() - start, absl::Seconds(3));
}

// Work::Wait with a short timeout reports DeadlineExceeded without disturbing the operation,
// which completes once the peer turns up.
TEST(GlooFailureTest, WorkWaitTimeoutLeavesTheOperationRunning) {
  Pair pair = MakePair(absl::Seconds(20), absl::Seconds(20));
  ASSERT_TRUE(pair.comm[0] && pair.comm[1]);
  std::vector<float> a(100, 1.f), b(100, 2.f);
  std::shared_ptr<Work> work = pair.comm[0]->AllReduce(a.data(), a.size(), DType::kF32);
  absl::Time start = absl::Now();
  absl::Status st = work->Wait(absl::Milliseconds(100));
  EXPECT_EQ(st.code(), absl::StatusCode::kDeadlineExceeded) << st;
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
  EXPECT_FALSE(work->Done());
  ASSERT_TRUE(pair.comm[1]->AllReduce(b.data(), b.size(), DType::kF32)->Wait().ok());
  ASSERT_TRUE(work->Wait(absl::Seconds(10)).ok());
  EXPECT_EQ(a[0], 3.f);
  EXPECT_EQ(b[99], 3.f);
}

// Destroying a communicator with an operation stuck on a silent peer (30 s deadline) and more
// queued returns at once; every Work ends Cancelled; the peer then fails fast.
TEST(GlooFailureTest, DestructionAbortsInsteadOfWaitingForTheDeadline) {
  Pair pair = MakePair(absl::Seconds(30), absl::Seconds(30));
  ASSERT_TRUE(pair.comm[0] && pair.comm[1]);
  std::vector<float> buf(1 << 16, 1.f);
  std::vector<std::shared_ptr<Work>> works;
  works.push_back(pair.comm[0]->AllReduce(buf.data(), buf.size(), DType::kF32));
  works.push_back(pair.comm[0]->Barrier());
  works.push_back(pair.comm[0]->Broadcast(buf.data(), buf.size(), DType::kF32, 0));
  absl::SleepFor(absl::Milliseconds(50));  // let the first one start waiting
  absl::Time start = absl::Now();
  pair.comm[0].reset();
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
  for (auto& w : works) {
    ASSERT_TRUE(w->Done());
    EXPECT_EQ(w->Wait().code(), absl::StatusCode::kCancelled) << w->Wait();
  }
  start = absl::Now();
  absl::Status peer = pair.comm[1]->Barrier()->Wait();
  EXPECT_EQ(peer.code(), absl::StatusCode::kUnavailable) << peer;
  EXPECT_LT(absl::Now() - start, absl::Seconds(3));
  start = absl::Now();
  pair.comm[1].reset();
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
}

// Ranks that disagree on the element count (a caller bug) must not corrupt memory or crash the
// process: the message sizes differ, so the slots differ, and the operation times out.
TEST(GlooFailureTest, MismatchedCountsFailInsteadOfCorrupting) {
  Pair pair = MakePair(absl::Milliseconds(800), absl::Milliseconds(800));
  ASSERT_TRUE(pair.comm[0] && pair.comm[1]);
  std::vector<float> a(10, 1.f), b(12, 1.f);
  auto w0 = pair.comm[0]->AllReduce(a.data(), a.size(), DType::kF32);
  auto w1 = pair.comm[1]->AllReduce(b.data(), b.size(), DType::kF32);
  absl::Status s0 = w0->Wait(absl::Seconds(5));
  absl::Status s1 = w1->Wait(absl::Seconds(5));
  EXPECT_THAT(s0.code(), AnyOf(absl::StatusCode::kDeadlineExceeded, absl::StatusCode::kUnavailable))
      << s0;
  EXPECT_THAT(s1.code(), AnyOf(absl::StatusCode::kDeadlineExceeded, absl::StatusCode::kUnavailable))
      << s1;
  EXPECT_EQ(b[11], 1.f);  // untouched past the smaller message
}

// An invalid operation fails with InvalidArgument and breaks the communicator (the ranks have
// diverged); its peer sees the connection close.
TEST(GlooFailureTest, InvalidOperationBreaksTheCommunicator) {
  Pair pair = MakePair(absl::Seconds(20), absl::Seconds(20));
  ASSERT_TRUE(pair.comm[0] && pair.comm[1]);
  std::vector<float> buf(8, 1.f);
  absl::Status st = pair.comm[0]->Broadcast(buf.data(), buf.size(), DType::kF32, 5)->Wait();
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
  EXPECT_EQ(pair.comm[0]->Barrier()->Wait(), st);
  absl::Time start = absl::Now();
  EXPECT_EQ(pair.comm[1]->Barrier()->Wait().code(), absl::StatusCode::kUnavailable);
  EXPECT_LT(absl::Now() - start, absl::Seconds(3));
}

TEST(GlooFailureTest, GroupOfOneNeedsNoPeersAndCountsCalls) {
  InMemoryStore store;
  auto comm = CreateGlooCommunicator(&store, UniqueGroup("solo"), 0, 1);
  ASSERT_TRUE(comm.ok()) << comm.status();
  std::vector<float> a = {1, 2, 3}, b(3);
  ASSERT_TRUE((*comm)->AllReduce(a.data(), 3, DType::kF32)->Wait().ok());
  ASSERT_TRUE((*comm)->ReduceScatter(a.data(), b.data(), 3, DType::kF32)->Wait().ok());
  EXPECT_EQ(b, a);
  ASSERT_TRUE((*comm)->Barrier()->Wait().ok());
  CommStats stats = (*comm)->stats();
  EXPECT_EQ(stats.ops[static_cast<int>(OpKind::kAllReduce)].calls, 1);
  EXPECT_EQ(stats.total_sent(), 0);
}

}  // namespace
}  // namespace accel::comm
