// Traffic by link: with GlooOptions::node_of_rank, CommStats counts apart the bytes each rank
// sends to peers on another node. Ranks are threads over loopback TCP; the placement is what
// the communicator is told, and the expected split follows from each algorithm's peers
// (docs/comm.md): a ring sends only to rank+1, the dissemination barrier to rank+2^k.
#include <vector>

#include "engine/base/status_macros.h"
#include "engine/comm/gloo_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accel::comm {
namespace {

using testing::RunGroup;

constexpr absl::Duration kTimeout = absl::Seconds(10);

struct Placement {
  const char* name;
  std::vector<int> nodes;
};

class TrafficByLinkTest : public ::testing::TestWithParam<Placement> {};

TEST_P(TrafficByLinkTest, CrossNodeBytesAreThoseSentToPeersOnOtherNodes) {
  const std::vector<int> nodes = GetParam().nodes;
  const int n = static_cast<int>(nodes.size());
  const size_t count = 1000;  // not a multiple of n = 3: ragged all-reduce chunks
  const absl::Status group = RunGroup(
      n, kTimeout,
      [&](int rank, Communicator& comm) -> absl::Status {
        std::vector<float> full(n * count), part(count), ar(count + 7);
        ACCEL_RETURN_IF_ERROR(
            comm.ReduceScatter(full.data(), part.data(), count, DType::kF32)->Wait());
        ACCEL_RETURN_IF_ERROR(comm.AllGather(part.data(), full.data(), count, DType::kF32)->Wait());
        ACCEL_RETURN_IF_ERROR(comm.AllReduce(ar.data(), ar.size(), DType::kF32)->Wait());
        ACCEL_RETURN_IF_ERROR(comm.Barrier()->Wait());
        const CommStats stats = comm.stats();
        auto op = [&](OpKind k) { return stats.ops[static_cast<int>(k)]; };

        // Rings: everything or nothing, by where rank+1 runs.
        const bool successor_remote = nodes[(rank + 1) % n] != nodes[rank];
        for (OpKind k : {OpKind::kReduceScatter, OpKind::kAllGather, OpKind::kAllReduce}) {
          EXPECT_GT(op(k).bytes_sent, 0);
          EXPECT_EQ(op(k).bytes_sent_cross_node, successor_remote ? op(k).bytes_sent : 0)
              << OpKindName(k) << " rank " << rank;
        }
        // Dissemination barrier: one byte to rank + 2^k per round.
        int64_t barrier_cross = 0;
        for (int d = 1; d < n; d <<= 1) barrier_cross += nodes[(rank + d) % n] != nodes[rank];
        EXPECT_EQ(op(OpKind::kBarrier).bytes_sent_cross_node, barrier_cross) << "rank " << rank;
        int64_t cross = 0;
        for (const CommStats::PerOp& o : stats.ops) cross += o.bytes_sent_cross_node;
        EXPECT_EQ(stats.total_sent_cross_node(), cross);
        return absl::OkStatus();
      },
      nodes);
  EXPECT_TRUE(group.ok()) << group;
}

INSTANTIATE_TEST_SUITE_P(Placements, TrafficByLinkTest,
                         ::testing::Values(Placement{"TwoNodesInBlocks", {0, 0, 1, 1}},
                                           Placement{"Alternating", {0, 1, 0, 1}},
                                           Placement{"ThreeNodesOneRankEach", {0, 1, 2}},
                                           Placement{"OneNode", {5, 5, 5, 5}}),
                         [](const ::testing::TestParamInfo<Placement>& info) {
                           return std::string(info.param.name);
                         });

TEST(TrafficByLinkTest, WithoutAPlacementNothingIsCountedAcrossNodes) {
  const absl::Status group = RunGroup(2, kTimeout, [](int, Communicator& comm) -> absl::Status {
    std::vector<float> buf(64);
    ACCEL_RETURN_IF_ERROR(comm.AllReduce(buf.data(), buf.size(), DType::kF32)->Wait());
    EXPECT_GT(comm.stats().total_sent(), 0);
    EXPECT_EQ(comm.stats().total_sent_cross_node(), 0);
    return absl::OkStatus();
  });
  EXPECT_TRUE(group.ok()) << group;
}

TEST(TrafficByLinkTest, APlacementOfTheWrongSizeIsRejected) {
  InMemoryStore store;
  GlooOptions options;
  options.node_of_rank = {0, 1, 1};
  auto comm = CreateGlooCommunicator(&store, testing::UniqueGroup("bad"), 0, 2, options);
  ASSERT_FALSE(comm.ok());
  EXPECT_EQ(comm.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(comm.status().message()), ::testing::HasSubstr("node_of_rank"));
}

}  // namespace
}  // namespace accel::comm
