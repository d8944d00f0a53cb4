// Checkpoint save / load seconds through the trainer (not a test): for each strategy, N ranks
// (threads of this process, gloo over loopback) save a sharded, a full (fp32) and a 16-bit
// checkpoint and load it back with Resume; then, for full_shard, the --init-weights loading
// modes (default, sync_module_states, cpu_ram_efficient_loading, zero3_init) with the seconds
// of Trainer::Create and the host "other" memory peak of rank 0 and rank 1 (the ledger's figure).
// A save or load takes as long as its slowest rank. Consolidation of a gpt2 checkpoint saved by
// 4 ranks, with peak RSS against the largest tensor: accel_bench_consolidate.
//
//   accel_bench_checkpoint [--models small,gpt2] [--strategies no_shard,zero1,shard_grad_op,
//                          full_shard] [--ranks 2] [--scratch /tmp]
#include <algorithm>
#include <cstdio>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "engine/base/status_macros.h"
#include "engine/comm/in_memory_store.h"
#include "engine/kernels/threading.h"
#include "engine/shard/process_groups.h"
#include "engine/train/trainer.h"

namespace {

using accel::train::TrainOptions;

struct RankTimes {
  double create_s = 0, save_s = 0, load_s = 0;
  int64_t bytes = 0;       // the save's total over ranks (rank 0's event)
  int64_t other_peak = 0;  // host / other bytes during Create
};

// Runs Create (+ SaveCheckpoint + Resume when dir is set) on every rank.
absl::StatusOr<std::vector<RankTimes>> RunRanks(const TrainOptions& o, int ranks,
                                                const std::string& dir) {
  static int run = 0;
  const std::string prefix = absl::StrCat("ckptbench", run++);
  accel::comm::InMemoryStore store;
  std::vector<RankTimes> out(ranks);
  std::vector<absl::Status> statuses(ranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      statuses[r] = [&]() -> absl::Status {
        accel::kernels::SetNumThreads(1);
        accel::Env* env = accel::Env::Default();
        accel::MemoryLedger ledger;
        ACCEL_ASSIGN_OR_RETURN(auto groups, accel::shard::CreateGlooProcessGroups(
                                                &store, prefix, r, ranks, o.shard));
        int64_t start = env->NowMicros();
        ACCEL_ASSIGN_OR_RETURN(auto trainer,
                               accel::train::Trainer::Create(o, groups.view(), env, &ledger));
        out[r].create_s = (env->NowMicros() - start) * 1e-6;
        out[r].other_peak =
            ledger.Get(accel::MemoryPool::kHost, accel::MemoryCategory::kOther).peak;
        if (dir.empty()) return absl::OkStatus();
        start = env->NowMicros();
        ACCEL_ASSIGN_OR_RETURN(accel::train::CheckpointEvent e, trainer->SaveCheckpoint(dir, 1));
        out[r].save_s = (env->NowMicros() - start) * 1e-6;
        out[r].bytes = e.bytes;
        start = env->NowMicros();
        ACCEL_RETURN_IF_ERROR(trainer->Resume(dir));
        out[r].load_s = (env->NowMicros() - start) * 1e-6;
        return absl::OkStatus();
      }();
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < ranks; ++r) {
    if (!statuses[r].ok()) return accel::Annotate(statuses[r], absl::StrCat("rank ", r));
  }
  return out;
}

double Slowest(const std::vector<RankTimes>& v, double RankTimes::*field) {
  double m = 0;
  for (const RankTimes& t : v) m = std::max(m, t.*field);
  return m;
}

int Fail(const absl::Status& s) {
  std::fprintf(stderr, "error: %s\n", s.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"accel checkpoint save/load benchmark"};
  std::string models = "small", strategies = "no_shard,zero1,shard_grad_op,full_shard";
  std::string data = ACCEL_DEFAULT_DATA, scratch = "/tmp";
  int ranks = 2;
  app.add_option("--models", models, "small (4 layers, C=256, GPT-2 vocabulary) and/or presets")
      ->capture_default_str();
  app.add_option("--strategies", strategies)->capture_default_str();
  app.add_option("--ranks", ranks)->capture_default_str();
  app.add_option("--data", data)->capture_default_str();
  app.add_option("--scratch", scratch)->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  accel::Env* env = accel::Env::Default();
  const std::string root = absl::StrCat(scratch, "/accel_bench_ckpt_", ::getpid());

  for (const std::string& name : std::vector<std::string>(absl::StrSplit(models, ','))) {
    accel::model::Gpt2Config config = name == "small"
                                          ? accel::model::Gpt2Config{"small", 4, 4, 256, 50257, 1024}
                                          : *accel::model::Gpt2Preset(name);
    const std::string cfg = absl::StrCat(root, "/", name, ".json");
    if (absl::Status s = env->CreateDirs(root); !s.ok()) return Fail(s);
    if (absl::Status s = accel::WriteFileAtomic(env, cfg, accel::model::Gpt2ConfigToJson(config));
        !s.ok()) {
      return Fail(s);
    }
    TrainOptions base;
    base.model_config = cfg;
    base.data = data;
    base.batch = 1;
    base.seq = 64;
    base.steps = 0;
    std::printf("model %s, %d ranks\n%-14s %-14s %10s %8s %8s\n", name.c_str(), ranks, "strategy",
                "kind", "MB", "save s", "load s");
    std::string full_file;
    for (const std::string& s : std::vector<std::string>(absl::StrSplit(strategies, ','))) {
      auto strategy = accel::shard::ParseStrategy(s);
      if (!strategy.ok()) return Fail(strategy.status());
      for (int kind = 0; kind < 3; ++kind) {
        TrainOptions o = base;
        o.shard.strategy = *strategy;
        o.state_dict_type =
            kind == 0 ? TrainOptions::StateDictType::kSharded : TrainOptions::StateDictType::kFull;
        o.save_16bit = kind == 2;
        const std::string dir = absl::StrCat(root, "/", name, "_", s, "_", kind);
        auto times = RunRanks(o, ranks, dir);
        if (!times.ok()) return Fail(times.status());
        std::printf("%-14s %-14s %10.1f %8.2f %8.2f\n", s.c_str(),
                    kind == 0 ? "sharded" : kind == 1 ? "full" : "16bit",
                    (*times)[0].bytes / 1e6, Slowest(*times, &RankTimes::save_s),
                    Slowest(*times, &RankTimes::load_s));
        if (kind == 1) full_file = dir + "/step_0/model.safetensors";
      }
    }
    if (full_file.empty()) continue;
    std::printf("%-28s %10s %14s %14s\n", "init-weights (full_shard)", "create s",
                "rank0 other MiB", "rank1 other MiB");
    const char* modes[] = {"default", "sync_module_states", "cpu_ram_efficient", "zero3_init"};
    for (int mode = 0; mode < 4; ++mode) {
      TrainOptions o = base;
      o.shard.strategy = accel::shard::Strategy::kFullShard;
      o.init_weights = full_file;
      o.sync_module_states = mode == 1 || mode == 2;
      o.cpu_ram_efficient_loading = mode == 2;
      o.zero3_init = mode == 3;
      auto times = RunRanks(o, ranks, "");
      if (!times.ok()) return Fail(times.status());
      std::printf("%-28s %10.2f %14.1f %14.1f\n", modes[mode],
                  Slowest(*times, &RankTimes::create_s), (*times)[0].other_peak / 1048576.0,
                  ranks > 1 ? (*times)[1].other_peak / 1048576.0 : 0.0);
    }
  }
  (void)env->DeleteRecursively(root);
  return 0;
}
