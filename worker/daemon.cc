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
#include "rpc/channel.h"
#include "rpc/grpc_store.h"
#include "rpc/status.h"
#include "worker/checkpoint_owner.h"
#include "worker/job_spec.h"
#include "worker/launch_env.h"
#include "worker/local_address.h"
#include "engine/config/mode.h"
#include "worker/rank_runner.h"
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

// acceld: rank 0 reports metrics on the log cadence, every rank its memory (after setup, on the
// cadence, at the end); checkpoints come from rank 0; a SIGUSR1 on any rank stops the gang at
// the next step boundary.
class DaemonSink final : public RankSink {
 public:
  DaemonSink(Reporter& reporter, const CheckpointRequests& requests, int rank, int64_t log_every,
             std::atomic<int64_t>& steps_done)
      : reporter_(reporter), requests_(requests), speaker_(rank == 0), log_every_(log_every),
        steps_done_(steps_done) {}

  absl::Status Started(const RankContext& rank) override {
    context_ = rank;
    const train::Trainer& t = *rank.trainer;
    if (speaker_) {
      ACCEL_LOG(info, "{} on {}; {} steps{}", t.sharded().plan().Describe(), t.device(),
                t.options().steps,
                t.step() > 0 ? absl::StrCat(", resumed at step ", t.step()) : "");
      if (!t.matmuls().empty()) ACCEL_LOG(info, "matmuls: {}", t.matmuls());
    }
    reporter_.Send(Memory(-1));
    return absl::OkStatus();
  }

  absl::Status Step(const train::StepMetrics& m) override {
    steps_done_.store(m.step + 1);
    const bool last = m.step + 1 == m.total_steps;
    const bool on_cadence = (m.step + 1) % log_every_ == 0;
    if (speaker_ && (m.step == 0 || last || on_cadence)) reporter_.Send(MetricsEvent(m));
    // Every rank reports its own memory on the metrics cadence (the end sends one anyway).
    if (m.step == 0 || (!last && on_cadence)) reporter_.Send(Memory(m.step));
    if (reporter_.broken()) return absl::UnavailableError("lost the event stream to acceld");
    return absl::OkStatus();
  }

  absl::Status Checkpoint(const train::CheckpointEvent& ce) override {
    if (!speaker_) return absl::OkStatus();
    v1::WorkerEvent e;
    v1::CheckpointEvent* c = e.mutable_checkpoint();
    c->set_step(ce.step);
    c->set_path(ce.path);
    c->set_kind(ce.kind);
    c->set_bytes(ce.bytes);
    c->set_seconds(ce.seconds);
    for (int64_t b : ce.rank_bytes) c->add_rank_bytes(b);
    if (ce.eval_loss.has_value()) c->set_eval_loss(*ce.eval_loss);
    reporter_.Send(e);
    return absl::OkStatus();
  }

  absl::Status Eval(const train::EvalMetrics& m) override {
    if (!speaker_) return absl::OkStatus();
    v1::WorkerEvent e;
    v1::EvalEvent* v = e.mutable_eval();
    v->set_step(m.step);
    v->set_eval_loss(m.loss);
    v->set_eval_perplexity(m.perplexity);
    v->set_eval_tokens(m.tokens);
    v->set_eval_batches(m.batches);
    v->set_seconds(m.seconds);
    v->set_tokens_per_s(m.tokens_per_s);
    reporter_.Send(e);
    return absl::OkStatus();
  }

  // Rank 0 alone samples (train/sampling.h), so it alone calls this.
  absl::Status Sample(const train::SampleResult& s) override {
    v1::WorkerEvent e;
    v1::SampleEvent* v = e.mutable_sample();
    v->set_step(s.step);
    v->set_prompt(s.prompt);
    v->set_text(s.text);
    for (int32_t id : s.ids) v->add_ids(id);
    for (int32_t id : s.prompt_ids) v->add_prompt_ids(id);
    v->set_stop_reason(s.stop_reason);
    v->set_seconds(s.seconds);
    v->set_tokens_per_second(s.tokens_per_s);
    reporter_.Send(e);
    return absl::OkStatus();
  }

  bool CanRequestStop() const override { return true; }
  bool StopRequested() override { return requests_.requested(); }

  absl::Status Finished(const RankContext& rank) override {
    reporter_.Send(Memory(rank.trainer->step() - 1));
    return absl::OkStatus();
  }

 private:
  // Memory records carry the ledger and, on a GPU, the driver's view of it.
  v1::WorkerEvent Memory(int64_t step) const {
    if (!context_.driver_memory) return MemoryEvent(*context_.trainer->ledger(), step);
    const auto [used, total] = context_.driver_memory();
    return MemoryEvent(*context_.trainer->ledger(), step, used, total);
  }

  Reporter& reporter_;
  const CheckpointRequests& requests_;
  const bool speaker_;
  const int64_t log_every_;
  std::atomic<int64_t>& steps_done_;
  RankContext context_;
};

}  // namespace

absl::StatusOr<DaemonEnv> DaemonEnvFromEnvironment() {
  return DaemonEnvFromVars(ProcessLaunchVars());
}

absl::StatusOr<DaemonEnv> DaemonEnvFromVars(const LaunchVars& vars) {
  auto need = [&vars](const char* name) -> absl::StatusOr<std::string> {
    auto it = vars.find(name);
    if (it == vars.end() || it->second.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "$", name, " is not set: daemon mode runs under acceld (use --standalone otherwise)"));
    }
    return it->second;
  };
  DaemonEnv env;
  ACCEL_ASSIGN_OR_RETURN(env.coordinator, need("ACCEL_COORDINATOR"));
  ACCEL_ASSIGN_OR_RETURN(env.job_id, need("ACCEL_JOB_ID"));
  ACCEL_ASSIGN_OR_RETURN(std::string attempt, need("ACCEL_ATTEMPT"));
  if (!absl::SimpleAtoi(attempt, &env.attempt)) {
    return absl::InvalidArgumentError(absl::StrCat("$ACCEL_ATTEMPT must be an integer, got ", attempt));
  }
  ACCEL_ASSIGN_OR_RETURN(env.token, need("ACCEL_WORKER_TOKEN"));
  if (auto ca = vars.find("ACCEL_TLS_CA"); ca != vars.end()) env.tls_ca = ca->second;
  if (auto id = vars.find("ACCEL_STATE_ID"); id != vars.end()) env.state_id = id->second;
  // acceld's local launcher sets torchrun's variables; under its Slurm launcher srun sets
  // Slurm's, under Kubernetes the pod has its completion index (worker/launch_env.h).
  ACCEL_ASSIGN_OR_RETURN(LaunchEnv launch, ResolveLaunchEnv(vars));
  if (launch.source == "none") {
    return absl::InvalidArgumentError(
        "$RANK is not set (nor SLURM_PROCID or JOB_COMPLETION_INDEX): daemon mode runs under "
        "acceld (use --standalone otherwise)");
  }
  env.rank = launch.rank;
  env.world_size = launch.world_size;
  env.local_world_size = launch.local_world_size;
  env.launch_source = launch.source;
  return env;
}

namespace {

// The address this rank's gloo device listens on: loopback when acceld is reached over
// loopback or a unix socket (every rank is on its machine), else this host's address on the
// route to acceld, which the ranks on other hosts can reach.
absl::StatusOr<std::string> GlooListenAddress(const std::string& coordinator) {
  const auto [host, port] = SplitTarget(coordinator);
  if (IsLoopbackHost(host)) return std::string("127.0.0.1");
  return LocalAddressToward(host, port > 0 ? port : 1, "ACCEL_COORDINATOR");
}

}  // namespace

absl::StatusOr<DaemonOutcome> RunDaemonWorker() {
  ACCEL_ASSIGN_OR_RETURN(DaemonEnv env, DaemonEnvFromEnvironment());
  return RunDaemonWorker(env);
}

absl::StatusOr<DaemonOutcome> RunDaemonWorker(const DaemonEnv& env) {
  SetLogTag(absl::StrCat(env.job_id, " rank ", env.rank));
  // Before any other thread exists (gRPC's, gloo's, OpenMP's), and before Register: acceld asks
  // only gangs whose ranks have all registered.
  CheckpointRequests checkpoint_requests;
  ACCEL_ASSIGN_OR_RETURN(std::shared_ptr<grpc::Channel> channel, rpc::MakeChannel(env.coordinator, env.tls_ca));
  auto stub = v1::WorkerService::NewStub(channel);
  ACCEL_ASSIGN_OR_RETURN(v1::Assignment assignment, Register(stub.get(), env));
  if (assignment.world_size() != env.world_size) {
    return absl::FailedPreconditionError(absl::StrCat("acceld says the world has ",
                                                      assignment.world_size(), " ranks, $WORLD_SIZE ",
                                                      env.world_size));
  }
  // acceld lowered the job once at submit: this rank trains its typed plan, lowering nothing.
  ACCEL_ASSIGN_OR_RETURN(JobRun run, JobRunFromAssignment(assignment));
  kernels::SetNumThreads(run.threads);
  ACCEL_LOG(info, "registered: attempt {}, {} ranks, rendezvous {}", env.attempt, env.world_size,
            assignment.rendezvous_prefix());
  if (run.world_size != env.world_size) {
    return absl::FailedPreconditionError(absl::StrCat("the job's plan has ", run.world_size,
                                                      " ranks, $WORLD_SIZE ", env.world_size));
  }
  if (env.rank == 0) {  // what the job's config lowered to (engine/config/lower.h)
    ACCEL_LOG(info, "mode: {}{}", config::DescribeMode(run.train),
              run.config.source.empty() ? "" : absl::StrCat(" (from ", run.config.source, ")"));
    for (const std::string& note : run.config.notes) ACCEL_LOG(warn, "config: {}", note);
  }

  Reporter reporter(stub.get(), env.token, env.rank);
  std::atomic<int64_t> steps_done{0};
  reporter.StartHeartbeats(absl::Seconds(std::max(0.1, assignment.heartbeat_interval_s())),
                           &steps_done);
  // The gang meets through acceld's KV; every attempt has its own key prefix. On a GPU acceld
  // gave this rank one device by CUDA_VISIBLE_DEVICES.
  std::unique_ptr<comm::Store> store;
  if (env.world_size > 1) store = std::make_unique<rpc::GrpcStore>(channel, env.token);
  RankSpec spec;
  spec.options = run.train;
  spec.options.checkpoint_dir = run.checkpoint_dir;
  spec.options.checkpoint_every = run.checkpoint_every;
  spec.options.keep_last = run.keep_last;
  // Every attempt of the job, under this acceld or the next, is the directory's one owner.
  spec.options.checkpoint_owner = DaemonCheckpointOwner(env.job_id, env.state_id);
  // A restarted attempt (or a restarted acceld) continues from the latest sharded checkpoint;
  // a first attempt never picks up a directory some earlier job left behind.
  if (env.attempt > 1 && !run.checkpoint_dir.empty() &&
      checkpoint::LatestStepDir(Env::Default(), run.checkpoint_dir).ok()) {
    spec.options.resume_dir = run.checkpoint_dir;
  }
  spec.rank = env.rank;
  spec.world = env.world_size;
  spec.local_ranks = env.local_world_size;  // this gang's ranks on this machine
  spec.device = run.device;
  spec.cuda_device = 0;
  spec.store = store.get();
  spec.prefix = assignment.rendezvous_prefix();
  spec.gloo.timeout = spec.timeout = run.comm_timeout;
  ACCEL_ASSIGN_OR_RETURN(spec.gloo.hostname, GlooListenAddress(env.coordinator));
  DaemonSink sink(reporter, checkpoint_requests, env.rank, run.log_every, steps_done);
  absl::StatusOr<RankOutcome> ran = RunRank(spec, sink);
  const bool stopped_on_request = ran.ok() && ran->stopped_on_request;
  if (stopped_on_request && run.checkpoint_dir.empty()) {
    ACCEL_LOG(warn, "stopped on request at step {} without a checkpoint (no checkpoint.dir)",
              steps_done.load());
  }
  absl::Status status = ran.status();
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
