// accel-worker --standalone (standalone.h): its flags and the run; what it prints is
// terminal_sink.cc.
#include "worker/standalone.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/base/logging.h"
#include "engine/base/status_macros.h"
#include "engine/config/train_plan.h"
#include "engine/comm/file_store.h"
#include "engine/kernels/threading.h"
#include "engine/shard/shard_plan.h"
#include "job/settings_flags.h"
#include "job/plan_proto.h"
#include "worker/checkpoint_owner.h"
#include "worker/job_spec.h"
#include "worker/launch_env.h"
#include "worker/standalone_config.h"
#include "worker/terminal_sink.h"
#include "worker/rank_runner.h"
#include "worker/torchrun_store.h"

namespace accel::worker {

void AddStandaloneFlags(CLI::App& app, StandaloneFlags& f) {
  train::TrainOptions& t = f.train;
  // The flags that are job keys (--model, --batch, --lr, --log-every, ...): job/settings.h.
  job::AddSettingFlags(app, &f.spec, &t);
  // accel-worker's own default data (worker/main.cc sets it before the flags are added).
  if (!t.data.empty()) app.get_option("--data")->default_str(t.data);
  app.add_option("--schedule", f.schedule, "constant | linear | cosine")->capture_default_str();
  app.add_option("--shuffle", f.shuffle, "shuffle data windows with this seed (default: llm.c order)");
  app.add_option("--threads", f.threads, "compute threads (0 = all cores)")->capture_default_str();
  app.add_option("--metrics-out", f.metrics_out, "write one JSON line per step to this file");
  app.add_option("--save-final", f.save_final,
                 "write the final weights (HF model.safetensors; sharded with an index beside it "
                 "above 5 GB)");
  app.add_option("--save-dtype", f.save_dtype, "dtype of --save-final: f32 | bf16 | f16")
      ->capture_default_str();
  app.add_option("--output", f.output, "text | json (JSON lines on stdout)")->capture_default_str();
  // Data parallelism and sharding.
  app.add_option("--rank", f.rank, "this rank (default: $RANK, else 0)");
  app.add_option("--world-size", f.world_size, "ranks in the gang (default: $WORLD_SIZE, else 1)");
  app.add_option("--rdzv-dir", f.rdzv_dir,
                 "rendezvous directory shared by all ranks (fresh per run); without it a "
                 "world > 1 meets at $MASTER_ADDR:$MASTER_PORT (torchrun's variables)");
  app.add_option("--config", f.config,
                 "Accelerate config YAML (FSDP, DeepSpeed or DDP); flags given here still win");
  app.add_option("--deepspeed-config", f.deepspeed_config,
                 "DeepSpeed JSON (wins over the YAML's deepspeed_config_file)");
  // Which flags the user typed, so the config overrides only defaults.
  app.parse_complete_callback([&app, &f] {
    for (const CLI::Option* o : app.get_options()) {
      if (o->count() > 0) f.given.insert(o->get_name());
    }
  });
  app.add_option("--run-id", f.run_id, "names this run's keys in the rendezvous store")
      ->capture_default_str();
  app.add_option("--comm-timeout", f.comm_timeout_s, "deadline of every collective, seconds")
      ->capture_default_str();
  app.add_option("--strategy", f.strategy,
                 "no_shard | zero1 | shard_grad_op | full_shard | hybrid_shard | hybrid_shard_zero2")
      ->capture_default_str();
  app.add_option("--mixed-precision", f.mixed_precision,
                 "no | bf16 | fp16: parameters and gradient reduction in 16 bits with fp32 "
                 "masters (fp16 with dynamic loss scaling); docs/sharding.md")
      ->capture_default_str();
  app.add_option("--device", f.device,
                 "cpu | cuda: cuda trains each rank on its own GPU over NCCL (device LOCAL_RANK; docs/gpu.md)")
      ->capture_default_str();
  app.add_option("--load-dtype", f.load_dtype,
                 "fp32 | bf16: dtype the weights are loaded in; bf16 with --mixed-precision no "
                 "trains in low precision (bf16 params and optimizer state, no fp32 master)")
      ->capture_default_str();
  app.add_option("--backward-prefetch", f.backward_prefetch, "backward_pre | backward_post | none")
      ->capture_default_str();
  app.add_flag("!--no-reshard-after-forward", t.shard.reshard_after_forward,
               "full_shard: keep block parameters gathered from forward to backward");
  app.add_option("--max-inflight-gathers", t.shard.max_inflight_gathers)->capture_default_str();
  app.add_option("--param-persistence-threshold", t.shard.param_persistence_threshold,
                 "units of at most this many elements stay gathered for the step")
      ->capture_default_str();
  app.add_flag("--reduce-every-micro-step", t.shard.reduce_every_micro_step,
               "reduce gradients after every micro-step (DeepSpeed stage 2) instead of at the boundary");
  app.add_flag("--offload-optimizer", t.shard.offload_optimizer,
               "ZeRO-Offload: fp32 masters, AdamW moments and the update on the host "
               "(DeepSpeed offload_optimizer.device: cpu)");
  app.add_option("--offload-dir", t.shard.offload_dir,
                 "offload to files in this directory (NVMe; DeepSpeed nvme_path) instead of "
                 "host memory");
  app.add_flag("--offload-params", t.shard.offload_params,
               "keep the parameter shards off the compute memory (FSDP fsdp_offload_params, "
               "DeepSpeed offload_param; needs full_shard or hybrid_shard): with "
               "--offload-optimizer where its state goes, alone on the host");
  app.add_option("--offload-param-dir", t.shard.offload_param_dir,
                 "with --offload-params: the parameter shards in files in this directory "
                 "(DeepSpeed offload_param.nvme_path), apart from --offload-dir");
  app.add_option("--checkpoint-dir", t.checkpoint_dir, "save sharded checkpoints here (DIR/step_N, DIR/latest)");
  app.add_option("--checkpoint-every", t.checkpoint_every, "save every N steps (0: never)")
      ->capture_default_str();
  app.add_option("--keep-last", t.keep_last, "keep the newest K checkpoints (0: all)")
      ->capture_default_str();
  app.add_option("--resume", t.resume_dir, "continue from DIR's latest checkpoint (any world size or strategy)");
  const std::map<std::string, train::TrainOptions::StateDictType> state_dict_types = {
      {"sharded", train::TrainOptions::StateDictType::kSharded},
      {"sharded_state_dict", train::TrainOptions::StateDictType::kSharded},
      {"full", train::TrainOptions::StateDictType::kFull},
      {"full_state_dict", train::TrainOptions::StateDictType::kFull}};
  app.add_option("--state-dict-type", t.state_dict_type,
                 "checkpoint kind: sharded (rank files, exact resume) or full (rank 0 writes "
                 "model.safetensors, gathered unit by unit; sharded with an index above 5 GB)")
      ->transform(CLI::CheckedTransformer(state_dict_types, CLI::ignore_case))
      ->option_text("sharded|full");
  app.add_flag("--save-16bit", t.save_16bit,
               "checkpoints carry a bf16 (f16 when training in f16) model.safetensors; with "
               "--state-dict-type full it replaces the fp32 one");
  app.add_flag("--cpu-ram-efficient-loading", t.cpu_ram_efficient_loading,
               "only rank 0 reads --init-weights, unit by unit; the others receive each unit "
               "(implies --sync-module-states)");
  app.add_flag("--zero3-init", t.zero3_init,
               "every rank reads only its own byte ranges of --init-weights");
}


absl::Status RunStandalone(StandaloneFlags f) {
  if (f.output != "text" && f.output != "json") {
    return absl::InvalidArgumentError(absl::StrCat("--output must be text or json, got ", f.output));
  }
  ACCEL_ASSIGN_OR_RETURN(f.train.schedule.kind, optim::ParseScheduleKind(f.schedule));
  ACCEL_ASSIGN_OR_RETURN(DType save_dtype, ParseDType(f.save_dtype));
  if (f.shuffle >= 0) f.train.shuffle_seed = static_cast<uint64_t>(f.shuffle);
  if (f.spec.train().log_every() <= 0) f.spec.mutable_train()->set_log_every(1);
  // Every rank's memory and traffic ride on the records rank 0 writes: each one when a machine
  // reads them (--metrics-out, --output json), else on the progress cadence.
  f.train.rank_stats_every =
      !f.metrics_out.empty() || f.output == "json" ? 1 : f.spec.train().log_every();
  const int threads = f.threads > 0 ? f.threads : static_cast<int>(std::thread::hardware_concurrency());
  kernels::SetNumThreads(threads);
  ACCEL_ASSIGN_OR_RETURN(f.train.shard.strategy, shard::ParseStrategy(f.strategy));
  absl::StatusOr<shard::BackwardPrefetch> prefetch =
      config::ParseBackwardPrefetch(f.backward_prefetch);
  if (!prefetch.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--backward-prefetch ", prefetch.status().message()));
  }
  f.train.shard.backward_prefetch = *prefetch;
  // Where this rank sits: torchrun's, Slurm's or a Kubernetes pod's variables, else the
  // Accelerate config's multi-node keys (worker/launch_env.h); --rank / --world-size win.
  std::optional<MultiNodeKeys> config_keys;
  if (!f.config.empty()) config_keys = PeekMultiNodeKeys(f.config);
  ACCEL_ASSIGN_OR_RETURN(LaunchEnv launch, ResolveLaunchEnv(ProcessLaunchVars(), config_keys));
  const int rank = f.rank >= 0 ? f.rank : launch.rank;
  const int world = f.world_size >= 0 ? f.world_size : launch.world_size;
  if (world < 1 || rank < 0 || rank >= world) {
    return absl::InvalidArgumentError(
        absl::StrCat("rank ", rank, " is outside a world of ", world, " ranks"));
  }
  if (world > 1) SetLogTag(absl::StrCat("rank ", rank));
  if (f.mixed_precision == "bf16" || f.mixed_precision == "fp16") {
    const DType half = f.mixed_precision == "bf16" ? DType::kBF16 : DType::kF16;
    f.train.shard.param_dtype = f.train.shard.reduce_dtype = half;
  } else if (f.mixed_precision != "no") {
    return absl::InvalidArgumentError(
        absl::StrCat("--mixed-precision must be no, bf16 or fp16, got ", f.mixed_precision));
  }
  if (f.load_dtype != "fp32" && f.load_dtype != "bf16") {
    return absl::InvalidArgumentError(
        absl::StrCat("--load-dtype must be fp32 or bf16, got ", f.load_dtype));
  }
  if (f.load_dtype == "bf16" && f.mixed_precision == "no") {
    // FSDP without mixed precision trains in the dtype it loaded: bf16 throughout.
    f.train.shard.param_dtype = f.train.shard.reduce_dtype = DType::kBF16;
    f.train.shard.master_dtype = DType::kBF16;
  }
  // The one lowering: --config / --deepspeed-config replace defaults, not typed flags.
  const std::string world_source = f.world_size >= 0           ? "--world-size"
                                   : launch.source == "torchrun" ? "WORLD_SIZE"
                                   : launch.source == "slurm"    ? "SLURM_NTASKS"
                                   : launch.source == "kubernetes"
                                       ? "ACCEL_NODES x ACCEL_RANKS_PER_NODE"
                                   : launch.source == "accelerate config"
                                       ? "num_processes"
                                       : "this one process (no --world-size, WORLD_SIZE or "
                                         "SLURM_NTASKS)";
  // The launcher's machines, when the gang spans several: the lowering groups a hybrid plan by
  // node from them (config::Lower decides that rule) and prefers them to a file's num_machines.
  LauncherMachines machines;
  if (launch.num_nodes > 1 && world == launch.world_size) {
    machines = {launch.num_nodes, absl::StrCat("the nodes of ", launch.source)};
  }
  ACCEL_ASSIGN_OR_RETURN(StandaloneConfig resolved,
                         ApplyStandaloneConfig(&f, world, world_source, machines));
  if (rank == 0) PrintResolvedMode(f.train, resolved, f.output == "json");
  if (rank == 0 && world > 1 && f.output == "text" && launch.source != "none") {
    std::printf("launch: %s\n", DescribeLaunchEnv(launch).c_str());  // JSON: stdout stays records
    std::fflush(stdout);
  }
  if (f.device != "cpu" && f.device != "cuda") {
    return absl::InvalidArgumentError(
        absl::StrCat("--device must be cpu or cuda, got ", f.device));
  }

  // The gang of `world` ranks meets in the rendezvous directory, or at rank 0's store on
  // the launch environment's master address and port.
  NetworkRendezvous rdzv;  // outlives the rank: rank 0 serves until training ends
  std::unique_ptr<comm::Store> store;
  RankSpec spec;
  spec.gloo.timeout = spec.timeout = absl::Seconds(f.comm_timeout_s);
  if (world > 1) {
    if (!f.rdzv_dir.empty()) {
      ACCEL_ASSIGN_OR_RETURN(store, comm::FileStore::Open(f.rdzv_dir));
    } else if (!launch.master_addr.empty()) {
      const char* token = std::getenv("ACCEL_RDZV_TOKEN");
      const TorchrunEnv at{launch.master_addr, launch.master_port, token ? token : ""};
      ACCEL_ASSIGN_OR_RETURN(rdzv, StartTorchrunRendezvous(at, rank,
                                                           absl::Seconds(f.comm_timeout_s)));
      store = std::move(rdzv.store);
      spec.gloo.hostname = rdzv.local_address;
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "a world of ", world, " ranks needs --rdzv-dir (a directory all ranks share) or "
          "rank 0's address: MASTER_ADDR, a Slurm node list, or main_process_ip"));
    }
  }
  // Lowered once above; the rank trains the typed plan of it, built as a daemon rank's is
  // (worker/job_spec.h JobRunFromPlan): the model rides in the plan, nothing is read again.
  ACCEL_ASSIGN_OR_RETURN(
      accel::v1::TrainingPlan plan,
      job::TrainingPlanFromLowered(
          {.options = f.train, .world_size = world, .source = resolved.source,
           .notes = resolved.notes, .model = resolved.model},
          {.world_size = world, .nodes = std::max(1, launch.num_nodes),
           .ranks_per_node = std::max(1, launch.local_world_size), .device = f.device,
           .launcher = "standalone", .threads = threads, .log_every = f.spec.train().log_every(),
           .comm_timeout_s = f.comm_timeout_s}));
  ACCEL_ASSIGN_OR_RETURN(JobRun run, JobRunFromPlan(plan));
  spec.options = std::move(run.train);
  // A fresh run owns the checkpoint directory it saves into; one resuming its own directory in
  // place continues the standalone run that owns it (checkpoint_owner.h).
  ACCEL_ASSIGN_OR_RETURN(spec.options.checkpoint_owner,
                         StandaloneCheckpointOwner(Env::Default(), f.train.checkpoint_dir,
                                                   f.train.resume_dir, RandomRunId()));
  spec.rank = rank;
  spec.world = world;
  spec.local_ranks = launch.local_world_size;
  spec.device = f.device;
  spec.store = store.get();
  spec.prefix = f.run_id;
  std::unique_ptr<RankSink> sink = MakeTerminalSink(f, rank, threads, save_dtype);
  return RunRank(spec, *sink).status();
}

}  // namespace accel::worker
