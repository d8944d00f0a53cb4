#include "engine/comm/communicator.h"

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace accel::comm {
namespace {

TEST(OpKindNameTest, EveryKindHasADistinctName) {
  EXPECT_EQ(OpKindName(OpKind::kAllGather), "all_gather");
  EXPECT_EQ(OpKindName(OpKind::kReduceScatter), "reduce_scatter");
  EXPECT_EQ(OpKindName(OpKind::kAllReduce), "all_reduce");
  EXPECT_EQ(OpKindName(OpKind::kBroadcast), "broadcast");
  EXPECT_EQ(OpKindName(OpKind::kBarrier), "barrier");
}

TEST(CommStatsTest, TotalsSumEveryKind) {
  CommStats stats;
  stats.ops[static_cast<int>(OpKind::kAllGather)].bytes_sent = 10;
  stats.ops[static_cast<int>(OpKind::kReduceScatter)].bytes_sent = 32;
  stats.ops[static_cast<int>(OpKind::kBarrier)].bytes_received = 3;
  stats.ops[static_cast<int>(OpKind::kAllReduce)].bytes_received = 4;
  stats.ops[static_cast<int>(OpKind::kAllGather)].bytes_sent_cross_node = 10;
  stats.ops[static_cast<int>(OpKind::kReduceScatter)].bytes_sent_cross_node = 16;
  EXPECT_EQ(stats.total_sent(), 42);
  EXPECT_EQ(stats.total_sent_cross_node(), 26);
  EXPECT_EQ(stats.total_received(), 7);
}

TEST(CommStatsTest, JsonParsesAndCarriesEveryCounter) {
  CommStats stats;
  auto& rs = stats.ops[static_cast<int>(OpKind::kReduceScatter)];
  rs.calls = 3;
  rs.bytes_sent = 1200;
  rs.bytes_received = 1100;
  stats.ops[static_cast<int>(OpKind::kBroadcast)].calls = 1;
  nlohmann::json j = nlohmann::json::parse(stats.ToJson(), nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(j.is_discarded()) << stats.ToJson();
  EXPECT_EQ(j["reduce_scatter"]["calls"], 3);
  EXPECT_EQ(j["reduce_scatter"]["bytes_sent"], 1200);
  EXPECT_EQ(j["reduce_scatter"]["bytes_received"], 1100);
  EXPECT_EQ(j["broadcast"]["calls"], 1);
  EXPECT_EQ(j["all_gather"]["calls"], 0);
  EXPECT_EQ(j["total_sent"], 1200);
  EXPECT_EQ(j["total_received"], 1100);
  EXPECT_EQ(j["total_sent_cross_node"], 0);
  EXPECT_EQ(j["reduce_scatter"]["bytes_sent_cross_node"], 0);
}

}  // namespace
}  // namespace accel::comm
