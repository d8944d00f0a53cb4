#include "worker/daemon.h"

#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "accel/v1/worker.grpc.pb.h"
#include "engine/base/logging.h"
#include "engine/checkpoint/sharded_checkpoint.h"
#include "engine/base/status_macros.h"
#include "engine/kernels/threading.h"
#include "engine/shard/process_groups.h"
#include "rpc/channel.h"
#include "rpc/grpc_store.h"
#include "rpc/status.h"
#include "worker/device_session.h"
#include "worker/job_spec.h"
#include "worker/plan_options.h"
#include "worker/reporter.h"

namespace accel::worker {
namespace {

namespace v1 = accel::v1;

// Takes kCheckpointSignal for the whole process: blocks it in the calling thread (so every thread
// started later inherits the block) and waits for it on a thread of its own. The block stays
// after destruction, so a late signal stays pending instead of killing the process.
class CheckpointRequests {
 public:
  CheckpointRequests() {
    sigemptyset(&set_);
    sigaddset(&set_, kCheckpointSignal);
    pthread_sigmask(SIG_BLOCK, &set_, nullptr);
    thread_ = std::thread([this] {
      while (!stop_.load()) {
        const timespec poll = {0, 100'000'000};
        if (sigtimedwait(&set_, nullptr, &poll) == kCheckpointSignal) {
          if (!requested_.exchange(true)) {
            ACCEL_LOG(info, "checkpoint requested: stopping at the next step boundary");
          }
        }
      }
    });
  }
  ~CheckpointRequests() {
    stop_.store(true);
    thread_.join();
  }
  bool requested() const { return requested_.load(); }

 private:
  sigset_t set_;
  std::atomic<bool> requested_{false};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Whether any rank has a checkpoint request: every rank calls it after the same step, so all of
// them stop at the same step boundary. Collective over `world` (null: training alone).
absl::StatusOr<bool> AgreeOnStop(comm::Communicator* world, bool mine) {
  if (world == nullptr || world->size() == 1) return mine;
  float flag = mine ? 1.0f : 0.0f;
  ACCEL_RETURN_IF_ERROR(world->AllReduce(&flag, 1, DType::kF32)->Wait());
  return flag > 0.0f;
}

absl::StatusOr<std::string> Need(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') {
    return absl::InvalidArgumentError(absl::StrCat(
        "$", name, " is not set: daemon mode runs under acceld (use --standalone otherwise)"));
  }
  return std::string(v);
}

absl::StatusOr<int> NeedInt(const char* name) {
  ACCEL_ASSIGN_OR_RETURN(std::string v, Need(name));
  int out;
  if (!absl::SimpleAtoi(v, &out)) {
    return absl::InvalidArgumentError(absl::StrCat("$", name, " must be an integer, got ", v));
  }
  return out;
}

// Register, retrying while acceld is momentarily unreachable.
absl::StatusOr<v1::Assignment> Register(v1::WorkerService::Stub* stub, const DaemonEnv& env) {
  const absl::Time give_up = absl::Now() + absl::Seconds(30);
  while (true) {
    grpc::ClientContext ctx;
    rpc::Authorize(ctx, env.token);
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    v1::RegisterRequest req;
    req.set_job_id(env.job_id);
    req.set_attempt(env.attempt);
    req.set_rank(env.rank);
    req.set_pid(getpid());
    v1::Assignment a;
    grpc::Status s = stub->Register(&ctx, req, &a);
    if (s.ok()) return a;
    if (s.error_code() != grpc::StatusCode::UNAVAILABLE || absl::Now() > give_up) {
      return rpc::FromGrpc(s);
    }
    absl::SleepFor(absl::Milliseconds(200));
  }
}

}  // namespace

absl::StatusOr<DaemonEnv> DaemonEnvFromEnvironment() {
  DaemonEnv env;
  ACCEL_ASSIGN_OR_RETURN(env.coordinator, Need("ACCEL_COORDINATOR"));
  ACCEL_ASSIGN_OR_RETURN(env.job_id, Need("ACCEL_JOB_ID"));
  ACCEL_ASSIGN_OR_RETURN(env.attempt, NeedInt("ACCEL_ATTEMPT"));
  ACCEL_ASSIGN_OR_RETURN(env.token, Need("ACCEL_WORKER_TOKEN"));
  ACCEL_ASSIGN_OR_RETURN(env.rank, NeedInt("RANK"));
  ACCEL_ASSIGN_OR_RETURN(env.world_size, NeedInt("WORLD_SIZE"));
  if (env.world_size < 1 || env.rank < 0 || env.rank >= env.world_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("$RANK ", env.rank, " is outside $WORLD_SIZE ", env.world_size));
  }
  return env;
}

absl::StatusOr<DaemonOutcome> RunDaemonWorker() {
  ACCEL_ASSIGN_OR_RETURN(DaemonEnv env, DaemonEnvFromEnvironment());
  return RunDaemonWorker(env);
}

absl::StatusOr<DaemonOutcome> RunDaemonWorker(const DaemonEnv& env) {
  SetLogTag(absl::StrCat(env.job_id, " rank ", env.rank));
  // Before any other thread exists (gRPC's, gloo's, OpenMP's), and before Register: acceld asks
  // only gangs whose ranks have all registered.
  CheckpointRequests checkpoint_requests;
  ACCEL_ASSIGN_OR_RETURN(std::shared_ptr<grpc::Channel> channel, rpc::MakeChannel(env.coordinator));
  auto stub = v1::WorkerService::NewStub(channel);
  ACCEL_ASSIGN_OR_RETURN(v1::Assignment assignment, Register(stub.get(), env));
  if (assignment.world_size() != env.world_size) {
    return absl::FailedPreconditionError(absl::StrCat("acceld says the world has ",
                                                      assignment.world_size(), " ranks, $WORLD_SIZE ",
                                                      env.world_size));
  }
  ACCEL_ASSIGN_OR_RETURN(JobRun run, JobRunFromSpec(assignment.spec()));
  kernels::SetNumThreads(run.threads);
  ACCEL_LOG(info, "registered: attempt {}, {} ranks, rendezvous {}", env.attempt, env.world_size,
            assignment.rendezvous_prefix());
  if (env.rank == 0) {  // what the job's config resolved to (worker/plan_options.h)
    ACCEL_LOG(info, "mode: {}{}", DescribeMode(run.train),
              run.config.source.empty() ? "" : absl::StrCat(" (from ", run.config.source, ")"));
    for (const std::string& note : run.config.notes) ACCEL_LOG(warn, "config: {}", note);
  }

  Reporter reporter(stub.get(), env.token, env.rank);
  std::atomic<int64_t> steps_done{0};
  reporter.StartHeartbeats(absl::Seconds(std::max(0.1, assignment.heartbeat_interval_s())),
                           &steps_done);
  bool stopped_on_request = false;
  auto body = [&]() -> absl::Status {
    // The gang meets through acceld's KV; every attempt has its own key prefix.
    shard::OwnedProcessGroups groups;
    std::unique_ptr<comm::Store> store;
    if (env.world_size > 1) store = std::make_unique<rpc::GrpcStore>(channel, env.token);
    const bool on_gpu = run.device == "cuda";
    if (env.world_size > 1 && !on_gpu) {
      comm::GlooOptions gloo;
      gloo.timeout = run.comm_timeout;
      ACCEL_ASSIGN_OR_RETURN(groups, shard::CreateGlooProcessGroups(
                                         store.get(), assignment.rendezvous_prefix(), env.rank,
                                         env.world_size, run.train.shard, gloo));
    }
    // A restarted attempt (or a restarted acceld) continues from the latest sharded checkpoint.
    train::TrainOptions options = run.train;
    options.checkpoint_dir = run.checkpoint_dir;
    options.checkpoint_every = run.checkpoint_every;
    options.keep_last = run.keep_last;
    // A first attempt never picks up a directory some earlier job left behind.
    if (env.attempt > 1 && !run.checkpoint_dir.empty() &&
        checkpoint::LatestStepDir(Env::Default(), run.checkpoint_dir).ok()) {
      options.resume_dir = run.checkpoint_dir;
    }
    // One trainer either way: on a GPU (acceld gave this rank one by CUDA_VISIBLE_DEVICES) the
    // device session owns it and its NCCL communicators, made through the same KV prefix.
    DeviceSession device;
    std::unique_ptr<train::Trainer> cpu_trainer;
    train::Trainer* trainer = nullptr;
    if (on_gpu) {
      ACCEL_ASSIGN_OR_RETURN(device, StartDeviceSession(options, store.get(),
                                                        assignment.rendezvous_prefix(), env.rank,
                                                        env.world_size, /*device=*/0,
                                                        run.comm_timeout));
      trainer = device.trainer;
    } else {
      ACCEL_ASSIGN_OR_RETURN(cpu_trainer, train::Trainer::Create(options, groups.view()));
      trainer = cpu_trainer.get();
    }
    // Memory records carry the ledger and, on a GPU, the driver's view of it.
    auto memory_event = [&](int64_t step) {
      if (!device.driver_memory) return MemoryEvent(*trainer->ledger(), step);
      const auto [used, total] = device.driver_memory();
      return MemoryEvent(*trainer->ledger(), step, used, total);
    };
    const bool speaker = env.rank == 0;
    if (speaker) {
      ACCEL_LOG(info, "{} on {}; {} steps{}", trainer->sharded().plan().Describe(),
                trainer->device(), run.train.steps,
                trainer->step() > 0 ? absl::StrCat(", resumed at step ", trainer->step()) : "");
    }
    reporter.Send(memory_event(-1));

    int64_t last_saved = trainer->step();
    auto on_checkpoint = [&](const train::CheckpointEvent& ce) -> absl::Status {
      last_saved = ce.step;
      if (!speaker) return absl::OkStatus();
      v1::WorkerEvent e;
      v1::CheckpointEvent* c = e.mutable_checkpoint();
      c->set_step(ce.step);
      c->set_path(ce.path);
      c->set_kind(ce.kind);
      c->set_bytes(ce.bytes);
      c->set_seconds(ce.seconds);
      for (int64_t b : ce.rank_bytes) c->add_rank_bytes(b);
      reporter.Send(e);
      return absl::OkStatus();
    };

    // The stop agreement is a host value: the trainer's host-side world (staged on a GPU).
    comm::Communicator* world = env.world_size > 1 ? trainer->host_world() : nullptr;
    absl::Status trained = trainer->Train([&](const train::StepMetrics& m) -> absl::Status {
      steps_done.store(m.step + 1);
      const bool last = m.step + 1 == m.total_steps;
      if (speaker && (m.step == 0 || last || (m.step + 1) % run.log_every == 0)) {
        reporter.Send(MetricsEvent(m));
      }
      // Every rank reports its own memory on the metrics cadence (the end sends one anyway).
      if (m.step == 0 || (!last && (m.step + 1) % run.log_every == 0)) {
        reporter.Send(memory_event(m.step));
      }
      if (reporter.broken()) {
        return absl::UnavailableError("lost the event stream to acceld");
      }
      if (last) return absl::OkStatus();  // finishing is as good as a checkpoint
      ACCEL_ASSIGN_OR_RETURN(const bool stop, AgreeOnStop(world, checkpoint_requests.requested()));
      if (stop) {
        // Leaves Train() before its periodic save; the save below covers this step.
        stopped_on_request = true;
        return absl::CancelledError("checkpoint requested");
      }
      return absl::OkStatus();
    }, on_checkpoint);
    if (!trained.ok() && !stopped_on_request) return trained;
    if (stopped_on_request && run.checkpoint_dir.empty()) {
      ACCEL_LOG(warn, "stopping on request at step {} without a checkpoint (no checkpoint.dir)",
                trainer->step());
    } else if (!run.checkpoint_dir.empty() && last_saved != trainer->step()) {
      ACCEL_ASSIGN_OR_RETURN(train::CheckpointEvent final_save,
                             trainer->SaveCheckpoint(run.checkpoint_dir, run.keep_last));
      ACCEL_RETURN_IF_ERROR(on_checkpoint(final_save));
    }
    reporter.Send(memory_event(trainer->step() - 1));
    return absl::OkStatus();
  };
  absl::Status status = body();
  absl::Status closed = reporter.Finish();
  if (!status.ok()) return status;
  if (!closed.ok()) {
    return absl::Status(closed.code(),
                        absl::StrCat("acceld did not take the final events: ", closed.message()));
  }
  if (stopped_on_request) {
    ACCEL_LOG(info, "stopped on request after {} steps", steps_done.load());
    return DaemonOutcome::kCheckpointedOnRequest;
  }
  ACCEL_LOG(info, "done: {} steps", steps_done.load());
  return DaemonOutcome::kFinished;
}

}  // namespace accel::worker
