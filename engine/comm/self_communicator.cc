#include "engine/comm/self_communicator.h"

#include <cstring>

namespace accel::comm {
namespace {

class DoneWork final : public Work {
 public:
  absl::Status Wait(absl::Duration) override { return absl::OkStatus(); }
  bool Done() const override { return true; }
};

class SelfCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::shared_ptr<Work> AllGather(const void* send, void* recv, size_t count,
                                  DType dtype) override {
    Count(OpKind::kAllGather);
    if (send != recv && count > 0) std::memmove(recv, send, count * DTypeSize(dtype));
    return done_;
  }
  std::shared_ptr<Work> ReduceScatter(const void* send, void* recv, size_t count,
                                      DType dtype) override {
    Count(OpKind::kReduceScatter);
    if (send != recv && count > 0) std::memmove(recv, send, count * DTypeSize(dtype));
    return done_;
  }
  std::shared_ptr<Work> AllReduce(void*, size_t, DType) override {
    Count(OpKind::kAllReduce);
    return done_;
  }
  std::shared_ptr<Work> Broadcast(void*, size_t, DType, int) override {
    Count(OpKind::kBroadcast);
    return done_;
  }
  std::shared_ptr<Work> Barrier() override {
    Count(OpKind::kBarrier);
    return done_;
  }
  CommStats stats() const override { return stats_; }

 private:
  void Count(OpKind kind) { ++stats_.ops[static_cast<int>(kind)].calls; }
  std::shared_ptr<Work> done_ = std::make_shared<DoneWork>();
  CommStats stats_;
};

}  // namespace

std::unique_ptr<Communicator> CreateSelfCommunicator() {
  return std::make_unique<SelfCommunicator>();
}

}  // namespace accel::comm
