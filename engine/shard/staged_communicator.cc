#include "engine/shard/staged_communicator.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"

namespace accel::shard {
namespace {

class CompletedWork final : public comm::Work {
 public:
  explicit CompletedWork(absl::Status status) : status_(std::move(status)) {}
  absl::Status Wait(absl::Duration) override { return status_; }
  bool Done() const override { return true; }

 private:
  absl::Status status_;
};

class StagedCommunicator final : public comm::Communicator {
 public:
  StagedCommunicator(comm::Communicator* inner, DeviceOps* ops, absl::Duration timeout)
      : inner_(inner), ops_(ops), timeout_(timeout) {}

  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  comm::CommStats stats() const override { return inner_->stats(); }

  std::shared_ptr<comm::Work> AllGather(const void* send, void* recv, size_t count,
                                        DType dtype) override {
    const size_t esize = DTypeSize(dtype), n = static_cast<size_t>(size());
    return Done(Run(send, count * esize, recv, n * count * esize, n * count * esize,
                    [&](void* in, void* out) {
                      return inner_->AllGather(in, out, count, dtype);
                    }));
  }
  std::shared_ptr<comm::Work> ReduceScatter(const void* send, void* recv, size_t count,
                                            DType dtype) override {
    const size_t esize = DTypeSize(dtype), n = static_cast<size_t>(size());
    return Done(Run(send, n * count * esize, recv, count * esize, count * esize,
                    [&](void* in, void* out) {
                      return inner_->ReduceScatter(in, out, count, dtype);
                    }));
  }
  std::shared_ptr<comm::Work> AllReduce(void* buf, size_t count, DType dtype) override {
    const size_t bytes = count * DTypeSize(dtype);
    return Done(Run(buf, bytes, buf, 0, bytes, [&](void* in, void*) {
      return inner_->AllReduce(in, count, dtype);
    }));
  }
  std::shared_ptr<comm::Work> Broadcast(void* buf, size_t count, DType dtype,
                                        int root) override {
    const size_t bytes = count * DTypeSize(dtype);
    return Done(Run(buf, bytes, buf, 0, bytes, [&](void* in, void*) {
      return inner_->Broadcast(in, count, dtype, root);
    }));
  }
  std::shared_ptr<comm::Work> Barrier() override {
    std::shared_ptr<comm::Work> w = inner_->Barrier();
    return Done(w->Wait(timeout_));
  }

 private:
  static std::shared_ptr<comm::Work> Done(absl::Status s) {
    return std::make_shared<CompletedWork>(std::move(s));
  }

  // Stages `in_bytes` of host `send` into a block; `out_bytes` > 0 gives the operation a
  // separate output block (else it works in place); `result_bytes` of the output come back to
  // host `recv`.
  template <typename Issue>
  absl::Status Run(const void* send, size_t in_bytes, void* recv, size_t out_bytes,
                   size_t result_bytes, Issue issue) {
    ACCEL_ASSIGN_OR_RETURN(DeviceBlock in,
                           ops_->Acquire(in_bytes, MemoryCategory::kCommunication, false));
    DeviceBlock out;
    if (out_bytes > 0) {
      ACCEL_ASSIGN_OR_RETURN(out, ops_->Acquire(out_bytes, MemoryCategory::kCommunication, false));
    }
    ACCEL_RETURN_IF_ERROR(ops_->FromHost(in.data(), send, in_bytes));
    ACCEL_RETURN_IF_ERROR(ops_->BeforeCollective(*inner_));
    std::shared_ptr<comm::Work> w = issue(in.data(), out.data());
    ACCEL_RETURN_IF_ERROR(ops_->AfterCollective(*inner_, w, timeout_));
    ACCEL_RETURN_IF_ERROR(ops_->ToHost(recv, out_bytes > 0 ? out.data() : in.data(),
                                       result_bytes));
    ACCEL_RETURN_IF_ERROR(w->Wait(timeout_));
    ops_->Recycle(std::move(in));
    ops_->Recycle(std::move(out));
    return absl::OkStatus();
  }

  comm::Communicator* inner_;
  DeviceOps* ops_;
  absl::Duration timeout_;
};

}  // namespace

std::unique_ptr<comm::Communicator> CreateStagedCommunicator(comm::Communicator* inner,
                                                             DeviceOps* ops,
                                                             absl::Duration timeout) {
  return std::make_unique<StagedCommunicator>(inner, ops, timeout);
}

}  // namespace accel::shard
