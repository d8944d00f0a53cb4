// StagedCommunicator over host ops and gloo (3 ranks on loopback): the same results as the
// communicator itself for every operation, completed Works, and a peer's failure passed on.
#include "engine/shard/staged_communicator.h"

#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/comm/gloo_test_util.h"
#include "gtest/gtest.h"

namespace accel::shard {
namespace {

TEST(StagedCommunicatorTest, EveryOperationMatchesTheInnerCommunicator) {
  constexpr int kRanks = 3;
  absl::Status s = comm::testing::RunGroup(
      kRanks, absl::Seconds(20), [&](int rank, comm::Communicator& inner) -> absl::Status {
        MemoryLedger ledger;
        std::unique_ptr<DeviceOps> ops = CreateHostDeviceOps(&ledger);
        std::unique_ptr<comm::Communicator> staged =
            CreateStagedCommunicator(&inner, ops.get(), absl::Seconds(20));
        if (staged->rank() != rank || staged->size() != kRanks) {
          return absl::InternalError("rank or size differ");
        }
        auto expect = [&](bool ok, const char* what) {
          return ok ? absl::OkStatus()
                    : absl::InternalError(absl::StrCat(what, " differs on rank ", rank));
        };
        const float mine[2] = {static_cast<float>(rank), 10.0f + rank};
        std::vector<float> all(2 * kRanks);
        std::shared_ptr<comm::Work> w = staged->AllGather(mine, all.data(), 2, DType::kF32);
        if (!w->Done()) return absl::InternalError("staged works complete before they return");
        ACCEL_RETURN_IF_ERROR(w->Wait(absl::ZeroDuration()));
        ACCEL_RETURN_IF_ERROR(expect(all == std::vector<float>{0, 10, 1, 11, 2, 12}, "AllGather"));

        std::vector<float> sum = {1.0f * rank, 2.0f};
        ACCEL_RETURN_IF_ERROR(staged->AllReduce(sum.data(), 2, DType::kF32)->Wait());
        ACCEL_RETURN_IF_ERROR(expect(sum == std::vector<float>{3, 6}, "AllReduce"));

        std::vector<float> parts(kRanks, 1.0f + rank);  // one element per destination rank
        float reduced = 0;
        ACCEL_RETURN_IF_ERROR(staged->ReduceScatter(parts.data(), &reduced, 1, DType::kF32)
                                  ->Wait());
        ACCEL_RETURN_IF_ERROR(expect(reduced == 6.0f, "ReduceScatter"));

        int64_t value = rank == 1 ? int64_t{1} << 40 : 0;  // bits through an f32 broadcast
        ACCEL_RETURN_IF_ERROR(staged->Broadcast(&value, 2, DType::kF32, 1)->Wait());
        ACCEL_RETURN_IF_ERROR(expect(value == int64_t{1} << 40, "Broadcast"));
        ACCEL_RETURN_IF_ERROR(staged->Barrier()->Wait());
        // The staging blocks went back to the ops' cache: nothing stays charged as in use.
        return expect(ledger.Get(MemoryPool::kDevice, MemoryCategory::kCommunication).current == 0,
                      "communication bytes after the calls");
      });
  EXPECT_TRUE(s.ok()) << s;
}

TEST(StagedCommunicatorTest, ABadRootIsTheInnerError) {
  absl::Status s = comm::testing::RunGroup(
      2, absl::Seconds(20), [&](int, comm::Communicator& inner) -> absl::Status {
        MemoryLedger ledger;
        std::unique_ptr<DeviceOps> ops = CreateHostDeviceOps(&ledger);
        std::unique_ptr<comm::Communicator> staged =
            CreateStagedCommunicator(&inner, ops.get(), absl::Seconds(20));
        float v = 1;
        absl::Status bad = staged->Broadcast(&v, 1, DType::kF32, 7)->Wait();
        return bad.ok() ? absl::InternalError("a root outside the group was accepted")
                        : absl::OkStatus();
      });
  EXPECT_TRUE(s.ok()) << s;
}

}  // namespace
}  // namespace accel::shard
