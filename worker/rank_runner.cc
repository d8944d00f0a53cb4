#include "worker/rank_runner.h"

#include <memory>

#include "engine/base/status_macros.h"
#include "engine/shard/process_groups.h"
#include "engine/shard/ring_traffic.h"
#include "worker/device_session.h"
#include "worker/memory_check.h"

namespace accel::worker {
namespace {

// Whether any rank wants to stop: every rank calls it after the same step, so all of them stop
// at the same step boundary. Collective over `world` (null: training alone).
absl::StatusOr<bool> AgreeOnStop(comm::Communicator* world, bool mine) {
  if (world == nullptr || world->size() == 1) return mine;
  float flag = mine ? 1.0f : 0.0f;
  ACCEL_RETURN_IF_ERROR(world->AllReduce(&flag, 1, DType::kF32)->Wait());
  return flag > 0.0f;
}

}  // namespace

absl::StatusOr<RankOutcome> RunRank(const RankSpec& spec, RankSink& sink) {
  const bool on_gpu = spec.device == "cuda";
  // Before the first allocation: refuse a plan this machine cannot hold.
  ACCEL_RETURN_IF_ERROR(CheckMemoryPlan({.options = &spec.options,
                                         .world = spec.world,
                                         .rank = spec.rank,
                                         .local_ranks = spec.local_ranks,
                                         .on_gpu = on_gpu},
                                        ReadProcessMemory()));
  // One trainer either way: on a GPU the device session owns it and its NCCL communicators,
  // made through the same store; on the CPU gloo groups for the plan.
  shard::OwnedProcessGroups groups;
  DeviceSession device;
  std::unique_ptr<train::Trainer> cpu_trainer;
  RankContext context;
  if (on_gpu) {
    ACCEL_ASSIGN_OR_RETURN(device, StartDeviceSession(spec.options, spec.store, spec.prefix,
                                                      spec.rank, spec.world, spec.cuda_device,
                                                      spec.timeout));
    context.trainer = device.trainer;
    context.driver_memory = device.driver_memory;
  } else {
    if (spec.world > 1) {
      // Ranks are placed in blocks of local_ranks per node (torchrun, Slurm's block
      // distribution): the communicators count what they send across nodes.
      comm::GlooOptions gloo = spec.gloo;
      if (gloo.node_of_rank.empty() && spec.local_ranks < spec.world) {
        gloo.node_of_rank = shard::BlockPlacement(spec.world, spec.local_ranks);
      }
      ACCEL_ASSIGN_OR_RETURN(groups, shard::CreateGlooProcessGroups(
                                         spec.store, spec.prefix, spec.rank, spec.world,
                                         spec.options.shard, gloo));
    }
    ACCEL_ASSIGN_OR_RETURN(cpu_trainer, train::Trainer::Create(spec.options, groups.view()));
    context.trainer = cpu_trainer.get();
  }
  train::Trainer& trainer = *context.trainer;
  ACCEL_RETURN_IF_ERROR(sink.Started(context));

  RankOutcome outcome;
  outcome.steps_done = trainer.step();
  int64_t last_saved = trainer.step();
  auto on_checkpoint = [&](const train::CheckpointEvent& e) -> absl::Status {
    last_saved = e.step;
    return sink.Checkpoint(e);
  };
  // The stop agreement is a host value: the trainer's host-side world (staged on a GPU).
  comm::Communicator* world = spec.world > 1 ? trainer.host_world() : nullptr;
  absl::Status trained = trainer.Train([&](const train::StepMetrics& m) -> absl::Status {
    outcome.steps_done = m.step + 1;
    ACCEL_RETURN_IF_ERROR(sink.Step(m));
    if (m.step + 1 == m.total_steps || !sink.CanRequestStop()) return absl::OkStatus();
    ACCEL_ASSIGN_OR_RETURN(const bool stop, AgreeOnStop(world, sink.StopRequested()));
    if (!stop) return absl::OkStatus();
    // Leaves Train() before its periodic save; the save below covers this step.
    outcome.stopped_on_request = true;
    return absl::CancelledError("stop requested");
  }, on_checkpoint, [&](const train::EvalMetrics& e) { return sink.Eval(e); },
     [&](const train::SampleResult& s) { return sink.Sample(s); });
  if (!trained.ok() && !outcome.stopped_on_request) return trained;
  const std::string& dir = spec.options.checkpoint_dir;
  if (!dir.empty() && last_saved != trainer.step()) {
    ACCEL_ASSIGN_OR_RETURN(train::CheckpointEvent final_save,
                           trainer.SaveCheckpoint(dir, spec.options.keep_last));
    ACCEL_RETURN_IF_ERROR(on_checkpoint(final_save));
  }
  ACCEL_RETURN_IF_ERROR(sink.Finished(context));
  return outcome;
}

}  // namespace accel::worker
