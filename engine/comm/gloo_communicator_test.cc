// Collectives over real gloo TCP on 127.0.0.1, ranks as threads, against serial computations.
// Parameterised over world sizes {1,2,3,4} and element counts {0, 1, odd, large} so padding and
// empty-chunk paths all run.
#include "engine/comm/gloo_communicator.h"

#include <atomic>
#include <cmath>
#include <cstring>
#include <mutex>
#include <ostream>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "engine/base/status_macros.h"
#include "engine/comm/collective_reference.h"
#include "engine/comm/gloo_test_util.h"
#include "engine/comm/ring_algorithms.h"
#include "engine/testing/random.h"
#include "gtest/gtest.h"

namespace accel::comm {
namespace {

using testing::Bytes;
using testing::CloseToExactSum;
using testing::Load;
using testing::RandomBytes;
using testing::Round;
using testing::RunGroup;
using testing::Seed;
using testing::SerialRingSum;
using testing::Slice;
using testing::Store;

constexpr absl::Duration kTimeout = absl::Seconds(10);
constexpr DType kDTypes[] = {DType::kF32, DType::kBF16, DType::kF16};

// ---- parameterised suite ------------------------------------------------------------------

struct Shape {
  int size;
  size_t count;
};

void PrintTo(const Shape& shape, std::ostream* os) {
  *os << "size " << shape.size << ", count " << shape.count;
}

class GlooCollectiveTest : public ::testing::TestWithParam<Shape> {
 protected:
  int size() const { return GetParam().size; }
  size_t count() const { return GetParam().count; }
};

TEST_P(GlooCollectiveTest, AllGatherConcatenatesInRankOrder) {
  const int n = size();
  const size_t count = this->count();
  const absl::Status group =
      RunGroup(n, kTimeout, [&](int rank, Communicator& comm) -> absl::Status {
        for (DType dtype : kDTypes) {
          const size_t e = DTypeSize(dtype);
          Bytes expected;
          for (int r = 0; r < n; ++r) {
            Bytes part = RandomBytes(dtype, count, Seed(r, dtype));
            expected.insert(expected.end(), part.begin(), part.end());
          }
          Bytes send = RandomBytes(dtype, count, Seed(rank, dtype));
          Bytes recv(n * count * e, 0x5a);
          ACCEL_RETURN_IF_ERROR(comm.AllGather(send.data(), recv.data(), count, dtype)->Wait());
          EXPECT_EQ(recv, expected) << DTypeName(dtype) << " rank " << rank;
          // In place: this rank's part already sits at rank·count.
          Bytes inplace(n * count * e, 0x33);
          if (count > 0) std::memcpy(inplace.data() + rank * count * e, send.data(), count * e);
          ACCEL_RETURN_IF_ERROR(
              comm.AllGather(inplace.data() + rank * count * e, inplace.data(), count, dtype)
                  ->Wait());
          EXPECT_EQ(inplace, expected) << DTypeName(dtype) << " in place, rank " << rank;
        }
        return absl::OkStatus();
      });
  EXPECT_TRUE(group.ok()) << group;
}

TEST_P(GlooCollectiveTest, ReduceScatterMatchesTheSerialRingOrder) {
  const int n = size();
  const size_t count = this->count();
  const ChunkLayout layout{n * count, count};
  const absl::Status group =
      RunGroup(n, kTimeout, [&](int rank, Communicator& comm) -> absl::Status {
        for (DType dtype : kDTypes) {
          const size_t e = DTypeSize(dtype);
          std::vector<Bytes> inputs;
          for (int r = 0; r < n; ++r)
            inputs.push_back(RandomBytes(dtype, n * count, Seed(r, dtype)));
          const Bytes expected =
              Slice(SerialRingSum(dtype, inputs, layout), dtype, rank * count, count);
          Bytes recv(count * e, 0x5a);
          ACCEL_RETURN_IF_ERROR(
              comm.ReduceScatter(inputs[rank].data(), recv.data(), count, dtype)->Wait());
          EXPECT_EQ(recv, expected) << DTypeName(dtype) << " rank " << rank;
          std::vector<Bytes> mine;
          for (const Bytes& x : inputs) mine.push_back(Slice(x, dtype, rank * count, count));
          EXPECT_TRUE(CloseToExactSum(dtype, mine, recv, count)) << DTypeName(dtype);
          // In place: the result lands on this rank's own chunk of the input.
          Bytes buf = inputs[rank];
          ACCEL_RETURN_IF_ERROR(
              comm.ReduceScatter(buf.data(), buf.data() + rank * count * e, count, dtype)->Wait());
          EXPECT_EQ(Slice(buf, dtype, rank * count, count), expected)
              << DTypeName(dtype) << " in place, rank " << rank;
        }
        return absl::OkStatus();
      });
  EXPECT_TRUE(group.ok()) << group;
}

TEST_P(GlooCollectiveTest, AllReduceIsDeterministicAndIdenticalOnEveryRank) {
  const int n = size();
  const size_t count = this->count();
  std::mutex mu;
  std::vector<Bytes> results(n);
  const absl::Status group =
      RunGroup(n, kTimeout, [&](int rank, Communicator& comm) -> absl::Status {
        for (DType dtype : kDTypes) {
          std::vector<Bytes> inputs;
          for (int r = 0; r < n; ++r) inputs.push_back(RandomBytes(dtype, count, Seed(r, dtype)));
          const Bytes expected = SerialRingSum(dtype, inputs, PaddedLayout(count, n));
          Bytes buf = inputs[rank];
          ACCEL_RETURN_IF_ERROR(comm.AllReduce(buf.data(), count, dtype)->Wait());
          EXPECT_EQ(buf, expected) << DTypeName(dtype) << " rank " << rank;
          EXPECT_TRUE(CloseToExactSum(dtype, inputs, buf, count)) << DTypeName(dtype);
          // A second run over the same inputs gives the same bits.
          Bytes again = inputs[rank];
          ACCEL_RETURN_IF_ERROR(comm.AllReduce(again.data(), count, dtype)->Wait());
          EXPECT_EQ(again, buf) << DTypeName(dtype) << " rerun, rank " << rank;
          if (dtype == DType::kBF16) {
            std::lock_guard<std::mutex> lock(mu);
            results[rank] = buf;
          }
        }
        return absl::OkStatus();
      });
  EXPECT_TRUE(group.ok()) << group;
  for (int r = 1; r < n; ++r) EXPECT_EQ(results[r], results[0]) << "rank " << r;
}

// AllReduce == ReduceScatter + AllGather over a buffer zero-padded by hand to size·chunk.
TEST_P(GlooCollectiveTest, AllReduceEqualsPaddedReduceScatterThenAllGather) {
  const int n = size();
  const size_t count = this->count();
  const size_t chunk = PaddedLayout(count, n).chunk;
  const absl::Status group =
      RunGroup(n, kTimeout, [&](int rank, Communicator& comm) -> absl::Status {
        for (DType dtype : kDTypes) {
          const size_t e = DTypeSize(dtype);
          const Bytes input = RandomBytes(dtype, count, Seed(rank, dtype, 5));
          Bytes reduced = input;
          ACCEL_RETURN_IF_ERROR(comm.AllReduce(reduced.data(), count, dtype)->Wait());
          Bytes padded(n * chunk * e, 0);
          if (count > 0) std::memcpy(padded.data(), input.data(), count * e);
          Bytes own(chunk * e), gathered(n * chunk * e);
          ACCEL_RETURN_IF_ERROR(
              comm.ReduceScatter(padded.data(), own.data(), chunk, dtype)->Wait());
          ACCEL_RETURN_IF_ERROR(comm.AllGather(own.data(), gathered.data(), chunk, dtype)->Wait());
          EXPECT_EQ(Slice(gathered, dtype, 0, count), reduced)
              << DTypeName(dtype) << " rank " << rank;
        }
        return absl::OkStatus();
      });
  EXPECT_TRUE(group.ok()) << group;
}

TEST_P(GlooCollectiveTest, BroadcastFromEveryRoot) {
  const int n = size();
  const size_t count = this->count();
  const absl::Status group =
      RunGroup(n, kTimeout, [&](int rank, Communicator& comm) -> absl::Status {
        for (int root = 0; root < n; ++root) {
          for (DType dtype : kDTypes) {
            const Bytes data = RandomBytes(dtype, count, Seed(root, dtype, 7));
            Bytes buf = rank == root ? data : Bytes(data.size(), 0x11);
            ACCEL_RETURN_IF_ERROR(comm.Broadcast(buf.data(), count, dtype, root)->Wait());
            EXPECT_EQ(buf, data) << DTypeName(dtype) << " root " << root << " rank " << rank;
          }
        }
        return absl::OkStatus();
      });
  EXPECT_TRUE(group.ok()) << group;
}

// Ten operations issued back to back, waited for in reverse: the queue runs them in issue order
// and each still gets its own result.
TEST_P(GlooCollectiveTest, TenOperationsInFlight) {
  const int n = size();
  const size_t count = this->count();
  const DType dtype = DType::kF32;
  const absl::Status group =
      RunGroup(n, kTimeout, [&](int rank, Communicator& comm) -> absl::Status {
        std::vector<std::vector<Bytes>> ar_inputs(4);
        std::vector<Bytes> ar_bufs(4);
        for (int k = 0; k < 4; ++k) {
          for (int r = 0; r < n; ++r)
            ar_inputs[k].push_back(RandomBytes(dtype, count, Seed(r, dtype, 20 + k)));
          ar_bufs[k] = ar_inputs[k][rank];
        }
        std::vector<Bytes> ag_send(2), ag_recv(2, Bytes(n * count * 4));
        std::vector<std::vector<Bytes>> rs_inputs(2);
        std::vector<Bytes> rs_recv(2, Bytes(count * 4));
        for (int k = 0; k < 2; ++k) {
          ag_send[k] = RandomBytes(dtype, count, Seed(rank, dtype, 30 + k));
          for (int r = 0; r < n; ++r)
            rs_inputs[k].push_back(RandomBytes(dtype, n * count, Seed(r, dtype, 40 + k)));
        }
        const Bytes bcast_data = RandomBytes(dtype, count, Seed(0, dtype, 50));
        Bytes bcast = rank == 0 ? bcast_data : Bytes(bcast_data.size(), 0);

        std::vector<std::shared_ptr<Work>> works;
        works.push_back(comm.AllReduce(ar_bufs[0].data(), count, dtype));
        works.push_back(comm.AllGather(ag_send[0].data(), ag_recv[0].data(), count, dtype));
        works.push_back(comm.AllReduce(ar_bufs[1].data(), count, dtype));
        works.push_back(
            comm.ReduceScatter(rs_inputs[0][rank].data(), rs_recv[0].data(), count, dtype));
        works.push_back(comm.Barrier());
        works.push_back(comm.AllReduce(ar_bufs[2].data(), count, dtype));
        works.push_back(comm.Broadcast(bcast.data(), count, dtype, 0));
        works.push_back(comm.AllGather(ag_send[1].data(), ag_recv[1].data(), count, dtype));
        works.push_back(
            comm.ReduceScatter(rs_inputs[1][rank].data(), rs_recv[1].data(), count, dtype));
        works.push_back(comm.AllReduce(ar_bufs[3].data(), count, dtype));
        for (auto it = works.rbegin(); it != works.rend(); ++it)
          ACCEL_RETURN_IF_ERROR((*it)->Wait());
        for (auto& w : works) EXPECT_TRUE(w->Done());

        for (int k = 0; k < 4; ++k) {
          EXPECT_EQ(ar_bufs[k], SerialRingSum(dtype, ar_inputs[k], PaddedLayout(count, n))) << k;
        }
        for (int k = 0; k < 2; ++k) {
          Bytes expected;
          for (int r = 0; r < n; ++r) {
            Bytes part = RandomBytes(dtype, count, Seed(r, dtype, 30 + k));
            expected.insert(expected.end(), part.begin(), part.end());
          }
          EXPECT_EQ(ag_recv[k], expected) << k;
          const ChunkLayout layout{n * count, count};
          EXPECT_EQ(rs_recv[k],
                    Slice(SerialRingSum(dtype, rs_inputs[k], layout), dtype, rank * count, count))
              << k;
        }
        EXPECT_EQ(bcast, bcast_data);
        return absl::OkStatus();
      });
  EXPECT_TRUE(group.ok()) << group;
}

// Exact byte counts: ring reduce-scatter and all-gather move (N-1)/N of the full buffer per
// rank each way; the all-reduce moves both phases' chunks; broadcast delivers the buffer once
// to each non-root; the barrier sends one byte per round.
TEST_P(GlooCollectiveTest, StatsCountEveryByteOnTheWire) {
  const int n = size();
  const size_t count = this->count();
  const int64_t e = 4;
  const absl::Status group =
      RunGroup(n, kTimeout, [&](int rank, Communicator& comm) -> absl::Status {
        Bytes full(n * count * e), part(count * e), ar(count * e), bc(count * e);
        ACCEL_RETURN_IF_ERROR(
            comm.ReduceScatter(full.data(), part.data(), count, DType::kF32)->Wait());
        ACCEL_RETURN_IF_ERROR(comm.AllGather(part.data(), full.data(), count, DType::kF32)->Wait());
        ACCEL_RETURN_IF_ERROR(comm.AllReduce(ar.data(), count, DType::kF32)->Wait());
        ACCEL_RETURN_IF_ERROR(comm.AllReduce(ar.data(), count, DType::kF32)->Wait());
        ACCEL_RETURN_IF_ERROR(comm.Broadcast(bc.data(), count, DType::kF32, 0)->Wait());
        ACCEL_RETURN_IF_ERROR(comm.Barrier()->Wait());
        const CommStats stats = comm.stats();
        auto op = [&](OpKind k) { return stats.ops[static_cast<int>(k)]; };

        const int64_t buffer_bytes = n * count * e;  // S
        EXPECT_EQ(op(OpKind::kReduceScatter).calls, 1);
        EXPECT_EQ(op(OpKind::kReduceScatter).bytes_sent, buffer_bytes * (n - 1) / n);
        EXPECT_EQ(op(OpKind::kReduceScatter).bytes_received, buffer_bytes * (n - 1) / n);
        EXPECT_EQ(op(OpKind::kAllGather).calls, 1);
        EXPECT_EQ(op(OpKind::kAllGather).bytes_sent, buffer_bytes * (n - 1) / n);
        EXPECT_EQ(op(OpKind::kAllGather).bytes_received, buffer_bytes * (n - 1) / n);

        const ChunkLayout layout = PaddedLayout(count, n);
        int64_t ar_sent = 0, ar_received = 0;
        for (int c = 0; c < n; ++c) {
          const int64_t len = layout.Length(c) * e;
          if (c != rank) ar_sent += len, ar_received += len;  // RS sends all but own; AG receives
          if (c != (rank + 1) % n) ar_sent += len;            // AG sends all but rank+1's
          if (c != (rank + n - 1) % n) ar_received += len;    // RS receives all but rank-1's
        }
        if (n == 1) ar_sent = ar_received = 0;
        EXPECT_EQ(op(OpKind::kAllReduce).calls, 2);
        EXPECT_EQ(op(OpKind::kAllReduce).bytes_sent, 2 * ar_sent);
        EXPECT_EQ(op(OpKind::kAllReduce).bytes_received, 2 * ar_received);

        EXPECT_EQ(op(OpKind::kBroadcast).bytes_received, rank == 0 ? 0 : count * e);
        int rounds = 0;
        for (int d = 1; d < n; d <<= 1) ++rounds;
        EXPECT_EQ(op(OpKind::kBarrier).bytes_sent, rounds);
        EXPECT_EQ(op(OpKind::kBarrier).bytes_received, rounds);
        EXPECT_EQ(stats.total_sent(), op(OpKind::kReduceScatter).bytes_sent +
                                          op(OpKind::kAllGather).bytes_sent +
                                          op(OpKind::kAllReduce).bytes_sent +
                                          op(OpKind::kBroadcast).bytes_sent + rounds);
        return absl::OkStatus();
      });
  EXPECT_TRUE(group.ok()) << group;
}

std::vector<Shape> AllShapes() {
  std::vector<Shape> shapes;
  for (int size : {1, 2, 3, 4}) {
    for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{100003}}) {
      shapes.push_back({size, count});
    }
  }
  return shapes;
}

INSTANTIATE_TEST_SUITE_P(SizesAndCounts, GlooCollectiveTest, ::testing::ValuesIn(AllShapes()),
                         [](const ::testing::TestParamInfo<Shape>& info) {
                           return "size" + std::to_string(info.param.size) + "_count" +
                                  std::to_string(info.param.count);
                         });

// For divisible counts the all-reduce costs exactly 2·S·(N-1)/N per rank each way.
TEST(GlooStatsTest, AllReduceOfDivisibleBufferSendsTwiceTheRingShare) {
  const int n = 4;
  const size_t count = 4096;
  const int64_t bytes = count * 2;  // bf16
  const absl::Status group =
      RunGroup(n, kTimeout, [&](int rank, Communicator& comm) -> absl::Status {
        Bytes buf(bytes);
        ACCEL_RETURN_IF_ERROR(comm.AllReduce(buf.data(), count, DType::kBF16)->Wait());
        const CommStats::PerOp ar = comm.stats().ops[static_cast<int>(OpKind::kAllReduce)];
        EXPECT_EQ(ar.bytes_sent, 2 * bytes * (n - 1) / n);
        EXPECT_EQ(ar.bytes_received, 2 * bytes * (n - 1) / n);
        return absl::OkStatus();
      });
  EXPECT_TRUE(group.ok()) << group;
}

// Nobody leaves a barrier before everybody has reached it, even when they arrive far apart.
TEST(GlooBarrierTest, NobodyLeavesBeforeEverybodyArrives) {
  for (int n : {2, 3, 4}) {
    std::atomic<int> arrived[3] = {0, 0, 0};
    const absl::Status group =
        RunGroup(n, kTimeout, [&](int rank, Communicator& comm) -> absl::Status {
          for (int round = 0; round < 3; ++round) {
            absl::SleepFor(absl::Milliseconds(15 * ((rank + round) % n)));
            arrived[round].fetch_add(1);
            ACCEL_RETURN_IF_ERROR(comm.Barrier()->Wait());
            EXPECT_EQ(arrived[round].load(), n) << "size " << n << " round " << round;
          }
          return absl::OkStatus();
        });
    EXPECT_TRUE(group.ok()) << group;
  }
}

}  // namespace
}  // namespace accel::comm
