#include "server/core/event_log.h"

#include <thread>

#include "engine/testing/fake_clock.h"
#include "gtest/gtest.h"
#include "server/core/test_util.h"

namespace accel::server {
namespace {

Event Log(const std::string& job, int i) {
  Event e;
  e.job_id = job;
  e.kind = EventKind::kLog;
  e.body_json = "{\"line\":\"" + std::to_string(i) + "\"}";
  return e;
}

class EventLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = FreshTestDir() + "/state.db";
    store_ = *StateStore::Open(path_);
  }
  std::string path_;
  testing::FakeClock clock_{1000};
  std::unique_ptr<StateStore> store_;
};

TEST_F(EventLogTest, SequenceNumbersArePerJobConsecutiveAndSurviveReopen) {
  {
    EventLog log(store_.get(), &clock_);
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(log.Append(Log("a", i)).ok());
    auto e = log.Append(Log("b", 0));
    ASSERT_TRUE(e.ok());
    EXPECT_EQ(e->seq, 1);
    EXPECT_EQ(e->time_us, 1000);
  }
  store_.reset();
  store_ = *StateStore::Open(path_);
  EventLog log(store_.get(), &clock_);
  auto e = log.Append(Log("a", 3));
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->seq, 4);
  auto all = log.Read("a", 0, 100);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ((*all)[i].seq, i + 1);
}

TEST_F(EventLogTest, SubscriberReplaysThenFollows) {
  EventLog log(store_.get(), &clock_);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(log.Append(Log("a", i)).ok());
  auto sub = log.Subscribe("a", 2);
  ASSERT_TRUE(sub.ok());
  auto first = (*sub)->Next(absl::ZeroDuration());
  ASSERT_TRUE(first.ok());
  ASSERT_EQ(first->size(), 3u);
  EXPECT_EQ(first->front().seq, 3);
  auto none = (*sub)->Next(absl::Milliseconds(10));
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  ASSERT_TRUE(log.Append(Log("b", 0)).ok());  // another job: not delivered
  ASSERT_TRUE(log.Append(Log("a", 5)).ok());
  auto live = (*sub)->Next(absl::Seconds(1));
  ASSERT_TRUE(live.ok());
  ASSERT_EQ(live->size(), 1u);
  EXPECT_EQ(live->front().seq, 6);
  EXPECT_EQ((*sub)->fallbacks(), 0);  // the live event came from the queue
}

TEST_F(EventLogTest, SlowSubscriberFallsBackToSqliteAndMissesNothing) {
  EventLog log(store_.get(), &clock_, /*queue_capacity=*/4);
  auto sub = log.Subscribe("a", 0);
  ASSERT_TRUE(sub.ok());
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(log.Append(Log("a", i)).ok());
    EXPECT_LE((*sub)->queued(), 4u);  // memory stays bounded while it does not read
  }
  EXPECT_GT((*sub)->fallbacks(), 0);
  // The 4 it held and the 96 after them were dropped from its queue, to be read back.
  EXPECT_EQ(log.dropped_events(), 100);
  std::vector<int64_t> seqs;
  while (seqs.size() < 100) {
    auto batch = (*sub)->Next(absl::Seconds(1), 7);
    ASSERT_TRUE(batch.ok());
    ASSERT_FALSE(batch->empty());
    for (const Event& e : *batch) seqs.push_back(e.seq);
  }
  for (int i = 0; i < 100; ++i) ASSERT_EQ(seqs[i], i + 1);
}

TEST_F(EventLogTest, TheObserverSeesEachStoredBatchInOrderAndAReaderDropsNothing) {
  EventLog log(store_.get(), &clock_, /*queue_capacity=*/4);
  std::vector<int64_t> observed;
  log.SetObserver([&](const std::vector<Event>& batch) {
    for (const Event& e : batch) observed.push_back(e.seq);
  });
  auto sub = log.Subscribe("a", 0);
  ASSERT_TRUE(sub.ok());
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(log.Append(Log("a", i)).ok());
    auto got = (*sub)->Next(absl::Seconds(1));
    ASSERT_TRUE(got.ok());
    ASSERT_EQ(got->size(), 1u);
  }
  EXPECT_EQ(observed, (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));
  EXPECT_EQ(log.dropped_events(), 0);
}

TEST_F(EventLogTest, ConcurrentProducerAndSlowConsumersSeeEveryEventOnce) {
  EventLog log(store_.get(), &clock_, /*queue_capacity=*/8);
  constexpr int kEvents = 500;
  std::vector<std::unique_ptr<Subscription>> subs;
  for (int w = 0; w < 4; ++w) subs.push_back(*log.Subscribe("a", 0));
  std::thread producer([&] {
    for (int i = 0; i < kEvents; ++i) ASSERT_TRUE(log.Append(Log("a", i)).ok());
  });
  std::vector<std::thread> consumers;
  std::vector<std::vector<int64_t>> got(subs.size());
  for (size_t w = 0; w < subs.size(); ++w) {
    consumers.emplace_back([&, w] {
      while (got[w].size() < kEvents) {
        auto batch = subs[w]->Next(absl::Seconds(5), 3 + w);
        if (!batch.ok() || batch->empty()) return;
        for (const Event& e : *batch) got[w].push_back(e.seq);
        if (w % 2 == 1) std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
    });
  }
  producer.join();
  for (auto& t : consumers) t.join();
  for (size_t w = 0; w < subs.size(); ++w) {
    ASSERT_EQ(got[w].size(), static_cast<size_t>(kEvents)) << "watcher " << w;
    for (int i = 0; i < kEvents; ++i) ASSERT_EQ(got[w][i], i + 1) << "watcher " << w;
  }
  subs.clear();
  EXPECT_EQ(log.subscribers(), 0u);
}

TEST_F(EventLogTest, InterruptWakesAWaitingReader) {
  EventLog log(store_.get(), &clock_);
  auto sub = log.Subscribe("a", 0);
  ASSERT_TRUE(sub.ok());
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    (*sub)->Interrupt();
  });
  const absl::Time start = absl::Now();
  auto batch = (*sub)->Next(absl::Seconds(30));
  t.join();
  ASSERT_TRUE(batch.ok());
  EXPECT_TRUE(batch->empty());
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
}

}  // namespace
}  // namespace accel::server
