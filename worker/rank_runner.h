// One rank of a job, the same in both worker modes: the gang's communicators (gloo over the
// rendezvous store, or NCCL through a device session), the Trainer, the training loop, the
// stop agreement and the final checkpoint. Only where the events go differs — the terminal
// (`--standalone`, worker/standalone.cc) or acceld (daemon mode, worker/daemon.cc) — and that is
// a RankSink.
//
// The loop, for every rank in the same order (collectives inside must match):
//   the memory plan's check (memory_check.h): a plan that cannot fit ends here, before anything
//          is allocated or any peer is contacted
//   create groups and Trainer (resuming from options.resume_dir) -> sink.Started
//   Train: after each step sink.Step; unless it was the last, the ranks agree whether any
//          sink wants to stop (one-float all-reduce; only when the sink can ask) and, if so,
//          leave Train at this step boundary
//   a checkpoint of the final step when options.checkpoint_dir is set and it is not saved yet
//   -> sink.Finished
// Not thread-safe; one per process.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "engine/comm/gloo_communicator.h"
#include "engine/comm/store.h"
#include "engine/train/trainer.h"

namespace accel::worker {

struct RankSpec {
  train::TrainOptions options;  // lowered (engine/config/lower.h)
  int rank = 0;
  int world = 1;
  std::string device = "cpu";  // cpu | cuda
  int cuda_device = -1;        // cuda: -1 = LOCAL_RANK or the only visible one
  // Ranks of this gang on this machine (LOCAL_WORLD_SIZE), for the memory plan's check.
  int local_ranks = 1;
  comm::Store* store = nullptr;  // the gang's rendezvous (world > 1); not owned
  std::string prefix;            // this gang's keys in the store
  comm::GlooOptions gloo;        // cpu: timeout and the address peers reach this rank at
  absl::Duration timeout = absl::Seconds(120);
};

// The running rank, as its sink sees it.
struct RankContext {
  train::Trainer* trainer = nullptr;
  // The driver's view of this rank's GPU (bytes used by every process, capacity); null on a
  // CPU.
  std::function<std::pair<int64_t, int64_t>()> driver_memory;
};

// Where a rank's events go. Every rank has one; each decides what its rank reports.
class RankSink {
 public:
  virtual ~RankSink() = default;
  // The trainer is built (and resumed).
  virtual absl::Status Started(const RankContext& rank) = 0;
  virtual absl::Status Step(const train::StepMetrics& m) = 0;
  virtual absl::Status Checkpoint(const train::CheckpointEvent& e) = 0;
  // One evaluation (the same on every rank): options.eval.
  virtual absl::Status Eval(const train::EvalMetrics& /*e*/) { return absl::OkStatus(); }
  // One sample of the weights (options.sample), on rank 0 only.
  virtual absl::Status Sample(const train::SampleResult& /*s*/) { return absl::OkStatus(); }
  // Whether this sink can ask the gang to stop early (the daemon's checkpoint on request). The
  // same on every rank of a gang.
  virtual bool CanRequestStop() const { return false; }
  // This rank's wish to stop at the next step boundary (agreed across ranks).
  virtual bool StopRequested() { return false; }
  // After the final checkpoint, on every rank (collectives allowed, e.g. saving weights).
  virtual absl::Status Finished(const RankContext& rank) = 0;
};

struct RankOutcome {
  bool stopped_on_request = false;
  int64_t steps_done = 0;
};

[[nodiscard]] absl::StatusOr<RankOutcome> RunRank(const RankSpec& spec, RankSink& sink);

}  // namespace accel::worker
