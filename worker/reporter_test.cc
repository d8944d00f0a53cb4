// The daemon's memory event (the ledger's pools beside what the kernel says about the process)
// and metrics event (the ranks' traffic, split by link).
#include "worker/reporter.h"

#include "engine/base/process_memory.h"
#include "gtest/gtest.h"

namespace accel::worker {
namespace {

TEST(ReporterTest, MemoryEventCarriesThePeakResidentSetAndTheCgroup) {
  MemoryLedger ledger;
  ledger.Charge(MemoryPool::kDevice, MemoryCategory::kParams, 1000);
  const v1::WorkerEvent e = MemoryEvent(ledger, 3, 0, 0);
  ASSERT_TRUE(e.has_memory());
  EXPECT_EQ(e.memory().step(), 3);
  EXPECT_EQ(e.memory().device_peak(), 1000);
  // The ledger rides as typed pools: every pool, every category, the totals.
  ASSERT_EQ(e.memory().pools_size(), kNumMemoryPools);
  const v1::MemoryPoolStats& compute = e.memory().pools(0);
  EXPECT_EQ(compute.pool(), v1::MEMORY_POOL_COMPUTE);
  ASSERT_EQ(compute.categories_size(), kNumMemoryCategories);
  EXPECT_EQ(compute.categories(0).category(), v1::MEMORY_CATEGORY_PARAMS);
  EXPECT_EQ(compute.categories(0).current(), 1000);
  EXPECT_EQ(compute.total_peak(), 1000);
  EXPECT_EQ(e.memory().pools(2).pool(), v1::MEMORY_POOL_NVME);
  EXPECT_GT(e.memory().process_peak_rss(), 0);
  // Inside a memory cgroup with a limit (as under acceld's systemd units or a container) its
  // numbers ride along; outside one they are 0.
  const CgroupMemory cgroup = ReadCgroupMemory();
  EXPECT_EQ(e.memory().cgroup_limit(), cgroup.limit >= 0 ? cgroup.limit : 0);
  if (cgroup.limit >= 0) EXPECT_GT(e.memory().cgroup_usage(), 0);
}

TEST(ReporterTest, MetricsEventSumsTheRanksTrafficAndKeepsEachRanksSplit) {
  train::StepMetrics s;
  s.ranks.resize(2);
  s.ranks[0].bytes_sent = 100;
  s.ranks[1].bytes_sent = 300;
  s.ranks[1].bytes_sent_cross_node = 300;
  s.ranks[0].bytes_received = 250;
  s.ranks[1].bytes_received = 150;
  s.loss_scale = 1024;
  const v1::WorkerEvent e = MetricsEvent(s);
  ASSERT_TRUE(e.has_metrics());
  EXPECT_EQ(e.metrics().bytes_sent(), 400);
  EXPECT_EQ(e.metrics().bytes_sent_cross_node(), 300);
  ASSERT_EQ(e.metrics().rank_bytes_sent_cross_node_size(), 2);
  EXPECT_EQ(e.metrics().rank_bytes_sent_cross_node(0), 0);
  EXPECT_EQ(e.metrics().rank_bytes_sent(1), 300);
  EXPECT_EQ(e.metrics().bytes_received(), 400);
  ASSERT_EQ(e.metrics().rank_bytes_received_size(), 2);
  EXPECT_EQ(e.metrics().rank_bytes_received(0), 250);
  EXPECT_EQ(e.metrics().loss_scale(), 1024);
  // A step without statistics reports no traffic rather than a made-up zero split per rank.
  EXPECT_EQ(MetricsEvent(train::StepMetrics{}).metrics().rank_bytes_sent_size(), 0);
}

}  // namespace
}  // namespace accel::worker
