// The rows of the job settings table (settings.h) for checkpoint, resources, sharding and the
// top-level keys, in docs/job.md's order (model, data, train: settings_table.cc), and the table.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/config/batch_bounds.h"
#include "engine/config/train_plan.h"
#include "engine/optim/lr_schedule.h"
#include "engine/shard/shard_plan.h"
#include "job/job_placement.h"
#include "job/settings_rows.h"

// The rows name only the fields they set (designated initializers); the rest keep their
// defaults, which is the point, not an omission.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace accel::job {

namespace {

using accel::v1::JobSpec;
using O = config::TrainOptions;

std::vector<absl::string_view> Names(const std::vector<std::string>& keys) {
  return {keys.begin(), keys.end()};
}

}  // namespace

void AddRunRows(std::vector<Setting>& rows) {
  rows.insert(
      rows.end(),
      {
          {.key = "checkpoint.dir",
           .type = SettingType::kPath,
           .help =
               "where the sharded checkpoints go (`step_<n>/`, `latest`); absent = no checkpoints "
               "(and acceld's SIGTERM stops the job without one). A directory belongs to one job: "
               "another job's directory is refused at submit (*Restarts and checkpoints*)"},
          {.key = "checkpoint.every_n_steps",
           .type = SettingType::kInt,
           .help = "a checkpoint every N steps; 0 = only at the end (when `dir` is set)",
           .default_value = "0",
           .min = 0},
          {.key = "checkpoint.keep_last",
           .type = SettingType::kInt,
           .help = "keep the newest N `step-<n>` directories; 0 = keep all",
           .default_value = "0",
           .min = 0},
          {.key = "checkpoint.keep_best",
           .type = SettingType::kInt,
           .help = "besides `keep_last`, keep the N steps with the lowest eval loss (a step saved "
                   "without an evaluation of its weights never counts); needs `eval.data`. 0 = "
                   "none (*Evaluation*)",
           .default_value = "0",
           .min = 0,
           .flag = "--keep-best",
           .flag_help = "also keep the K checkpoints with the lowest eval loss (needs --eval-data)",
           .apply = [](const JobSpec& s, O& o) { o.keep_best = s.checkpoint().keep_best(); }},
          {.key = "eval.data",
           .type = SettingType::kSection,
           .help = "`eval: {data: val.bin}` is short for `{data: {path: val.bin}}`",
           .short_key = "path",
           .doc_default = "—"},
          {.key = "eval.data.path",
           .type = SettingType::kPath,
           .help = "the held-out tokens, in `data.path`'s forms (a token shard, or text read as "
                   "bytes; a prepared dataset's `validation.bin`); submit checks it is readable",
           .flag = "--eval-data",
           .flag_help = "held-out tokens (token shard or text) to evaluate on",
           .flag_shows_default = false,
           .apply = [](const JobSpec& s, O& o) { o.eval.data = s.eval().data().path(); },
           .doc_default = "absent = no evaluation"},
          {.key = "eval.every_n_steps",
           .type = SettingType::kInt,
           .help = "evaluate after every N-th step (before that step's checkpoint); 0 = not "
                   "between steps",
           .default_value = "0",
           .min = 0,
           .flag = "--eval-every",
           .flag_help = "evaluate every N steps (0: only at the end)",
           .apply = [](const JobSpec& s, O& o) { o.eval.every_n_steps = s.eval().every_n_steps(); }},
          {.key = "eval.max_batches",
           .type = SettingType::kInt,
           .help = "evaluate on the file's first M (`micro_batch`, `seq_len`) batches; 0 = every "
                   "whole batch of it",
           .default_value = "0",
           .min = 0,
           .flag = "--eval-max-batches",
           .flag_help = "evaluate on the first M batches (0: all)",
           .apply = [](const JobSpec& s, O& o) { o.eval.max_batches = s.eval().max_batches(); }},
          {.key = "eval.at_start",
           .type = SettingType::kBool,
           .help = "evaluate the starting weights, as step 0 (not again on a restart)",
           .default_value = "false",
           .flag = "--eval-at-start",
           .flag_help = "also evaluate the starting weights (step 0)",
           .apply = [](const JobSpec& s, O& o) { o.eval.at_start = s.eval().at_start(); }},
          {.key = "eval.at_end",
           .type = SettingType::kBool,
           .help = "evaluate after the last step",
           // Unset means true (the apply): a spec without an eval section stays as it was.
           .apply =
               [](const JobSpec& s, O& o) {
                 o.eval.at_end = !s.eval().has_at_end() || s.eval().at_end();
               },
           .doc_default = "true"},
          {.key = "resources.num_processes",
           .type = SettingType::kInt,
           .help =
               "ranks = slots the job needs; never placed partially. Wins over the config's count "
               "(with a warning)",
           .min = 1,
           .doc_default = "the config's `num_processes`, else 1"},
          {.key = "resources.device",
           .type = SettingType::kEnum,
           .help =
               "`cpu` (one rank per CPU slot) or `cuda` (one rank per GPU, `CUDA_VISIBLE_DEVICES` "
               "set per rank; refused at submit, naming `resources.device`, when acceld has no "
               "GPUs "
               "— docs/rpc.md \"GPUs\"). A cuda job trains with the device trainer: the same "
               "strategies, precision, checkpoints and restarts as on the CPU, its ranks' NCCL "
               "communicators made through acceld's KV store (docs/gpu.md)",
           .default_value = "cpu",
           .names = {"cpu", "cuda"}},
          // More compute threads than any machine has cores only thrash (and past a few thousand
          // the OpenMP runtime fails to start them): at most 1024.
          {.key = "resources.threads_per_process",
           .type = SettingType::kInt,
           .help = "compute threads per rank (also `OMP_NUM_THREADS`)",
           .default_value = "1",
           .min = 1,
           .max = 1024},
          {.key = "resources.launcher",
           .type = SettingType::kText,
           .help =
               "who starts the ranks: `local` (fork/exec on acceld's host, from its slot pools), "
               "`slurm` (one `sbatch` per attempt), `kubernetes` (an Indexed Job per attempt); "
               "refused at submit, naming the key, when acceld has no such launcher. acceld stores "
               "the one it used (docs/deploy.md)",
           .doc_default = "acceld's `--launcher` (`local`)"},
          {.key = "resources.nodes",
           .type = SettingType::kInt,
           .help =
               "machines the ranks span (slurm, kubernetes): `num_processes / nodes` ranks on "
               "each, "
               "numbered in blocks (rank = node × K + local rank). Must divide `num_processes`; "
               "`local` takes 1. Wins over the config's `num_machines` (with a note); a hybrid "
               "strategy with no `hybrid_group_size` shards within a node",
           .doc_default = "1"},
          {.key = "resources.slurm",
           .type = SettingType::kSettings,
           .help =
               "sbatch's options for this job; printable ASCII without spaces or quotes (they go "
               "into the batch script). `time` in Slurm's forms: `minutes`, `minutes:seconds`, "
               "`hours:minutes:seconds`, `days-hours`, `days-hours:minutes`, "
               "`days-hours:minutes:seconds` (digits; minutes and seconds after the first field "
               "0-59, hours after a day count 0-23; 0 is no limit), or `UNLIMITED` / `INFINITE`; "
               "at "
               "most 365 days",
           .names = Names(SlurmSettingKeys()),
           .doc_key = "`resources.slurm.{partition,account,time,constraint}`",
           .doc_default = "acceld's `--slurm-*`"},
          {.key = "resources.kubernetes",
           .type = SettingType::kSettings,
           .help =
               "the worker pods' settings for this job; checked at submit with acceld's own (a job "
               "with no image anywhere is refused). `cpu` and `memory` are Kubernetes quantities "
               "(`2`, `500m`, `1.5`; `512Mi`, `4Gi`, `1e9`): positive, `cpu` at least `1m` and in "
               "whole millicores, `memory` at least one byte (`100m` is a tenth of a byte)",
           .names = Names(KubernetesSettingKeys()),
           .doc_key = "`resources.kubernetes.{namespace,image,pvc,mount,service_account,image_pull_"
                      "policy,cpu,memory,master_port}`",
           .doc_default = "acceld's `--kube-*`"},
          {.key = "sharding.strategy",
           .type = SettingType::kText,
           .help = "`no_shard`, `zero1`, `shard_grad_op`, `full_shard`, `hybrid_shard`, "
                   "`hybrid_shard_zero2` (FSDP's upper-case names work too)",
           .default_value = "no_shard",
           .apply_checked = [](const JobSpec& s, O& o) -> absl::Status {
             const std::string& name = s.sharding().strategy();
             ACCEL_ASSIGN_OR_RETURN(o.shard.strategy,
                                    Keyed("sharding.strategy",
                                          shard::ParseStrategy(name.empty() ? "no_shard" : name)));
             return absl::OkStatus();
           }},
          {.key = "sharding.hybrid_group_size",
           .type = SettingType::kInt,
           .help = "hybrid only: ranks per shard group; must divide `num_processes` (0 with "
                   "`resources.nodes` > 1: the ranks of one node)",
           .default_value = "0",
           .flag = "--hybrid-group-size",
           .flag_help = "ranks per shard group (hybrid)",
           .flag_shows_default = false,
           .apply = [](const JobSpec& s,
                       O& o) { o.shard.hybrid_group_size = s.sharding().hybrid_group_size(); }},
          {.key = "sharding.forward_prefetch",
           .type = SettingType::kBool,
           .help = "gather unit i+1 before unit i's forward",
           .default_value = "false",
           .flag = "--forward-prefetch",
           .flag_help = "gather unit i+1 before unit i's forward",
           .apply = [](const JobSpec& s,
                       O& o) { o.shard.forward_prefetch = s.sharding().forward_prefetch(); }},
          {.key = "sharding.backward_prefetch",
           .type = SettingType::kText,
           .help = "`backward_pre`, `backward_post` or `none`",
           .default_value = "backward_pre",
           .apply_checked = [](const JobSpec& s, O& o) -> absl::Status {
             ACCEL_ASSIGN_OR_RETURN(
                 o.shard.backward_prefetch,
                 Keyed("sharding.backward_prefetch",
                       config::ParseBackwardPrefetch(s.sharding().backward_prefetch())));
             return absl::OkStatus();
           }},
          {.key = "sharding.reshard_after_forward",
           .type = SettingType::kBool,
           .help = "full_shard: free gathered block parameters after forward",
           .apply =
               [](const JobSpec& s, O& o) {
                 if (s.sharding().has_reshard_after_forward())
                   o.shard.reshard_after_forward = s.sharding().reshard_after_forward();
               },
           .doc_default = "true"},
          {.key = "sharding.sync_module_states",
           .type = SettingType::kBool,
           .help = "rank 0 initialises (or loads) and broadcasts the weights",
           .default_value = "false",
           .flag = "--sync-module-states",
           .flag_help = "rank 0 initialises or loads the weights and broadcasts them",
           .apply = [](const JobSpec& s,
                       O& o) { o.sync_module_states = s.sharding().sync_module_states(); }},
          {.key = "accelerate_config",
           .type = SettingType::kPath,
           .help = "an Accelerate YAML; `submit --config F` overrides it. Its text travels with "
                   "the job "
                   "(and the DeepSpeed JSON it names, as `deepspeed_config_text`). When given, it "
                   "**replaces the `sharding` section**: see \"The Accelerate config\" below.",
           .field = "accelerate_config_path"},
          {.key = "deepspeed_config",
           .type = SettingType::kPath,
           .help =
               "a DeepSpeed JSON (with an Accelerate config whose `distributed_type` is "
               "`DEEPSPEED`); `submit --deepspeed-config F` overrides it, and it overrides the "
               "`deepspeed_config_file` the Accelerate config names (which, when neither is given, "
               "accelctl reads — beside the YAML first — so its text travels too). Carried as "
               "`deepspeed_config_text`.",
           .field = "deepspeed_config_path"},
          {.key = "max_restarts",
           .type = SettingType::kInt,
           .help =
               "job-wide restarts after a rank fails (exits non-zero, is killed, or is silent past "
               "the heartbeat deadline); the whole gang restarts as a new attempt",
           .default_value = "0",
           .min = 0},
          {.key = "priority",
           .type = SettingType::kInt,
           .help = "higher runs first; FIFO among equal priorities",
           .default_value = "0"},
          {.key = "comm_timeout_s",
           .type = SettingType::kReal,
           .help = "deadline of the rendezvous and of every collective",
           .default_value = "120",
           .min = 0.001,
           .range_error = "must be at least 0.001 (seconds), got {got}"},
          {.key = "heartbeat_timeout_s",
           .type = SettingType::kReal,
           .help =
               "a rank silent this long counts as failed (acceld `--heartbeat-timeout` when 0); 0 "
               "or "
               "at least 4: ranks report every 2 s, and a shorter deadline fails a healthy rank on "
               "one late report",
           .default_value = "60"},
          {.key = "stop_grace_s",
           .type = SettingType::kReal,
           .help = "SIGTERM → SIGKILL grace when a gang is stopped (acceld `--stop-grace` when 0)",
           .default_value = "10",
           .min = 0,
           .range_error = "must be >= 0"},
      });
}

std::span<const Setting> JobSettings() {
  static const auto* table = [] {
    auto* rows = new std::vector<Setting>;
    AddModelDataTrainRows(*rows);
    AddSampleRows(*rows);
    AddRunRows(*rows);
    return rows;
  }();
  return *table;
}

const Setting* FindSetting(absl::string_view key) {
  for (const Setting& s : JobSettings()) {
    if (s.key == key) return &s;
  }
  return nullptr;
}

}  // namespace accel::job
