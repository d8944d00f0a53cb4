// The NCCL backend. Argument checks and the rendezvous timeout need no GPU; the collectives run
// one rank per visible GPU as threads of this process (`gpu` label: skipped without devices).
#include "engine/comm/nccl_communicator.h"

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "engine/base/status_macros.h"
#include "engine/comm/in_memory_store.h"
#include "engine/tensor/cuda/device.h"
#include "engine/testing/spawn_ranks.h"
#include "engine/tensor/dtype.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accel::comm {
namespace {

using ::testing::HasSubstr;

int GpuCount() { return static_cast<int>(::accel::cuda::ListDevices().size()); }

// A float array on the current device, filled from and read back to the host.
class DeviceFloats {
 public:
  explicit DeviceFloats(const std::vector<float>& host) : n_(host.size()) {
    if (cudaMalloc(&ptr_, std::max<size_t>(n_, 1) * sizeof(float)) != cudaSuccess) ptr_ = nullptr;
    if (ptr_ != nullptr && n_ > 0) {
      cudaMemcpy(ptr_, host.data(), n_ * sizeof(float), cudaMemcpyHostToDevice);
    }
  }
  ~DeviceFloats() { cudaFree(ptr_); }
  float* get() const { return ptr_; }
  std::vector<float> Read() const {
    std::vector<float> host(n_);
    cudaDeviceSynchronize();
    if (n_ > 0) cudaMemcpy(host.data(), ptr_, n_ * sizeof(float), cudaMemcpyDeviceToHost);
    return host;
  }

 private:
  size_t n_;
  float* ptr_ = nullptr;
};

absl::Status Expect(const std::vector<float>& got, const std::vector<float>& want,
                    const std::string& what) {
  if (got == want) return absl::OkStatus();
  for (size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
    if (got[i] != want[i]) {
      return absl::InternalError(
          absl::StrCat(what, ": element ", i, " is ", got[i], ", expected ", want[i]));
    }
  }
  return absl::InternalError(absl::StrCat(what, ": sizes ", got.size(), " vs ", want.size()));
}

TEST(NcclCommunicatorTest, RejectsBadArguments) {
  InMemoryStore store;
  EXPECT_EQ(CreateNcclCommunicator(nullptr, "g", 0, 1, 0).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CreateNcclCommunicator(&store, "g", 2, 2, 0).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CreateNcclCommunicator(&store, "", 0, 1, 0).status().code(),
            absl::StatusCode::kInvalidArgument);
  NcclOptions zero;
  zero.timeout = absl::ZeroDuration();
  EXPECT_EQ(CreateNcclCommunicator(&store, "g", 0, 1, 0, zero).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(NcclCommunicatorTest, MissingRankZeroIsDeadlineExceededNamingTheKey) {
  InMemoryStore store;
  NcclOptions options;
  options.timeout = absl::Milliseconds(200);
  absl::StatusOr<std::unique_ptr<NcclCommunicator>> comm =
      CreateNcclCommunicator(&store, "lonely", 1, 2, 0, options);
  EXPECT_EQ(comm.status().code(), absl::StatusCode::kDeadlineExceeded) << comm.status();
  EXPECT_THAT(comm.status().message(), HasSubstr("nccl_unique_id"));
  EXPECT_THAT(comm.status().message(), HasSubstr("rank 1 of 2"));
}

TEST(NcclCommunicatorTest, OneRankOnOneGpu) {
  if (GpuCount() < 1) GTEST_SKIP() << "no CUDA device";
  InMemoryStore store;
  absl::StatusOr<std::unique_ptr<NcclCommunicator>> comm =
      CreateNcclCommunicator(&store, "solo", 0, 1, 0);
  ASSERT_TRUE(comm.ok()) << comm.status();
  NcclCommunicator& c = **comm;
  EXPECT_EQ(c.rank(), 0);
  EXPECT_EQ(c.size(), 1);
  const std::vector<float> x = {1.5f, -2.0f, 3.0f, 4.25f, 5.0f};
  DeviceFloats buf(x), recv(std::vector<float>(5, 0.0f));
  ASSERT_TRUE(c.OrderAfter(nullptr).ok());
  EXPECT_TRUE(c.AllReduce(buf.get(), 5, DType::kF32)->Wait(absl::Seconds(60)).ok());
  EXPECT_TRUE(c.AllGather(buf.get(), recv.get(), 5, DType::kF32)->Wait(absl::Seconds(60)).ok());
  EXPECT_TRUE(c.Broadcast(buf.get(), 5, DType::kF32, 0)->Wait(absl::Seconds(60)).ok());
  EXPECT_TRUE(c.Barrier()->Wait(absl::Seconds(60)).ok());
  EXPECT_EQ(c.Broadcast(buf.get(), 5, DType::kF32, 1)->Wait().code(),
            absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(c.MakeStreamWait(nullptr).ok());
  EXPECT_TRUE(Expect(buf.Read(), x, "all_reduce of one").ok());
  EXPECT_TRUE(Expect(recv.Read(), x, "all_gather of one").ok());
  // A fused pair completes together.
  ASSERT_TRUE(c.BeginGroup().ok());
  EXPECT_EQ(c.BeginGroup().code(), absl::StatusCode::kFailedPrecondition);
  std::shared_ptr<Work> a = c.AllReduce(buf.get(), 2, DType::kF32);
  std::shared_ptr<Work> b = c.ReduceScatter(buf.get(), recv.get(), 5, DType::kF32);
  ASSERT_TRUE(c.EndGroup().ok());
  EXPECT_TRUE(a->Wait(absl::Seconds(60)).ok());
  EXPECT_TRUE(b->Wait(absl::Seconds(60)).ok());
  EXPECT_TRUE(Expect(recv.Read(), x, "reduce_scatter of one").ok());
  const CommStats stats = c.stats();
  EXPECT_EQ(stats.ops[static_cast<int>(OpKind::kAllReduce)].calls, 2);
  EXPECT_EQ(stats.total_sent(), 0);  // a group of one moves nothing
  EXPECT_TRUE(c.broken().ok());
}

TEST(NcclCommunicatorTest, CollectivesAcrossGpus) {
  const int n = std::min(GpuCount(), 8);
  if (n < 2) GTEST_SKIP() << "needs 2 GPUs, found " << n;
  InMemoryStore store;
  constexpr size_t kCount = 1001;  // odd: not divisible by any group size
  absl::Status s = testing::SpawnRanks(n, [&](int rank) -> absl::Status {
    ACCEL_ASSIGN_OR_RETURN(std::unique_ptr<NcclCommunicator> comm,
                           CreateNcclCommunicator(&store, "multi", rank, n, rank));
    std::vector<float> mine(kCount), sum(kCount), gathered;
    for (size_t i = 0; i < kCount; ++i) {
      mine[i] = static_cast<float>(rank * 1000 + static_cast<int>(i));  // exact in f32
      sum[i] = 0;
      for (int r = 0; r < n; ++r) sum[i] += static_cast<float>(r * 1000 + static_cast<int>(i));
    }
    for (int r = 0; r < n; ++r) {
      for (size_t i = 0; i < kCount; ++i) gathered.push_back(static_cast<float>(r * 1000 + i));
    }
    DeviceFloats reduced(mine), send(mine), all(std::vector<float>(kCount * n, 0.0f));
    ACCEL_RETURN_IF_ERROR(comm->AllReduce(reduced.get(), kCount, DType::kF32)->Wait());
    ACCEL_RETURN_IF_ERROR(Expect(reduced.Read(), sum, "all_reduce"));
    ACCEL_RETURN_IF_ERROR(comm->AllGather(send.get(), all.get(), kCount, DType::kF32)->Wait());
    ACCEL_RETURN_IF_ERROR(Expect(all.Read(), gathered, "all_gather"));
    // Reduce-scatter of the gathered array: chunk r summed over n equal copies.
    DeviceFloats chunk(std::vector<float>(kCount, 0.0f));
    ACCEL_RETURN_IF_ERROR(comm->ReduceScatter(all.get(), chunk.get(), kCount, DType::kF32)->Wait());
    std::vector<float> want(kCount);
    for (size_t i = 0; i < kCount; ++i) want[i] = n * static_cast<float>(rank * 1000 + i);
    ACCEL_RETURN_IF_ERROR(Expect(chunk.Read(), want, "reduce_scatter"));
    ACCEL_RETURN_IF_ERROR(comm->Broadcast(send.get(), kCount, DType::kF32, n - 1)->Wait());
    std::vector<float> last(kCount);
    for (size_t i = 0; i < kCount; ++i) last[i] = static_cast<float>((n - 1) * 1000 + i);
    ACCEL_RETURN_IF_ERROR(Expect(send.Read(), last, "broadcast"));
    ACCEL_RETURN_IF_ERROR(comm->Barrier()->Wait());
    if (comm->stats().total_sent() <= 0) return absl::InternalError("no bytes counted");

    // Hybrid groups: even and odd ranks, each summing rank + 1.
    ACCEL_ASSIGN_OR_RETURN(std::unique_ptr<NcclCommunicator> sub,
                           CreateNcclCommunicatorSplit(*comm, rank % 2, rank));
    DeviceFloats one(std::vector<float>{static_cast<float>(rank + 1)});
    ACCEL_RETURN_IF_ERROR(sub->AllReduce(one.get(), 1, DType::kF32)->Wait());
    float expect = 0;
    for (int r = rank % 2; r < n; r += 2) expect += static_cast<float>(r + 1);
    ACCEL_RETURN_IF_ERROR(Expect(one.Read(), {expect}, "all_reduce in the split group"));
    if (sub->size() != (n - rank % 2 + 1) / 2 || sub->rank() != rank / 2) {
      return absl::InternalError(absl::StrCat("split rank ", sub->rank(), " of ", sub->size()));
    }
    return absl::OkStatus();
  });
  EXPECT_TRUE(s.ok()) << s;
}

TEST(NcclCommunicatorTest, SilentPeerIsDeadlineExceededNotAHang) {
  if (GpuCount() < 2) GTEST_SKIP() << "needs 2 GPUs";
  InMemoryStore store;
  NcclOptions options;
  options.timeout = absl::Seconds(3);
  absl::Notification rank0_done;
  absl::Status s = testing::SpawnRanks(2, [&](int rank) -> absl::Status {
    ACCEL_ASSIGN_OR_RETURN(std::unique_ptr<NcclCommunicator> comm,
                           CreateNcclCommunicator(&store, "silent", rank, 2, rank, options));
    if (rank == 1) {  // never joins the all-reduce
      rank0_done.WaitForNotification();
      return absl::OkStatus();
    }
    DeviceFloats buf(std::vector<float>(16, 1.0f));
    absl::Status waited = comm->AllReduce(buf.get(), 16, DType::kF32)->Wait(absl::Seconds(60));
    rank0_done.Notify();
    if (waited.code() != absl::StatusCode::kDeadlineExceeded) {
      return absl::InternalError(absl::StrCat("expected DeadlineExceeded, got ", waited.ToString()));
    }
    // Broken from now on: later operations fail at once with the same error.
    if (comm->Barrier()->Wait(absl::Seconds(1)).code() != absl::StatusCode::kDeadlineExceeded) {
      return absl::InternalError("the communicator did not stay broken");
    }
    return absl::OkStatus();
  });
  EXPECT_TRUE(s.ok()) << s;
}

}  // namespace
}  // namespace accel::comm
